package ipvs_test

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/directord/directord/internal/ipvstest"
	"github.com/directord/directord/ipvs"
)

func keys(s string) []ipvs.DestKey {
	var out []ipvs.DestKey
	for _, f := range strings.Fields(s) {
		ap := netip.MustParseAddrPort("10.0.0." + f + ":80")
		out = append(out, ipvs.DestKey{Addr: ap.Addr(), Port: ap.Port()})
	}
	return out
}

func names(ks []ipvs.DestKey) string {
	var out []string
	for _, k := range ks {
		out = append(out, strings.TrimPrefix(k.Addr.String(), "10.0.0."))
	}
	return strings.Join(out, " ")
}

// TestReadd: the kernel inserts at the head only, so what stays is the
// longest suffix of the wanted order found in the kernel's, in order.
func TestReadd(t *testing.T) {
	for _, c := range []struct{ name, want, have, readd string }{
		{"in order", "1 2 3", "1 2 3", ""},
		{"empty kernel", "1 2 3", "", "3 2 1"},
		{"added in ascending order: reversed", "1 2 3", "3 2 1", "2 1"},
		{"a new one at the head, where it belongs", "1 2 3", "2 3", "1"},
		{"a new one at the tail", "1 2 3", "1 2", "3 2 1"},
		{"a new one in the middle", "1 2 3 4", "1 2 4", "3 2 1"},
		{"a flap moved one to the head", "1 2 3 4", "3 1 2 4", "2 1"},
		{"the head moved to the tail", "1 2 3", "2 3 1", "1"},
		{"the middle one alone", "1 2 3", "2", "3 2 1"},
		{"the tail alone", "1 2 3", "3", "2 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := names(ipvs.Readd(keys(c.want), keys(c.have))); got != c.readd {
				t.Errorf("Readd(%s, %s) = %q, want %q", c.want, c.have, got, c.readd)
			}
		})
	}
}

func mhSvc(addr string) ipvs.Service {
	s := svc(addr, "mh")
	s.Flags = ipvs.SchedFlag1 | ipvs.SchedFlag2
	return s
}

// order is a service's destinations as the kernel lists them.
func order(t *testing.T, k *ipvstest.Kernel, s ipvs.Service) string {
	t.Helper()
	ds, err := k.Destinations(s.ServiceKey)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range ds {
		out = append(out, strings.TrimPrefix(d.Addr.String(), "10.0.0."))
	}
	return strings.Join(out, " ")
}

