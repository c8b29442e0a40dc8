package ipvs

import (
	"cmp"
	"maps"
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
	// dests are the destinations in the kernel's list order, the head
	// first: the order a dump gives them, and the order the mh scheduler
	// fills its Maglev table in. A table read from the kernel holds its
	// order; AddDest appends, PushDest inserts at the head as the kernel
	// does. One slice, not a map and an order beside it: a director
	// keeps two tables of every destination (the wanted one and the
	// reconciler's copy of the kernel's), and a map's buckets cost more
	// than the destinations they hold (TestTableBytesPerDest). Lookups
	// scan it, or an index built for the occasion when it is long
	// (indexMin).
	dests []Destination
}

// indexMin is the length from which a walk over a service's
// destinations that looks each up in another service builds a map of the
// other's first: below it, a scan of the slice costs less than the map.
const indexMin = 32

// Table is a whole IPVS table, or the part of one that matters: what the
// configuration and the health checks want, or what the kernel holds.
type Table map[ServiceKey]*VirtualService

// Add puts a service in the table, replacing one of the same key, and
// returns it for its destinations to be added.
func (t Table) Add(s Service) *VirtualService {
	vs := &VirtualService{Service: s}
	t[s.ServiceKey] = vs
	return vs
}

// Len is the number of the service's destinations.
func (vs *VirtualService) Len() int { return len(vs.dests) }

func (vs *VirtualService) find(k DestKey) int {
	for i := range vs.dests {
		if vs.dests[i].Addr == k.Addr && vs.dests[i].Port == k.Port {
			return i
		}
	}
	return -1
}

// Dest is the service's destination of key k.
func (vs *VirtualService) Dest(k DestKey) (Destination, bool) {
	if i := vs.find(k); i >= 0 {
		return vs.dests[i], true
	}
	return Destination{}, false
}

// AddDest puts a destination in the service, replacing one of the same
// address and port (which keeps its place), or else appending it to the
// order.
func (vs *VirtualService) AddDest(d Destination) {
	if i := vs.find(d.Key()); i >= 0 {
		vs.dests[i] = d
		return
	}
	vs.dests = append(vs.dests, d)
}

// AddDests is AddDest of each of ds in turn, in time linear in their
// number however many there are.
func (vs *VirtualService) AddDests(ds []Destination) {
	if len(vs.dests) == 0 {
		vs.dests = make([]Destination, 0, len(ds))
	}
	if len(vs.dests)+len(ds) < indexMin {
		for _, d := range ds {
			vs.AddDest(d)
		}
		return
	}
	at := make(map[DestKey]int, len(vs.dests)+len(ds))
	for i := range vs.dests {
		at[vs.dests[i].Key()] = i
	}
	vs.dests = slices.Grow(vs.dests, len(ds))
	for _, d := range ds {
		if i, ok := at[d.Key()]; ok {
			vs.dests[i] = d
			continue
		}
		at[d.Key()] = len(vs.dests)
		vs.dests = append(vs.dests, d)
	}
}

// PushDest is AddDest, but a new destination goes to the head of the
// order, as the kernel's ip_vs_add_dest puts it (list_add_rcu in
// __ip_vs_update_dest).
func (vs *VirtualService) PushDest(d Destination) {
	if i := vs.find(d.Key()); i >= 0 {
		vs.dests[i] = d
		return
	}
	vs.dests = slices.Insert(vs.dests, 0, d)
}

// DelDest removes the destination of key k.
func (vs *VirtualService) DelDest(k DestKey) {
	if i := vs.find(k); i >= 0 {
		vs.dests = slices.Delete(vs.dests, i, i+1)
	}
}

// OrderedDests are the service's destinations in its order, a copy.
func (vs *VirtualService) OrderedDests() []Destination { return slices.Clone(vs.dests) }

// keys are the destinations' keys in the service's order.
func (vs *VirtualService) keys() []DestKey {
	ks := make([]DestKey, len(vs.dests))
	for i := range vs.dests {
		ks[i] = vs.dests[i].Key()
	}
	return ks
}

// Clone is a copy of vs that shares nothing with it.
func (vs *VirtualService) Clone() *VirtualService {
	return &VirtualService{Service: vs.Service, dests: slices.Clone(vs.dests)}
}

// index looks up a service's destinations by key: a scan of a short
// service, a map built once for a long one.
type index struct {
	vs *VirtualService
	at map[DestKey]int
}

func indexOf(vs *VirtualService) index {
	x := index{vs: vs}
	if vs != nil && len(vs.dests) >= indexMin {
		x.at = make(map[DestKey]int, len(vs.dests))
		for i := range vs.dests {
			x.at[vs.dests[i].Key()] = i
		}
	}
	return x
}

