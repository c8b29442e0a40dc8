package ipvs_test

import (
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/directord/directord/internal/ipvstest"
	"github.com/directord/directord/ipvs"
)

// kernel is a new fake kernel holding t.
func kernel(t testing.TB, tab ipvs.Table) *ipvstest.Kernel {
	t.Helper()
	k := &ipvstest.Kernel{}
	if err := k.Load(tab); err != nil {
		t.Fatal(err)
	}
	return k
}

// apply does ops behind the reconciler's back, as ipvsadm would.
func apply(t testing.TB, k *ipvstest.Kernel, ops ...ipvs.Op) {
	t.Helper()
	if err := k.Apply(ops); err != nil {
		t.Fatal(err)
	}
}

// busy is a kernel with traffic: its services and destinations report
// counters, and a NAT destination on the director's own address as Local,
// which the kernels of old did (Debian's 6.1 reports it as NAT,
// internal/ipvstest's transcript).
type busy struct{ *ipvstest.Kernel }

func (k busy) Services() ([]ipvs.Service, error) {
	ss, err := k.Kernel.Services()
	for i := range ss {
		ss[i].Stats = ipvs.Stats{Connections: 12345}
	}
	return ss, err
}

func (k busy) Destinations(key ipvs.ServiceKey) ([]ipvs.Destination, error) {
	ds, err := k.Kernel.Destinations(key)
	for i := range ds {
		ds[i].Counters = &ipvs.DestCounters{ActiveConns: 7, Stats: ipvs.Stats{BytesIn: 1 << 40}}
		if ds[i].Forward == ipvs.Masquerade && ds[i].Addr == key.Addr {
			ds[i].Forward = ipvs.Local
		}
	}
	return ds, err
}

func svc(addr string, sched string) ipvs.Service {
	return ipvs.Service{ServiceKey: ipvs.AddrKey(ipvs.TCP, netip.MustParseAddrPort(addr)), Scheduler: sched}
}

func dest(addr string, weight int32) ipvs.Destination {
	ap := netip.MustParseAddrPort(addr)
	return ipvs.Destination{Addr: ap.Addr(), Port: ap.Port(), Forward: ipvs.Route, Weight: weight}
}

// table builds a Table from services and their destinations.
func table(entries ...any) ipvs.Table {
	t := ipvs.Table{}
	var vs *ipvs.VirtualService
	for _, e := range entries {
		switch e := e.(type) {
		case ipvs.Service:
			vs = t.Add(e)
		case ipvs.Destination:
			vs.AddDest(e)
		}
	}
	return t
}

func kinds(ops []ipvs.Op) []string {
	var out []string
	for _, o := range ops {
		out = append(out, o.String())
	}
	return out
}

func TestSyncFromEmptyThenIdempotent(t *testing.T) {
	k := kernel(t, ipvs.Table{})
	r := ipvs.NewReconciler(k)
	want := table(svc("192.0.2.1:80", "rr"), dest("10.0.0.1:80", 1), dest("10.0.0.2:80", 1),
		svc("192.0.2.1:443", "wlc"), dest("10.0.0.1:443", 2))
	res, err := r.Sync(want)
	if err != nil {
		t.Fatal(err)
	}
	wantOps := []string{
		"add service TCP 192.0.2.1:80 (rr)",
		"add service TCP 192.0.2.1:443 (wlc)",
		"add destination 10.0.0.1:80 of TCP 192.0.2.1:80 (route, weight 1)",
		"add destination 10.0.0.2:80 of TCP 192.0.2.1:80 (route, weight 1)",
		"add destination 10.0.0.1:443 of TCP 192.0.2.1:443 (route, weight 2)",
	}
	if got := kinds(res.Ops); !reflect.DeepEqual(got, wantOps) {
		t.Errorf("ops:\n got %q\nwant %q", got, wantOps)
	}
	res, err = r.Sync(want)
	if err != nil || len(res.Ops) != 0 || res.Read {
		t.Errorf("second sync: %v, %d ops, read %v: want nothing", err, len(res.Ops), res.Read)
	}
	r.Invalidate()
	res, err = r.Sync(want)
	if err != nil || len(res.Ops) != 0 || !res.Read {
		t.Errorf("after a read: %v, %q", err, kinds(res.Ops))
	}
}

