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
	Dests map[DestKey]Destination
	// Order is the destinations' keys in the kernel's list order, the
	// head first: the order a dump gives them, and the order the mh
	// scheduler fills its Maglev table in. A table read from the kernel
	// holds its order; AddDest appends, PushDest inserts at the head as
	// the kernel does.
	Order []DestKey
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
// address and port (which keeps its place), or else appending it to the
// order.
func (vs *VirtualService) AddDest(d Destination) {
	k := d.Key()
	if _, ok := vs.Dests[k]; !ok {
		vs.Order = append(vs.Order, k)
	}
	vs.Dests[k] = d
}

// PushDest is AddDest, but a new destination goes to the head of the
// order, as the kernel's ip_vs_add_dest puts it (list_add_rcu in
// __ip_vs_update_dest).
func (vs *VirtualService) PushDest(d Destination) {
	k := d.Key()
	if _, ok := vs.Dests[k]; !ok {
		vs.Order = slices.Insert(vs.Order, 0, k)
	}
	vs.Dests[k] = d
}

// DelDest removes the destination of key k.
func (vs *VirtualService) DelDest(k DestKey) {
	if _, ok := vs.Dests[k]; !ok {
		return
	}
	delete(vs.Dests, k)
	vs.Order = slices.DeleteFunc(vs.Order, func(o DestKey) bool { return o == k })
}

// OrderedDests are the service's destinations in its order.
func (vs *VirtualService) OrderedDests() []Destination {
	ks := vs.keys()
	ds := make([]Destination, 0, len(ks))
	for _, k := range ks {
		ds = append(ds, vs.Dests[k])
	}
	return ds
}

// keys are the destinations' keys in the service's order. A service
// built without AddDest (a literal's Dests) has destinations Order
// lacks: they come last, by address and port, and a key of Order that
// Dests lacks is left out.
func (vs *VirtualService) keys() []DestKey {
	if len(vs.Order) == len(vs.Dests) {
		return vs.Order
	}
	seen := make(map[DestKey]bool, len(vs.Order))
	out := make([]DestKey, 0, len(vs.Dests))
	for _, k := range vs.Order {
		if _, ok := vs.Dests[k]; ok && !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	for _, d := range vs.SortedDests() {
		if !seen[d.Key()] {
			out = append(out, d.Key())
		}
	}
	return out
}

// Clone is a copy of vs that shares nothing with it.
func (vs *VirtualService) Clone() *VirtualService {
	return &VirtualService{Service: vs.Service, Dests: maps.Clone(vs.Dests), Order: slices.Clone(vs.Order)}
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
	var ordered map[ServiceKey][]Op
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
	var inOrder []Op
	if ordered != nil {
		for _, k := range slices.SortedFunc(maps.Keys(ordered), CompareKeys) {
			inOrder = append(inOrder, ordered[k]...)
		}
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
	keys := slices.Collect(maps.Keys(vs.Dests))
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
	var have []DestKey
	if h != nil {
		for _, k := range h.keys() {
			if _, ok := w.Dests[k]; ok {
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
		d, hd := w.Dests[k], h.Dests[k]
		if !sameDest(&d, &hd) {
			ops = append(ops, Op{Kind: EditDest, Service: w.Service, Dest: d})
		}
	}
	for _, k := range readd {
		d := w.Dests[k]
		if h != nil {
			if hd, ok := h.Dests[k]; ok {
				ops = append(ops, Op{Kind: DelDest, Service: w.Service, Dest: hd})
			}
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
		for _, k := range h.keys() {
			if _, ok := w.Dests[k]; !ok {
				ops = append(ops, Op{Kind: DelDest, Service: w.Service, Dest: h.Dests[k]})
			}
		}
	}
	return ops
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
			vs.PushDest(o.Dest)
		}
	case DelDest:
		if vs, ok := t[o.Service.ServiceKey]; ok {
			vs.DelDest(o.Dest.Key())
		}
	}
}
