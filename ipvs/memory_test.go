package ipvs

import (
	"net/netip"
	"runtime"
	"slices"
	"testing"
)

// tableBudget is what a table may keep per destination, in bytes of
// live heap: its Destination in its service's slice and its share of
// the service. It measured 307 (Go 1.26, with or without -race) with
// the kernel's counters in line in every Destination, 236 with them out
// of line (Destination.Counters) and the destinations in a map with an
// order beside it, 85 in one slice (VirtualService.dests). The margin
// (about 10%) is for other Go versions' layouts, not for noise: the
// heap after a GC is the same from run to run.
const tableBudget = 94

// TestTableBytesPerDest holds a table of 1,000 services x 20
// destinations (the director keeps two: the wanted table and the
// reconciler's copy of the kernel's) to tableBudget bytes per
// destination, measured with runtime.MemStats after a GC before and
// after building it.
func TestTableBytesPerDest(t *testing.T) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	tb := bigTable()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(tb)
	per := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / (bigServices * bigDests)
	t.Logf("%.0f bytes of live heap per destination", per)
	if per > tableBudget {
		t.Errorf("the table keeps %.0f bytes per destination, more than its budget of %d", per, tableBudget)
	}
}

// emptyKernel holds nothing and takes every operation.
type emptyKernel struct{}

func (emptyKernel) Services() ([]Service, error)                   { return nil, nil }
func (emptyKernel) Destinations(ServiceKey) ([]Destination, error) { return nil, nil }
func (emptyKernel) Apply([]Op) error                               { return nil }

// TestReconcilerBytesPerDest holds the reconciler's copy of the kernel's
// table, as the start's first sync fills it from an empty kernel one
// operation at a time, to the same budget as a table written at its size:
// grown one destination at a time it kept 135 bytes per destination.
func TestReconcilerBytesPerDest(t *testing.T) {
	want := bigTable()
	r := NewReconciler(emptyKernel{})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if _, err := r.Sync(want); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(want)
	if n := len(r.have); n != bigServices {
		t.Fatalf("the copy holds %d services, want %d", n, bigServices)
	}
	per := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / (bigServices * bigDests)
	t.Logf("%.0f bytes of live heap per destination", per)
	if per > tableBudget {
		t.Errorf("the reconciler's copy keeps %.0f bytes per destination, more than its budget of %d", per, tableBudget)
	}
}

const bigServices, bigDests = 1000, 20

// bigTable is 1,000 services x 20 destinations, written as the director
// writes a pool and as a read of the kernel does (AddDests).
func bigTable() Table {
	const services, dests = bigServices, bigDests
	tb := Table{}
	for s := range services {
		vs := tb.Add(Service{ServiceKey: AddrKey(TCP, netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 1, byte(s >> 8), byte(s)}), 443)), Scheduler: "rr"})
		ds := make([]Destination, 0, dests)
		for d := range dests {
			n := s*dests + d
			ds = append(ds, Destination{Addr: netip.AddrFrom4([4]byte{172, 16, byte(n >> 8), byte(n)}), Port: 443, Forward: Route, Weight: 1})
		}
		vs.AddDests(ds)
	}
	return tb
}

// TestCompactKeepsTheTable: a compacted table holds what it held, in
// each service's order, and its services stay apart: a destination
// added to, pushed on or deleted from one service leaves the service
// next to it in the shared array as it was.
func TestCompactKeepsTheTable(t *testing.T) {
	tb := bigTable()
	before := map[ServiceKey][]Destination{}
	for k, vs := range tb {
		before[k] = vs.OrderedDests()
	}
	tb.compact()
	if len(tb) != len(before) {
		t.Fatalf("%d services after compact, want %d", len(tb), len(before))
	}
	for k, vs := range tb {
		if got := vs.OrderedDests(); !slices.Equal(got, before[k]) {
			t.Fatalf("%v after compact:\n%v\nwant\n%v", k, got, before[k])
		}
	}
	extra := Destination{Addr: netip.MustParseAddr("192.0.2.1"), Port: 443, Forward: Route, Weight: 1}
	for k, vs := range tb {
		first := vs.dests[0].Key()
		vs.AddDest(extra)
		vs.PushDest(Destination{Addr: netip.MustParseAddr("192.0.2.2"), Port: 443, Forward: Route, Weight: 1})
		vs.DelDest(first)
		for k2, other := range tb {
			if k2 == k {
				continue
			}
			if got := other.OrderedDests(); !slices.Equal(got, before[k2]) {
				t.Fatalf("changing %v changed %v:\n%v\nwant\n%v", k, k2, got, before[k2])
			}
		}
		break
	}
}