func TestSyncAdoptsAMatchingTable(t *testing.T) {
	// What the kernel reports differs in ways that do not matter: counters,
	// its own flags, the full netmask spelled out, Local for NAT.
	s := svc("192.0.2.1:80", "wlc")
	s.Flags, s.Timeout = ipvs.Persistent, 5*time.Minute
	nat := dest("192.0.2.1:8080", 1)
	nat.Forward = ipvs.Masquerade
	want := table(s, dest("10.0.0.1:80", 3), nat)
	k := kernel(t, want)
	if got := k.Table()[s.ServiceKey].Netmask; got != 32 {
		t.Fatalf("the kernel reports netmask %d, want the whole address", got)
	}
	r := ipvs.NewReconciler(busy{k})
	res, err := r.Sync(want)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Read || len(res.Ops) != 0 {
		t.Errorf("adoption: read %v, ops %q: want a read and no op", res.Read, kinds(res.Ops))
	}
}

func TestSyncChangesOnlyWhatDiffers(t *testing.T) {
	base := func() ipvs.Table {
		return table(svc("192.0.2.1:80", "rr"), dest("10.0.0.1:80", 1), dest("10.0.0.2:80", 1),
			svc("192.0.2.1:443", "rr"), dest("10.0.0.1:443", 1))
	}
	tests := []struct {
		name   string
		change func(ipvs.Table)
		want   []string
	}{
		{"weight", func(t ipvs.Table) {
			t[ipvs.AddrKey(ipvs.TCP, netip.MustParseAddrPort("192.0.2.1:80"))].AddDest(dest("10.0.0.2:80", 0))
		}, []string{"edit destination 10.0.0.2:80 of TCP 192.0.2.1:80 (route, weight 0)"}},
		{"scheduler keeps destinations", func(t ipvs.Table) {
			t[ipvs.AddrKey(ipvs.TCP, netip.MustParseAddrPort("192.0.2.1:443"))].Scheduler = "wlc"
		}, []string{"edit service TCP 192.0.2.1:443 (wlc)"}},
		{"swap adds before it removes", func(t ipvs.Table) {
			vs := t[ipvs.AddrKey(ipvs.TCP, netip.MustParseAddrPort("192.0.2.1:443"))]
			vs.DelDest(ipvs.DestKey{netip.MustParseAddr("10.0.0.1"), 443})
			vs.AddDest(dest("10.0.0.3:443", 1))
		}, []string{
			"add destination 10.0.0.3:443 of TCP 192.0.2.1:443 (route, weight 1)",
			"delete destination 10.0.0.1:443 of TCP 192.0.2.1:443",
		}},
		{"service gone", func(t ipvs.Table) {
			delete(t, ipvs.AddrKey(ipvs.TCP, netip.MustParseAddrPort("192.0.2.1:443")))
		}, []string{"delete service TCP 192.0.2.1:443"}},
		{"threshold", func(t ipvs.Table) {
			d := dest("10.0.0.1:80", 1)
			d.UpperThreshold = 100
			t[ipvs.AddrKey(ipvs.TCP, netip.MustParseAddrPort("192.0.2.1:80"))].AddDest(d)
		}, []string{"edit destination 10.0.0.1:80 of TCP 192.0.2.1:80 (route, weight 1)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := kernel(t, ipvs.Table{})
			r := ipvs.NewReconciler(k)
			if _, err := r.Sync(base()); err != nil {
				t.Fatal(err)
			}
			want := base()
			tt.change(want)
			res, err := r.Sync(want)
			if err != nil {
				t.Fatal(err)
			}
			if got := kinds(res.Ops); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ops:\n got %q\nwant %q", got, tt.want)
			}
			// The kernel now holds exactly want.
			r.Invalidate()
			if res, _ := r.Sync(want); len(res.Ops) != 0 {
				t.Errorf("not converged: %q", kinds(res.Ops))
			}
		})
	}
}

