package ipvs

import "fmt"

// Kernel is what the Reconciler needs of the kernel; *Client is one, and
// tests use a table in memory.
type Kernel interface {
	Services() ([]Service, error)
	Destinations(ServiceKey) ([]Destination, error)
	Apply([]Op) error
}

// Reconciler keeps the kernel's table equal to a wanted one with the
// fewest operations, touching only the services it owns: those it has
// been asked for at any time since it started. It keeps its own copy of
// what the kernel holds, so a change costs only its own operations, and
// reads the kernel again on its first Sync, after a failure, and after
// Invalidate (which a caller does now and then to repair what someone
// changed behind its back, e.g. with ipvsadm).
//
// A Reconciler started on a kernel that already holds the wanted table
// (directord restarted, or taking over from keepalived) adopts it as it
// is: no service is flushed or re-created, so established connections are
// not disturbed.
type Reconciler struct {
	k     Kernel
	have  Table // the kernel's services that we want or own
	owned map[ServiceKey]bool
	fresh bool // have is the kernel's table as far as we know
}

// NewReconciler returns a Reconciler over k. It logs nothing: its
// caller logs the errors it returns, where it decides what to do.
func NewReconciler(k Kernel) *Reconciler {
	return &Reconciler{k: k, owned: map[ServiceKey]bool{}}
}

// Result says what a Sync did.
type Result struct {
	Read bool // the kernel's table was read first
	Ops  []Op // the operations sent, in order
}

// Invalidate makes the next Sync read the kernel's table first.
func (r *Reconciler) Invalidate() { r.fresh = false }

// Owned tells whether a service is one this reconciler manages.
func (r *Reconciler) Owned(k ServiceKey) bool { return r.owned[k] }

// Sync makes the kernel hold want. On error the kernel may hold part of
// the change; the next Sync reads it again and finishes the job.
func (r *Reconciler) Sync(want Table) (Result, error) {
	for k := range want {
		r.owned[k] = true
	}
	return r.sync(func() []Op { return Diff(want, r.have, r.Owned) })
}

// SyncServices is Sync for the services keys alone: each is made as want
// has it, or deleted if want lacks it and it is owned. Its cost is that of
// those services, whatever the size of the table: a health check's verdict
// changes one pool, not the whole table. Its first call (or the first
// after a failure or Invalidate) reads the kernel's whole table.
func (r *Reconciler) SyncServices(want Table, keys []ServiceKey) (Result, error) {
	w := make(Table, len(keys))
	for _, k := range keys {
		if vs, ok := want[k]; ok {
			w[k] = vs
			r.owned[k] = true
		}
	}
	return r.sync(func() []Op {
		h := make(Table, len(keys))
		for _, k := range keys {
			if vs, ok := r.have[k]; ok {
				h[k] = vs
			}
		}
		return Diff(w, h, r.Owned)
	})
}

// EmptyServices takes every destination out of the services it owns and
// leaves the services: what keepalived's stop does to a virtual server
// before its notifications, which come before the service goes
// (ipwrapper.c clear_service_vs). A service it owns that the kernel does
// not hold is not made.
func (r *Reconciler) EmptyServices() (Result, error) {
	return r.sync(func() []Op {
		want := make(Table, len(r.have))
		for _, vs := range r.have {
			want.Add(vs.Service)
		}
		return Diff(want, r.have, r.Owned)
	})
}

func (r *Reconciler) sync(diff func() []Op) (Result, error) {
	var res Result
	if !r.fresh {
		have, err := r.read()
		if err != nil {
			return res, err
		}
		have.compact()
		r.have, r.fresh, res.Read = have, true, true
	}
	res.Ops = diff()
	if len(res.Ops) == 0 {
		return res, nil
	}
	err := r.k.Apply(res.Ops)
	if err != nil {
		// The caller logs the error, where it decides what to do about
		// it; the next Sync reads the kernel's table again.
		r.fresh = false
		return res, err
	}
	r.have.PatchAll(res.Ops)
	if len(res.Ops) >= compactOps {
		r.have.compact()
	}
	for i := range res.Ops {
		if res.Ops[i].Kind == DelService {
			// Gone from the configuration and from the kernel: a service
			// of that key made later by someone else is theirs.
			delete(r.owned, res.Ops[i].Service.ServiceKey)
		}
	}
	return res, nil
}

// compactOps is the number of operations from which a sync moves its
// copy of the kernel's table into arrays of its own afterwards
// (Table.compact): after the start's first sync of 1,000 x 20 in the
// guest that took the daemon's heap spans in use from 10.8 to 10.3 MB,
// for 6.7 MB live. Copying 20,000 destinations costs far less than
// sending a thousand operations to the kernel.
const compactOps = 1000

// read reads the kernel's services we want or own, with their
// destinations; others' services are left unread.
func (r *Reconciler) read() (Table, error) {
	services, err := r.k.Services()
	if err != nil {
		return nil, err
	}
	t := Table{}
	for _, s := range services {
		if !r.owned[s.ServiceKey] {
			continue
		}
		vs := t.Add(s)
		ds, err := r.k.Destinations(s.ServiceKey)
		if err != nil {
			return nil, fmt.Errorf("read the kernel's table: %w", err)
		}
		for i := range ds {
			ds[i].Counters = nil // what the diff never reads, not kept (see Destination)
		}
		vs.AddDests(ds)
	}
	return t, nil
}

// Digest is the Digest of services keys as the kernel holds them, from
// the reconciler's copy of the kernel's table: the table it read back at
// its last read (the start, every resync, after a failure) and the
// operations the kernel acknowledged since. It is "" while that copy is
// not known to be true (before the first Sync, or after a failure until
// the next).
func (r *Reconciler) Digest(keys []ServiceKey) string {
	if !r.fresh {
		return ""
	}
	return Digest(r.have, keys)
}
