package ipvs

import (
	"cmp"
	"net/netip"
	"slices"
)

// DestKey identifies a destination within its service.
type DestKey struct {
	Addr netip.Addr
	Port uint16
}

// Key is the destination's key.
func (d *Destination) Key() DestKey { return DestKey{d.Addr, d.Port} }

// VirtualService is a service with its destinations.
type VirtualService struct {
	Service
	Dests map[DestKey]Destination
}

// Table is a whole IPVS table, or the part of one that matters: what the
// configuration and the health checks want, or what the kernel holds.
type Table map[ServiceKey]*VirtualService

// Add puts a service in the table, replacing one of the same key, and
// returns it for its destinations to be added.
func (t Table) Add(s Service) *VirtualService {
	vs := &VirtualService{Service: s, Dests: map[DestKey]Destination{}}
	t[s.ServiceKey] = vs
	return vs
}

// AddDest puts a destination in the service, replacing one of the same
// address and port.
func (vs *VirtualService) AddDest(d Destination) { vs.Dests[d.Key()] = d }

// Keys are the table's service keys in a stable order (family, protocol,
// address, port, mark), for output and for deterministic operations.
func (t Table) Keys() []ServiceKey {
	keys := make([]ServiceKey, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, CompareKeys)
	return keys
}

// CompareKeys orders service keys.
func CompareKeys(a, b ServiceKey) int {
	return cmp.Or(
		cmp.Compare(a.FWMark, b.FWMark),
		cmp.Compare(a.Family, b.Family),
		cmp.Compare(a.Protocol, b.Protocol),
		a.Addr.Compare(b.Addr),
		cmp.Compare(a.Port, b.Port),
	)
}

// SortedDests are a service's destinations by address and port.
func (vs *VirtualService) SortedDests() []Destination {
	ds := make([]Destination, 0, len(vs.Dests))
	for _, d := range vs.Dests {
		ds = append(ds, d)
	}
	slices.SortFunc(ds, func(a, b Destination) int {
		return cmp.Or(a.Addr.Compare(b.Addr), cmp.Compare(a.Port, b.Port))
	})
	return ds
}

// sameService tells whether the kernel's service already has what the
// wanted one asks for; counters, and the kernel's own flags, do not count.
func sameService(want, have *Service) bool {
	return want.Scheduler == have.Scheduler &&
		want.Flags&userFlags == have.Flags&userFlags &&
		want.Timeout == have.Timeout &&
		fullMask(want.Family, want.Netmask) == fullMask(have.Family, have.Netmask) &&
		want.PersistenceEngine == have.PersistenceEngine
}

func fullMask(f Family, bits int) int {
	if bits != 0 {
		return bits
	}
	if f == IPv6 {
		return 128
	}
	return 32
}

// sameDest tells whether the kernel's destination has the wanted settings.
// Local is taken for NAT, as kernels of old reported a NAT destination on a
// local address; Linux 6.1 reports it as NAT (internal/ipvstest's
// transcript).
func sameDest(want, have *Destination) bool {
	fwd := want.Forward == have.Forward || (want.Forward == Masquerade && have.Forward == Local)
	tun := want.Forward != Tunnel || (want.TunnelType == have.TunnelType &&
		want.TunnelPort == have.TunnelPort && want.TunnelFlags == have.TunnelFlags)
	return fwd && tun && want.Weight == have.Weight &&
		want.UpperThreshold == have.UpperThreshold && want.LowerThreshold == have.LowerThreshold
}

// Diff is the operations that turn have into want, for the services in
// want and those owned says are ours: another's service is never
// touched, and a service of ours that want no longer has is deleted.
//
// The order keeps traffic flowing: services are added first, then
// destinations are added and changed, and only then removed (so a service
// whose destinations are swapped never has none), and services are
// deleted last. Nothing that is already right is touched, so applying the
// result and diffing again gives no operation.
func Diff(want, have Table, owned func(ServiceKey) bool) []Op {
	// The tables are walked in map order, which costs nothing per entry
	// but a comparison; only the operations found are sorted.
	var adds, dests, dels, svcDels []Op
	for k, w := range want {
		h, ok := have[k]
		if !ok {
			adds = append(adds, Op{Kind: AddService, Service: w.Service})
			for _, d := range w.Dests {
				dests = append(dests, Op{Kind: AddDest, Service: w.Service, Dest: d})
			}
			continue
		}
		if !sameService(&w.Service, &h.Service) {
			adds = append(adds, Op{Kind: EditService, Service: w.Service})
		}
		for dk, d := range w.Dests {
			hd, ok := h.Dests[dk]
			switch {
			case !ok:
				dests = append(dests, Op{Kind: AddDest, Service: w.Service, Dest: d})
			case !sameDest(&d, &hd):
				dests = append(dests, Op{Kind: EditDest, Service: w.Service, Dest: d})
			}
		}
		if len(h.Dests) > len(w.Dests)-countAdds(dests, k) {
			for dk, d := range h.Dests {
				if _, ok := w.Dests[dk]; !ok {
					dels = append(dels, Op{Kind: DelDest, Service: w.Service, Dest: d})
				}
			}
		}
	}
	for k, h := range have {
		if _, ok := want[k]; !ok && owned != nil && owned(k) {
			svcDels = append(svcDels, Op{Kind: DelService, Service: h.Service})
		}
	}
	for _, ops := range [][]Op{adds, dests, dels, svcDels} {
		slices.SortFunc(ops, compareOps)
	}
	return slices.Concat(adds, dests, dels, svcDels)
}

// countAdds counts the destinations added to service k at the end of ops:
// with them, have holds len(w.Dests) of want's, and any more are extra.
func countAdds(ops []Op, k ServiceKey) int {
	n := 0
	for i := len(ops) - 1; i >= 0 && ops[i].Service.ServiceKey == k; i-- {
		if ops[i].Kind == AddDest {
			n++
		}
	}
	return n
}

func compareOps(a, b Op) int {
	return cmp.Or(CompareKeys(a.Service.ServiceKey, b.Service.ServiceKey),
		a.Dest.Addr.Compare(b.Dest.Addr), cmp.Compare(a.Dest.Port, b.Dest.Port))
}

// Patch applies ops that succeeded to a table, so that it stays a true
// copy of the kernel's without reading it back.
func (t Table) Patch(o *Op) {
	switch o.Kind {
	case AddService, EditService:
		if vs, ok := t[o.Service.ServiceKey]; ok {
			vs.Service = o.Service
		} else {
			t.Add(o.Service)
		}
	case DelService:
		delete(t, o.Service.ServiceKey)
	case AddDest, EditDest:
		if vs, ok := t[o.Service.ServiceKey]; ok {
			vs.AddDest(o.Dest)
		}
	case DelDest:
		if vs, ok := t[o.Service.ServiceKey]; ok {
			delete(vs.Dests, o.Dest.Key())
		}
	}
}