func TestSyncLeavesOthersServicesAlone(t *testing.T) {
	foreign := svc("198.51.100.1:25", "rr")
	k := kernel(t, table(foreign, dest("10.9.9.9:25", 1)))
	r := ipvs.NewReconciler(k)
	if _, err := r.Sync(table(svc("192.0.2.1:80", "rr"))); err != nil {
		t.Fatal(err)
	}
	// A reload that drops our service deletes it, and only it.
	res, err := r.Sync(ipvs.Table{})
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(res.Ops); !reflect.DeepEqual(got, []string{"delete service TCP 192.0.2.1:80"}) {
		t.Errorf("ops %q", got)
	}
	if kt := k.Table(); kt[foreign.ServiceKey] == nil || len(kt) != 1 {
		t.Errorf("kernel table %v: the foreign service must stay, alone", kt.Keys())
	}
	// Once deleted, it is no longer ours: someone may add it by hand.
	apply(t, k, ipvs.Op{Kind: ipvs.AddService, Service: svc("192.0.2.1:80", "wrr")})
	r.Invalidate()
	if res, _ := r.Sync(ipvs.Table{}); len(res.Ops) != 0 {
		t.Errorf("touched a service no longer ours: %q", kinds(res.Ops))
	}
}

// TestEmptyServices: the destinations of our services go, the services
// and someone else's stay, and a service of ours the kernel lost is not
// made again.
func TestEmptyServices(t *testing.T) {
	foreign := svc("198.51.100.1:25", "rr")
	k := kernel(t, table(foreign, dest("10.9.9.9:25", 1)))
	r := ipvs.NewReconciler(k)
	if _, err := r.Sync(table(svc("192.0.2.1:80", "rr"), dest("10.0.0.1:80", 1), dest("10.0.0.2:80", 0),
		svc("192.0.2.1:443", "rr"), dest("10.0.0.1:443", 1))); err != nil {
		t.Fatal(err)
	}
	apply(t, k, ipvs.Op{Kind: ipvs.DelService, Service: svc("192.0.2.1:443", "rr")})
	r.Invalidate()
	res, err := r.EmptyServices()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"delete destination 10.0.0.1:80 of TCP 192.0.2.1:80",
		"delete destination 10.0.0.2:80 of TCP 192.0.2.1:80",
	}
	if got := kinds(res.Ops); !reflect.DeepEqual(got, want) {
		t.Errorf("ops:\n got %q\nwant %q", got, want)
	}
	kt := k.Table()
	if len(kt) != 2 || kt[foreign.ServiceKey].Len() != 1 || kt[svc("192.0.2.1:80", "rr").ServiceKey].Len() != 0 {
		t.Errorf("kernel table %v: want ours empty and the foreign one as it was", kt.Keys())
	}
}

func TestSyncRepairsOutOfBandChangesAfterInvalidate(t *testing.T) {
	k := kernel(t, ipvs.Table{})
	r := ipvs.NewReconciler(k)
	want := table(svc("192.0.2.1:80", "rr"), dest("10.0.0.1:80", 1), dest("10.0.0.2:80", 1))
	if _, err := r.Sync(want); err != nil {
		t.Fatal(err)
	}
	// ipvsadm -d, and -e on another.
	s := want.Keys()[0]
	apply(t, k, ipvs.Op{Kind: ipvs.DelDest, Service: want[s].Service, Dest: dest("10.0.0.1:80", 1)},
		ipvs.Op{Kind: ipvs.EditDest, Service: want[s].Service, Dest: dest("10.0.0.2:80", 9)})
	res, _ := r.Sync(want)
	if len(res.Ops) != 0 {
		t.Fatalf("without a read the change is not seen, yet got %q", kinds(res.Ops))
	}
	r.Invalidate()
	res, err := r.Sync(want)
	if err != nil {
		t.Fatal(err)
	}
	wantOps := []string{
		"add destination 10.0.0.1:80 of TCP 192.0.2.1:80 (route, weight 1)",
		"edit destination 10.0.0.2:80 of TCP 192.0.2.1:80 (route, weight 1)",
	}
	if got := kinds(res.Ops); !reflect.DeepEqual(got, wantOps) {
		t.Errorf("repair:\n got %q\nwant %q", got, wantOps)
	}
}

