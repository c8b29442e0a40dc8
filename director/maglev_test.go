package director

import (
	"log/slog"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/directord/directord/ipvs"
)

const maglevConf = `
virtual_server 192.0.2.1 80 {
    lvs_sched mh
    mh-fallback
    mh-port
    lb_kind DR
    protocol TCP
    real_server 10.0.0.3 80 {
    }
    real_server 10.0.0.1 80 {
        weight 2
    }
    real_server 10.0.0.2 80 {
    }
}
`

// kernelOrder is the kernel's list of the service's destinations, as it
// dumps them (the order the mh table is filled in), with their weights.
func kernelOrder(t *testing.T, k *fakeKernel) string {
	t.Helper()
	ds, err := k.Destinations(ipvs.AddrKey(ipvs.TCP, netip.MustParseAddrPort("192.0.2.1:80")))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range ds {
		out = append(out, d.AddrPort().String()+"="+strconv.Itoa(int(d.Weight)))
	}
	return strings.Join(out, " ")
}

// TestLVSMaglevAgreesWhateverTheHistory: a director that adopts a table
// built in another order (keepalived's, or ipvsadm -R's) and one that
// starts on an empty kernel end with the same list; a failed real server
// goes to weight 0 in place, its slots kept (added at its weight, then set
// to 0, on a director that starts while it is down); a real server
// removed from the configuration is removed alone.
func TestLVSMaglevAgreesWhateverTheHistory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		adopted, fresh := newFakeKernel(), newFakeKernel()
		// The other history: the same servers added by address, so the
		// kernel lists them backwards.
		l0, err := NewLVS(parse(t, maglevConf), newFakeKernel(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := adopted.Load(l0.Want()); err != nil {
			t.Fatal(err)
		}
		l0.Close()
		// ... and 10.0.0.1 flapped.
		flap := l0.Want()[ipvs.AddrKey(ipvs.TCP, netip.MustParseAddrPort("192.0.2.1:80"))]
		one, _ := flap.Dest(ipvs.DestKey{Addr: netip.MustParseAddr("10.0.0.1"), Port: 80})
		if err := adopted.Apply([]ipvs.Op{{Kind: ipvs.DelDest, Service: flap.Service, Dest: one}, {Kind: ipvs.AddDest, Service: flap.Service, Dest: one}}); err != nil {
			t.Fatal(err)
		}
		if got := kernelOrder(t, adopted); got != "10.0.0.1:80=2 10.0.0.3:80=1 10.0.0.2:80=1" {
			t.Fatalf("the other history: %s", got)
		}
		const want = "10.0.0.3:80=1 10.0.0.2:80=1 10.0.0.1:80=2"
		var ls []*LVS
		var stops []func() error
		logs := &records{}
		for _, k := range []*fakeKernel{adopted, fresh} {
			l, err := NewLVS(parse(t, maglevConf), k, slog.New(logs))
			if err != nil {
				t.Fatal(err)
			}
			_, stop := running(t, l)
			ls, stops = append(ls, l), append(stops, stop)
			if got := kernelOrder(t, k); got != want {
				t.Errorf("programmed: %s, want %s", got, want)
			}
		}
		// The adopted table's repair is logged, once; the fresh one's
		// programming is no repair.
		var repairs []string
		logs.mu.Lock()
		for _, r := range logs.rs {
			if strings.Contains(r.Message, "put back in their order") {
				r.Attrs(func(a slog.Attr) bool {
					repairs = append(repairs, a.Key+"="+a.Value.String())
					return true
				})
			}
		}
		logs.mu.Unlock()
		if got := strings.Join(repairs, " "); got != "service=TCP 192.0.2.1:80 moved=2" {
			t.Errorf("repairs logged: %q, want the adopted one's: 1 stays at the tail, 3 and 2 go before it", got)
		}
		k := fresh
		// 10.0.0.1 fails: weight 0, in its place; and comes back.
		applied := len(k.Applied())
		ls[1].Report(t.Context(), 0, 1, RealState{Alive: false, Weight: 2})
		synctest.Wait()
		if got := kernelOrder(t, k); got != "10.0.0.3:80=1 10.0.0.2:80=1 10.0.0.1:80=0" {
			t.Errorf("after 10.0.0.1 failed: %s", got)
		}
		ops := k.Applied()[applied:]
		if len(ops) != 1 || ops[0].Kind != ipvs.EditDest {
			t.Errorf("a failure's operations %v, want one edit", ops)
		}
		ls[1].Report(t.Context(), 0, 1, RealState{Alive: true, Weight: 2})
		synctest.Wait()
		if got := kernelOrder(t, k); got != want {
			t.Errorf("after 10.0.0.1 came back: %s", got)
		}

		// A director that starts while 10.0.0.2 is down adds it at its
		// weight, then sets it to 0: the kernel's table keeps its slots.
		late := newFakeKernel()
		l, err := NewLVS(parse(t, strings.Replace(maglevConf, "real_server 10.0.0.2 80 {\n", "real_server 10.0.0.2 80 {\n        alpha\n        TCP_CHECK {\n        }\n", 1)), late, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, stop := running(t, l)
		stops = append(stops, stop)
		if got := kernelOrder(t, late); got != "10.0.0.3:80=1 10.0.0.2:80=0 10.0.0.1:80=2" {
			t.Errorf("started with 10.0.0.2 down: %s", got)
		}
		var up bool
		for _, o := range late.Applied() {
			if o.Kind == ipvs.AddDest && o.Dest.Addr == netip.MustParseAddrPort("10.0.0.2:80").Addr() {
				up = o.Dest.Weight == 1
			}
		}
		if !up {
			t.Errorf("10.0.0.2 was not added at its weight: %v", late.Applied())
		}

		// 10.0.0.2 leaves the configuration: one removal.
		applied = len(k.Applied())
		if _, err := ls[1].Reload(t.Context(), parse(t, strings.Replace(maglevConf, "real_server 10.0.0.2 80 {\n    }\n", "", 1)), nil); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := kernelOrder(t, k); got != "10.0.0.3:80=1 10.0.0.1:80=2" {
			t.Errorf("after 10.0.0.2 was removed: %s", got)
		}
		if ops := k.Applied()[applied:]; len(ops) != 1 || ops[0].Kind != ipvs.DelDest {
			t.Errorf("a removal's operations %v, want one deletion", ops)
		}
		for _, stop := range slices.Backward(stops) {
			stop()
		}
	})
}
