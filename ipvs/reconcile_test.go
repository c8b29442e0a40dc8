package ipvs

import (
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"testing"
	"time"
)

// memKernel is a kernel table in memory that behaves as IPVS does for
// the operations the reconciler sends.
type memKernel struct {
	t       Table
	reads   int
	applied []Op
	fail    func(*Op) error
}

func (k *memKernel) Services() ([]Service, error) {
	k.reads++
	var out []Service
	for _, key := range k.t.Keys() {
		s := k.t[key].Service
		s.Flags |= Hashed // as the kernel reports them
		out = append(out, s)
	}
	return out, nil
}

func (k *memKernel) Destinations(key ServiceKey) ([]Destination, error) {
	vs, ok := k.t[key]
	if !ok {
		return nil, &Error{Op: "list destinations of", Object: key.String(), Err: errors.New("no such service")}
	}
	return vs.SortedDests(), nil
}

func (k *memKernel) Apply(ops []Op) error {
	var errs []error
	for i := range ops {
		o := &ops[i]
		if k.fail != nil {
			if err := k.fail(o); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		_, exists := k.t[o.Service.ServiceKey]
		switch {
		case o.Kind == AddService && exists:
			errs = append(errs, fmt.Errorf("%s: exists", o))
			continue
		case o.Kind != AddService && !exists:
			errs = append(errs, fmt.Errorf("%s: no such service", o))
			continue
		}
		k.applied = append(k.applied, *o)
		k.t.Patch(o)
	}
	return errors.Join(errs...)
}

func svc(addr string, sched string) Service {
	return Service{ServiceKey: AddrKey(TCP, netip.MustParseAddrPort(addr)), Scheduler: sched}
}

func dest(addr string, weight int32) Destination {
	ap := netip.MustParseAddrPort(addr)
	return Destination{Addr: ap.Addr(), Port: ap.Port(), Forward: Route, Weight: weight}
}

// table builds a Table from services and their destinations.
func table(entries ...any) Table {
	t := Table{}
	var vs *VirtualService
	for _, e := range entries {
		switch e := e.(type) {
		case Service:
			vs = t.Add(e)
		case Destination:
			vs.AddDest(e)
		}
	}
	return t
}

func kinds(ops []Op) []string {
	var out []string
	for _, o := range ops {
		out = append(out, o.String())
	}
	return out
}

func TestSyncFromEmptyThenIdempotent(t *testing.T) {
	k := &memKernel{t: Table{}}
	r := NewReconciler(k, nil)
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
	s.Flags, s.Timeout = Persistent, 5*time.Minute
	ks := s
	ks.Netmask, ks.Stats = 32, Stats{Connections: 12345}
	nat := dest("192.0.2.1:8080", 1)
	nat.Forward = Masquerade
	knat := nat
	knat.Forward, knat.ActiveConns = Local, 7
	kd := dest("10.0.0.1:80", 3)
	kd.ActiveConns, kd.Stats = 10, Stats{BytesIn: 1 << 40}
	k := &memKernel{t: table(ks, kd, knat)}
	r := NewReconciler(k, nil)
	res, err := r.Sync(table(s, dest("10.0.0.1:80", 3), nat))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Read || len(res.Ops) != 0 {
		t.Errorf("adoption: read %v, ops %q: want a read and no op", res.Read, kinds(res.Ops))
	}
}

func TestSyncChangesOnlyWhatDiffers(t *testing.T) {
	base := func() Table {
		return table(svc("192.0.2.1:80", "rr"), dest("10.0.0.1:80", 1), dest("10.0.0.2:80", 1),
			svc("192.0.2.1:443", "rr"), dest("10.0.0.1:443", 1))
	}
	tests := []struct {
		name   string
		change func(Table)
		want   []string
	}{
		{"weight", func(t Table) {
			t[AddrKey(TCP, netip.MustParseAddrPort("192.0.2.1:80"))].AddDest(dest("10.0.0.2:80", 0))
		}, []string{"edit destination 10.0.0.2:80 of TCP 192.0.2.1:80 (route, weight 0)"}},
		{"scheduler keeps destinations", func(t Table) {
			t[AddrKey(TCP, netip.MustParseAddrPort("192.0.2.1:443"))].Scheduler = "wlc"
		}, []string{"edit service TCP 192.0.2.1:443 (wlc)"}},
		{"swap adds before it removes", func(t Table) {
			vs := t[AddrKey(TCP, netip.MustParseAddrPort("192.0.2.1:443"))]
			delete(vs.Dests, DestKey{netip.MustParseAddr("10.0.0.1"), 443})
			vs.AddDest(dest("10.0.0.3:443", 1))
		}, []string{
			"add destination 10.0.0.3:443 of TCP 192.0.2.1:443 (route, weight 1)",
			"delete destination 10.0.0.1:443 of TCP 192.0.2.1:443",
		}},
		{"service gone", func(t Table) {
			delete(t, AddrKey(TCP, netip.MustParseAddrPort("192.0.2.1:443")))
		}, []string{"delete service TCP 192.0.2.1:443"}},
		{"threshold", func(t Table) {
			d := dest("10.0.0.1:80", 1)
			d.UpperThreshold = 100
			t[AddrKey(TCP, netip.MustParseAddrPort("192.0.2.1:80"))].AddDest(d)
		}, []string{"edit destination 10.0.0.1:80 of TCP 192.0.2.1:80 (route, weight 1)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := &memKernel{t: Table{}}
			r := NewReconciler(k, nil)
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
	k := &memKernel{t: table(foreign, dest("10.9.9.9:25", 1))}
	r := NewReconciler(k, nil)
	if _, err := r.Sync(table(svc("192.0.2.1:80", "rr"))); err != nil {
		t.Fatal(err)
	}
	// A reload that drops our service deletes it, and only it.
	res, err := r.Sync(Table{})
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(res.Ops); !reflect.DeepEqual(got, []string{"delete service TCP 192.0.2.1:80"}) {
		t.Errorf("ops %q", got)
	}
	if _, ok := k.t[foreign.ServiceKey]; !ok || len(k.t) != 1 {
		t.Errorf("kernel table %v: the foreign service must stay, alone", k.t.Keys())
	}
	// Once deleted, it is no longer ours: someone may add it by hand.
	k.t.Add(svc("192.0.2.1:80", "wrr"))
	r.Invalidate()
	if res, _ := r.Sync(Table{}); len(res.Ops) != 0 {
		t.Errorf("touched a service no longer ours: %q", kinds(res.Ops))
	}
}

func TestSyncRepairsOutOfBandChangesAfterInvalidate(t *testing.T) {
	k := &memKernel{t: Table{}}
	r := NewReconciler(k, nil)
	want := table(svc("192.0.2.1:80", "rr"), dest("10.0.0.1:80", 1), dest("10.0.0.2:80", 1))
	if _, err := r.Sync(want); err != nil {
		t.Fatal(err)
	}
	// ipvsadm -d, and -e on another.
	vs := k.t[AddrKey(TCP, netip.MustParseAddrPort("192.0.2.1:80"))]
	delete(vs.Dests, DestKey{netip.MustParseAddr("10.0.0.1"), 80})
	vs.AddDest(dest("10.0.0.2:80", 9))
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
	k := &memKernel{t: Table{}}
	broken := true
	k.fail = func(o *Op) error {
		if broken && o.Kind == AddDest && o.Dest.Addr == netip.MustParseAddr("10.0.0.2") {
			return errors.New("out of memory")
		}
		return nil
	}
	r := NewReconciler(k, nil)
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
func bigTable(n, m int) Table {
	t := Table{}
	for i := range n {
		vs := t.Add(Service{ServiceKey: AddrKey(TCP, netip.AddrPortFrom(
			netip.AddrFrom4([4]byte{10, 255, byte(i >> 8), byte(i)}), 80)), Scheduler: "wrr"})
		for j := range m {
			vs.AddDest(Destination{Addr: netip.AddrFrom4([4]byte{10, byte(j), byte(i >> 8), byte(i)}),
				Port: 80, Forward: Route, Weight: 100})
		}
	}
	return t
}

func TestDiffOfOneChangeInABigTable(t *testing.T) {
	want := bigTable(1000, 10)
	k := &memKernel{t: Table{}}
	r := NewReconciler(k, nil)
	if res, err := r.Sync(want); err != nil || len(res.Ops) != 11000 {
		t.Fatalf("%v, %d ops", err, len(res.Ops))
	}
	key := want.Keys()[500]
	d := want[key].SortedDests()[3]
	d.Weight = 0
	want[key].AddDest(d)
	res, err := r.Sync(want)
	if err != nil || len(res.Ops) != 1 || res.Ops[0].Kind != EditDest || res.Ops[0].Dest != d {
		t.Fatalf("%v, %q", err, kinds(res.Ops))
	}
	if slices.ContainsFunc(k.applied[11000:], func(o Op) bool { return o.Kind != EditDest }) {
		t.Error("more than the edit reached the kernel")
	}
}

func TestSyncServicesTouchesOnlyThem(t *testing.T) {
	k := &memKernel{t: Table{}}
	r := NewReconciler(k, nil)
	want := table(svc("192.0.2.1:80", "rr"), dest("10.0.0.1:80", 1),
		svc("192.0.2.1:443", "rr"), dest("10.0.0.1:443", 1))
	if _, err := r.Sync(want); err != nil {
		t.Fatal(err)
	}
	k80 := AddrKey(TCP, netip.MustParseAddrPort("192.0.2.1:80"))
	k443 := AddrKey(TCP, netip.MustParseAddrPort("192.0.2.1:443"))
	want[k80].AddDest(dest("10.0.0.1:80", 5))
	want[k443].AddDest(dest("10.0.0.1:443", 5))
	res, err := r.SyncServices(want, []ServiceKey{k80})
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(res.Ops); !reflect.DeepEqual(got, []string{"edit destination 10.0.0.1:80 of TCP 192.0.2.1:80 (route, weight 5)"}) {
		t.Errorf("ops %q", got)
	}
	// A key want lacks: its service goes, being ours.
	delete(want, k443)
	res, err = r.SyncServices(want, []ServiceKey{k443})
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
	k := &memKernel{t: Table{}}
	r := NewReconciler(k, nil)
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
	k := &memKernel{t: Table{}}
	r := NewReconciler(k, nil)
	if _, err := r.Sync(want); err != nil {
		b.Fatal(err)
	}
	key := want.Keys()[500]
	keys := []ServiceKey{key}
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