func (x index) get(k DestKey) (Destination, bool) {
	switch {
	case x.vs == nil:
		return Destination{}, false
	case x.at == nil:
		return x.vs.Dest(k)
	}
	if i, ok := x.at[k]; ok {
		return x.vs.dests[i], true
	}
	return Destination{}, false
}

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
	ds := slices.Clone(vs.dests)
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
	var ordered map[ServiceKey][]Op
	// The services have lacks are all added, with their destinations:
	// at the start that is the whole table (11,000 operations of 248
	// bytes for 1,000 x 10), which appended one by one were copied over
	// and over as the slices doubled.
	var newSvcs, newDests int
	for k, w := range want {
		if _, ok := have[k]; !ok && !Ordered(&w.Service) {
			newSvcs++
			newDests += len(w.dests)
		}
	}
	// In one array, the services' part first: when nothing else comes
	// (neither part outgrows its room, and there is nothing to delete or
	// put in order) the result is that array as it is, not a copy of it
	// (2.7 MB at the start of 1,000 x 10, 0.2 s of the guest's start,
	// most of it the first touches of the copy's pages).
	all := make([]Op, newSvcs+newDests)
	adds, dests = all[:0:newSvcs], all[newSvcs:newSvcs:newSvcs+newDests]
	for k, w := range want {
		h, ok := have[k]
		if Ordered(&w.Service) {
			switch {
			case !ok:
				adds = append(adds, Op{Kind: AddService, Service: w.Service})
			case !sameService(&w.Service, &h.Service):
				adds = append(adds, Op{Kind: EditService, Service: w.Service})
			}
			if ops := orderedDests(w, h); len(ops) > 0 {
				if ordered == nil {
					ordered = map[ServiceKey][]Op{}
				}
				ordered[k] = ops
			}
			continue
		}
		if !ok {
			adds = append(adds, Op{Kind: AddService, Service: w.Service})
			for _, d := range w.dests {
				dests = append(dests, Op{Kind: AddDest, Service: w.Service, Dest: d})
			}
			continue
		}
		if !sameService(&w.Service, &h.Service) {
			adds = append(adds, Op{Kind: EditService, Service: w.Service})
		}
		hx := indexOf(h)
		for _, d := range w.dests {
			hd, ok := hx.get(d.Key())
			switch {
			case !ok:
				dests = append(dests, Op{Kind: AddDest, Service: w.Service, Dest: d})
			case !sameDest(&d, &hd):
				dests = append(dests, Op{Kind: EditDest, Service: w.Service, Dest: d})
			}
		}
		if len(h.dests) > len(w.dests)-countAdds(dests, k) {
			wx := indexOf(w)
			for _, d := range h.dests {
				if _, ok := wx.get(d.Key()); !ok {
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
	var inOrder []Op
	if ordered != nil {
		for _, k := range slices.SortedFunc(maps.Keys(ordered), CompareKeys) {
			inOrder = append(inOrder, ordered[k]...)
		}
	}
	if len(all) > 0 && len(adds) == newSvcs && len(dests) == newDests && len(inOrder)+len(dels)+len(svcDels) == 0 {
		return all // each part filled its room exactly, in place
	}
	return slices.Concat(adds, dests, inOrder, dels, svcDels)
}

// Ordered tells whether the order of a service's destinations is part of
// what it is: the mh scheduler fills its Maglev table from the head of
// the kernel's list of destinations (ip_vs_mh_populate), so two
// directors holding the same destinations in two orders send a flow to
// two real servers. Diff gives such a service its destinations in
// CanonicalOrder, whatever the history of the kernel's table.
func Ordered(s *Service) bool { return s.Scheduler == "mh" }

// CanonicalOrder is the order Diff gives an ordered service's
// destinations, head first: by address and port, the highest first, a
// function of the set of destinations alone, so the same on every
// director whatever order their configurations list them in. Highest
// first is the order the kernel's head insertion makes of destinations
// added lowest first: keepalived's table for a configuration that lists
// its real servers by address is adopted as it is, and a new real server
// of a higher address than the others costs one addition.
func CanonicalOrder(vs *VirtualService) []DestKey {
	keys := vs.keys()
	slices.SortFunc(keys, func(a, b DestKey) int { return compareDestKeys(b, a) })
	return keys
}

func compareDestKeys(a, b DestKey) int {
	return cmp.Or(a.Addr.Compare(b.Addr), cmp.Compare(a.Port, b.Port))
}

// Readd is what puts the kernel's order have into the canonical order
// want (both head first, have restricted to the destinations kept): the
// destinations to add, or to delete and add again, in the order to add
// them. The kernel inserts at the head only, so the destinations that
// stay where they are form the longest suffix of want that have holds in
// the same order; the rest of want is added before them, its last first.
// It is empty when have is in order.
func Readd(want, have []DestKey) []DestKey {
	i, j := len(want)-1, len(have)-1
	for ; i >= 0; i-- {
		for j >= 0 && have[j] != want[i] {
			j--
		}
		if j < 0 {
			break
		}
		j--
	}
	out := make([]DestKey, 0, i+1)
	for ; i >= 0; i-- {
		out = append(out, want[i])
	}
	return out
}

// orderedDests are the destination operations that turn h (nil for a
// service to add) into w for an ordered service: the settings of the
// destinations that stay in place first, then those added in order (each
// moved one deleted just before it is added again, so that it is missing
// for one operation's time), then the removals, last, so that the
// service keeps its servers meanwhile.
func orderedDests(w, h *VirtualService) []Op {
	want := CanonicalOrder(w)
	wx, hx := indexOf(w), indexOf(h)
	var have []DestKey
	if h != nil {
		for i := range h.dests {
			if k := h.dests[i].Key(); has(wx, k) {
				have = append(have, k)
			}
		}
	}
	readd := Readd(want, have)
	moved := make(map[DestKey]bool, len(readd))
	for _, k := range readd {
		moved[k] = true
	}
	var ops []Op
	for _, k := range want {
		if moved[k] {
			continue
		}
		d, _ := wx.get(k)
		hd, _ := hx.get(k)
		if !sameDest(&d, &hd) {
			ops = append(ops, Op{Kind: EditDest, Service: w.Service, Dest: d})
		}
	}
	for _, k := range readd {
		d, _ := wx.get(k)
		if hd, ok := hx.get(k); ok {
			ops = append(ops, Op{Kind: DelDest, Service: w.Service, Dest: hd})
		}
		if d.Weight == 0 && d.TableWeight > 0 {
			up := d
			up.Weight = d.TableWeight
			ops = append(ops, Op{Kind: AddDest, Service: w.Service, Dest: up},
				Op{Kind: EditDest, Service: w.Service, Dest: d})
			continue
		}
		ops = append(ops, Op{Kind: AddDest, Service: w.Service, Dest: d})
	}
	if h != nil {
		for _, hd := range h.dests {
			if !has(wx, hd.Key()) {
				ops = append(ops, Op{Kind: DelDest, Service: w.Service, Dest: hd})
			}
		}
	}
	return ops
}

func has(x index, k DestKey) bool {
	_, ok := x.get(k)
	return ok
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

// PatchAll applies ops that succeeded to a table, in their order, as
// Patch does each. A service's destinations grow once, by the number of
// destinations the ops add to it, before its first: one at a time they
// grew by doubling, and a table the start filled (1,000 x 20) kept 135
// bytes per destination where one written at its size keeps 85.
func (t Table) PatchAll(ops []Op) {
	var adds map[ServiceKey]int
	for i := range ops {
		if ops[i].Kind == AddDest {
			if adds == nil {
				adds = make(map[ServiceKey]int)
			}
			adds[ops[i].Service.ServiceKey]++
		}
	}
	for i := range ops {
		o := &ops[i]
		if o.Kind == AddDest {
			if n := adds[o.Service.ServiceKey]; n > 1 {
				if vs, ok := t[o.Service.ServiceKey]; ok {
					vs.dests = slices.Grow(vs.dests, n)
				}
				delete(adds, o.Service.ServiceKey)
			}
		}
		t.Patch(o)
	}
}

// compact moves t's services and destinations into two arrays of their
// own, each allocated at once. A table built while other work allocates
// (a dump's netlink messages, the thousands of operations of a first
// sync) has its pieces scattered among that work's objects of the same
// sizes, and once those are freed the collector keeps whole spans in use
// for a piece or two each. Each service's destinations end their own
// part of the array (its capacity is its length), so that an append
// moves them elsewhere rather than over the next service's.
//
// The table's services are new values: a *VirtualService taken from t
// before is not t's any more.
func (t Table) compact() {
	n := 0
	for _, vs := range t {
		n += len(vs.dests)
	}
	vss := make([]VirtualService, 0, len(t))
	ds := make([]Destination, 0, n)
	for k, vs := range t {
		at := len(ds)
		ds = append(ds, vs.dests...)
		vss = append(vss, *vs)
		c := &vss[len(vss)-1]
		c.dests = ds[at:len(ds):len(ds)]
		t[k] = c
	}
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
			vs.PushDest(o.Dest)
		}
	case DelDest:
		if vs, ok := t[o.Service.ServiceKey]; ok {
			vs.DelDest(o.Dest.Key())
		}
	}
}