// TestSyncOrdersMaglevDestinations: an mh service's destinations end in
// the canonical order (address, port), whatever the kernel's history,
// with the fewest moves, and a second Sync does nothing; the order of
// other services is left as it is.
func TestSyncOrdersMaglevDestinations(t *testing.T) {
	mh := mhSvc("192.0.2.1:80")
	rr := svc("192.0.2.2:80", "rr")
	want := table(mh, dest("10.0.0.3:80", 1), dest("10.0.0.1:80", 1), dest("10.0.0.2:80", 2),
		rr, dest("10.0.0.1:80", 1), dest("10.0.0.2:80", 1))
	for _, c := range []struct {
		name    string
		history []ipvs.Op
		ops     []string
	}{
		{"an empty kernel", nil, []string{
			"add service TCP 192.0.2.1:80 (mh, flags flag-1,flag-2)",
			"add service TCP 192.0.2.2:80 (rr)",
			"add destination 10.0.0.1:80 of TCP 192.0.2.2:80 (route, weight 1)",
			"add destination 10.0.0.2:80 of TCP 192.0.2.2:80 (route, weight 1)",
			"add destination 10.0.0.1:80 of TCP 192.0.2.1:80 (route, weight 1)",
			"add destination 10.0.0.2:80 of TCP 192.0.2.1:80 (route, weight 2)",
			"add destination 10.0.0.3:80 of TCP 192.0.2.1:80 (route, weight 1)",
		}},
		{"another history: added 3, 1, 2", []ipvs.Op{
			{Kind: ipvs.AddService, Service: mh},
			{Kind: ipvs.AddDest, Service: mh, Dest: dest("10.0.0.3:80", 1)},
			{Kind: ipvs.AddDest, Service: mh, Dest: dest("10.0.0.1:80", 1)},
			{Kind: ipvs.AddDest, Service: mh, Dest: dest("10.0.0.2:80", 2)},
			{Kind: ipvs.AddService, Service: rr},
			{Kind: ipvs.AddDest, Service: rr, Dest: dest("10.0.0.1:80", 1)},
			{Kind: ipvs.AddDest, Service: rr, Dest: dest("10.0.0.2:80", 1)},
		}, []string{
			// The kernel lists 2 1 3: 2 1 stay, 3 goes in front.
			"delete destination 10.0.0.3:80 of TCP 192.0.2.1:80",
			"add destination 10.0.0.3:80 of TCP 192.0.2.1:80 (route, weight 1)",
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			k := &ipvstest.Kernel{}
			apply(t, k, c.history...)
			r := ipvs.NewReconciler(k)
			res, err := r.Sync(want)
			if err != nil {
				t.Fatal(err)
			}
			if got := kinds(res.Ops); !slices.Equal(got, c.ops) {
				t.Errorf("ops:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.ops, "\n"))
			}
			if got := order(t, k, mh); got != "3 2 1" {
				t.Errorf("mh order %q, want 3 2 1", got)
			}
			r.Invalidate()
			if res, err := r.Sync(want); err != nil || len(res.Ops) != 0 {
				t.Errorf("second sync: %v, %v", kinds(res.Ops), err)
			}
		})
	}
}

// TestSyncKeepsMaglevOrderThroughChanges: a weight change keeps the
// order; a new real server is put in its place; a removed one is
// removed last; out-of-band changes are repaired on the resync.
func TestSyncKeepsMaglevOrderThroughChanges(t *testing.T) {
	mh := mhSvc("192.0.2.1:80")
	k := &ipvstest.Kernel{}
	r := ipvs.NewReconciler(k)
	sync := func(want ipvs.Table, ops ...string) {
		t.Helper()
		res, err := r.Sync(want)
		if err != nil {
			t.Fatal(err)
		}
		if got := kinds(res.Ops); !slices.Equal(got, ops) {
			t.Errorf("ops:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(ops, "\n"))
		}
		if got, want := order(t, k, mh), names(ipvs.CanonicalOrder(want[mh.ServiceKey])); got != want {
			t.Errorf("order %q, want %q", got, want)
		}
	}
	sync(table(mh, dest("10.0.0.1:80", 1), dest("10.0.0.3:80", 1)),
		"add service TCP 192.0.2.1:80 (mh, flags flag-1,flag-2)",
		"add destination 10.0.0.1:80 of TCP 192.0.2.1:80 (route, weight 1)",
		"add destination 10.0.0.3:80 of TCP 192.0.2.1:80 (route, weight 1)")
	sync(table(mh, dest("10.0.0.1:80", 0), dest("10.0.0.3:80", 1)),
		"edit destination 10.0.0.1:80 of TCP 192.0.2.1:80 (route, weight 0)")
	sync(table(mh, dest("10.0.0.1:80", 1), dest("10.0.0.2:80", 1), dest("10.0.0.3:80", 1)),
		"edit destination 10.0.0.1:80 of TCP 192.0.2.1:80 (route, weight 1)",
		"add destination 10.0.0.2:80 of TCP 192.0.2.1:80 (route, weight 1)",
		"delete destination 10.0.0.3:80 of TCP 192.0.2.1:80",
		"add destination 10.0.0.3:80 of TCP 192.0.2.1:80 (route, weight 1)")
	sync(table(mh, dest("10.0.0.2:80", 1), dest("10.0.0.3:80", 1)),
		"delete destination 10.0.0.1:80 of TCP 192.0.2.1:80")
	// Someone (ipvsadm) deletes and adds 2 again: it is at the head.
	apply(t, k, ipvs.Op{Kind: ipvs.DelDest, Service: mh, Dest: dest("10.0.0.2:80", 1)},
		ipvs.Op{Kind: ipvs.AddDest, Service: mh, Dest: dest("10.0.0.2:80", 1)})
	r.Invalidate()
	sync(table(mh, dest("10.0.0.2:80", 1), dest("10.0.0.3:80", 1)),
		"delete destination 10.0.0.3:80 of TCP 192.0.2.1:80",
		"add destination 10.0.0.3:80 of TCP 192.0.2.1:80 (route, weight 1)")
}

// TestSyncAddsAHeldMaglevDestinationAtItsTableWeight: a destination
// added at weight 0 would be left out of the Maglev table (the kernel's
// last_weight is 0), so it is added at its table weight and set to 0.
func TestSyncAddsAHeldMaglevDestinationAtItsTableWeight(t *testing.T) {
	mh := mhSvc("192.0.2.1:80")
	held := dest("10.0.0.2:80", 0)
	held.TableWeight = 3
	k := &ipvstest.Kernel{}
	res, err := ipvs.NewReconciler(k).Sync(table(mh, dest("10.0.0.1:80", 1), held))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"add service TCP 192.0.2.1:80 (mh, flags flag-1,flag-2)",
		"add destination 10.0.0.1:80 of TCP 192.0.2.1:80 (route, weight 1)",
		"add destination 10.0.0.2:80 of TCP 192.0.2.1:80 (route, weight 3)",
		"edit destination 10.0.0.2:80 of TCP 192.0.2.1:80 (route, weight 0)",
	}
	if got := kinds(res.Ops); !slices.Equal(got, want) {
		t.Errorf("ops:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestAddDests: AddDests keeps the order it is given and replaces a
// destination of the same key in its place, below indexMin and above it.
func TestAddDests(t *testing.T) {
	for _, n := range []int{3, 100} {
		var ds []ipvs.Destination
		for i := range n {
			ds = append(ds, dest(fmt.Sprintf("10.0.%d.%d:80", i/250, i%250+1), 1))
		}
		vs := (ipvs.Table{}).Add(ipvs.Service{})
		vs.AddDest(ds[1])
		again := ds[1]
		again.Weight = 7
		vs.AddDests(append(slices.Clone(ds), again))
		got := vs.OrderedDests()
		want := append([]ipvs.Destination{again, ds[0]}, ds[2:]...)
		if !slices.Equal(got, want) || vs.Len() != n {
			t.Errorf("%d destinations: got %v, want %v", n, got, want)
		}
		vs.DelDest(ds[0].Key())
		if _, ok := vs.Dest(ds[0].Key()); ok || vs.Len() != n-1 {
			t.Errorf("%d destinations: %v still there after DelDest", n, ds[0])
		}
	}
}