func TestSyncAfterAFailureReadsAgainAndFinishes(t *testing.T) {
	k := kernel(t, ipvs.Table{})
	broken := true
	k.SetFail(func(o *ipvs.Op) syscall.Errno {
		if broken && o.Kind == ipvs.AddDest && o.Dest.Addr == netip.MustParseAddr("10.0.0.2") {
			return syscall.ENOMEM
		}
		return 0
	})
	r := ipvs.NewReconciler(k)
	want := table(svc("192.0.2.1:80", "rr"), dest("10.0.0.1:80", 1), dest("10.0.0.2:80", 1))
	if _, err := r.Sync(want); err == nil {
		t.Fatal("no error")
	}
	broken = false
	res, err := r.Sync(want)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Read || !reflect.DeepEqual(kinds(res.Ops), []string{"add destination 10.0.0.2:80 of TCP 192.0.2.1:80 (route, weight 1)"}) {
		t.Errorf("read %v, ops %q", res.Read, kinds(res.Ops))
	}
}

// bigTable is n services of m DR destinations each.
func bigTable(n, m int) ipvs.Table {
	t := ipvs.Table{}
	for i := range n {
		vs := t.Add(ipvs.Service{ServiceKey: ipvs.AddrKey(ipvs.TCP, netip.AddrPortFrom(
			netip.AddrFrom4([4]byte{10, 255, byte(i >> 8), byte(i)}), 80)), Scheduler: "wrr"})
		for j := range m {
			vs.AddDest(ipvs.Destination{Addr: netip.AddrFrom4([4]byte{10, byte(j), byte(i >> 8), byte(i)}),
				Port: 80, Forward: ipvs.Route, Weight: 100})
		}
	}
	return t
}

func TestDiffOfOneChangeInABigTable(t *testing.T) {
	want := bigTable(1000, 10)
	k := kernel(t, ipvs.Table{})
	r := ipvs.NewReconciler(k)
	if res, err := r.Sync(want); err != nil || len(res.Ops) != 11000 {
		t.Fatalf("%v, %d ops", err, len(res.Ops))
	}
	key := want.Keys()[500]
	d := want[key].SortedDests()[3]
	d.Weight = 0
	want[key].AddDest(d)
	res, err := r.Sync(want)
	if err != nil || len(res.Ops) != 1 || res.Ops[0].Kind != ipvs.EditDest || res.Ops[0].Dest != d {
		t.Fatalf("%v, %q", err, kinds(res.Ops))
	}
	if slices.ContainsFunc(k.Applied()[11000:], func(o ipvs.Op) bool { return o.Kind != ipvs.EditDest }) {
		t.Error("more than the edit reached the kernel")
	}
}

func TestSyncServicesTouchesOnlyThem(t *testing.T) {
	k := kernel(t, ipvs.Table{})
	r := ipvs.NewReconciler(k)
	want := table(svc("192.0.2.1:80", "rr"), dest("10.0.0.1:80", 1),
		svc("192.0.2.1:443", "rr"), dest("10.0.0.1:443", 1))
	if _, err := r.Sync(want); err != nil {
		t.Fatal(err)
	}
	k80 := ipvs.AddrKey(ipvs.TCP, netip.MustParseAddrPort("192.0.2.1:80"))
	k443 := ipvs.AddrKey(ipvs.TCP, netip.MustParseAddrPort("192.0.2.1:443"))
	want[k80].AddDest(dest("10.0.0.1:80", 5))
	want[k443].AddDest(dest("10.0.0.1:443", 5))
	res, err := r.SyncServices(want, []ipvs.ServiceKey{k80})
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(res.Ops); !reflect.DeepEqual(got, []string{"edit destination 10.0.0.1:80 of TCP 192.0.2.1:80 (route, weight 5)"}) {
		t.Errorf("ops %q", got)
	}
	// A key want lacks: its service goes, being ours.
	delete(want, k443)
	res, err = r.SyncServices(want, []ipvs.ServiceKey{k443})
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(res.Ops); !reflect.DeepEqual(got, []string{"delete service TCP 192.0.2.1:443"}) {
		t.Errorf("ops %q", got)
	}
	r.Invalidate()
	if res, _ := r.Sync(want); len(res.Ops) != 0 {
		t.Errorf("not converged: %q", kinds(res.Ops))
	}
}

// BenchmarkSyncOneChange is the reconciler's own cost of one changed
// destination in a table of 1,000 services of 10 destinations (the
// kernel's share is measured in the guest, integration/ipvs).
func BenchmarkSyncOneChange(b *testing.B) {
	want := bigTable(1000, 10)
	k := kernel(b, ipvs.Table{})
	r := ipvs.NewReconciler(k)
	if _, err := r.Sync(want); err != nil {
		b.Fatal(err)
	}
	key := want.Keys()[500]
	d := want[key].SortedDests()[3]
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		d.Weight = int32(i % 2)
		want[key].AddDest(d)
		if res, err := r.Sync(want); err != nil || len(res.Ops) != 1 {
			b.Fatalf("%v, %d ops", err, len(res.Ops))
		}
	}
}

// BenchmarkSyncServicesOneChange is the same change through SyncServices,
// which diffs the changed service alone.
func BenchmarkSyncServicesOneChange(b *testing.B) {
	want := bigTable(1000, 10)
	k := kernel(b, ipvs.Table{})
	r := ipvs.NewReconciler(k)
	if _, err := r.Sync(want); err != nil {
		b.Fatal(err)
	}
	key := want.Keys()[500]
	keys := []ipvs.ServiceKey{key}
	d := want[key].SortedDests()[3]
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		d.Weight = int32(i % 2)
		want[key].AddDest(d)
		if res, err := r.SyncServices(want, keys); err != nil || len(res.Ops) != 1 {
			b.Fatalf("%v, %d ops", err, len(res.Ops))
		}
	}
}

// BenchmarkDiffIntoEmpty is the start's diff: 1,000 services of 10
// destinations against an empty kernel, 11,000 operations.
func BenchmarkDiffIntoEmpty(b *testing.B) {
	want := bigTable(1000, 10)
	b.ReportAllocs()
	for b.Loop() {
		if ops := ipvs.Diff(want, ipvs.Table{}, nil); len(ops) != 11000 {
			b.Fatalf("%d ops", len(ops))
		}
	}
}

// TestFailedServices: Apply's joined errors name the services whose
// operations failed; an error of no operation's makes the set unknown.
func TestFailedServices(t *testing.T) {
	a := ipvs.Op{Kind: ipvs.DelDest, Service: ipvs.Service{ServiceKey: ipvs.AddrKey(ipvs.TCP, netip.MustParseAddrPort("192.0.2.1:80"))}}
	b := ipvs.Op{Kind: ipvs.AddService, Service: ipvs.Service{ServiceKey: ipvs.AddrKey(ipvs.TCP, netip.MustParseAddrPort("192.0.2.2:80"))}}
	failed, known := ipvs.FailedServices(errors.Join(ipvs.OpError(&a, syscall.ENOMEM), fmt.Errorf("batch: %w", ipvs.OpError(&b, syscall.EINVAL))))
	if !known || len(failed) != 2 || !failed[a.Service.ServiceKey] || !failed[b.Service.ServiceKey] {
		t.Errorf("two operations' errors: %v, known %v", failed, known)
	}
	if _, known := ipvs.FailedServices(errors.Join(ipvs.OpError(&a, syscall.ENOMEM), &ipvs.Error{Op: "list services", Err: syscall.EIO})); known {
		t.Error("with a dump's error: known")
	}
	if failed, known := ipvs.FailedServices(nil); !known || len(failed) != 0 {
		t.Errorf("nil: %v, %v", failed, known)
	}
}
