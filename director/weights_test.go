package director

import (
	"fmt"
	"math"
	"net/netip"
	"reflect"
	"testing"
	"testing/synctest"

	"github.com/directord/directord/config"
)

// weighVS is a virtual server of one real server 10.0.0.1:80 at weight
// 3 (and 10.0.0.2:80 at weight 2), with the options a row asks for.
func weighVS(inhibit bool, sorry string, sorryInhibit bool, quorum, hysteresis uint32) *config.VirtualServer {
	vs := &config.VirtualServer{Quorum: quorum, Hysteresis: hysteresis, RealServers: []*config.RealServer{
		{Addr: netip.MustParseAddrPort("10.0.0.1:80"), Weight: 3, InhibitOnFailure: inhibit},
		{Addr: netip.MustParseAddrPort("10.0.0.2:80"), Weight: 2},
	}}
	if sorry != "" {
		vs.SorryServer = &config.Sorry{Addr: netip.MustParseAddrPort(sorry), Inhibit: sorryInhibit}
	}
	return vs
}

// TestWeigh: every combination keepalived 2.2.7 distinguishes for a real
// server's place, each row with the code of keepalived's check/ipwrapper.c
// (iw) and check/ipvswrapper.c (ivw) it follows. The first real server
// (configured weight 3) is the one the row is about; the second is alive
// at weight 2 unless the row says otherwise.
func TestWeigh(t *testing.T) {
	out := Place{}
	in := func(w int) Place { return Place{In: true, Weight: w} }
	tests := []struct {
		name         string
		inhibit      bool   // inhibit_on_failure on the first
		sorry        string // sorry_server, "" for none
		sorryInhibit bool
		quorumUp     bool
		alive        bool // the first
		weight       int  // the checks' weight of the first (3, or misc_dynamic's)
		secondDead   bool
		drained      bool // the first is drained
		want         Place
		wantSorry    Place
		wantSum      int
	}{
		// perform_svr_state: without a sorry server every change is
		// made, quorum or not.
		{name: "alive, no sorry server, quorum up", quorumUp: true, alive: true, weight: 3, want: in(3), wantSum: 5},
		{name: "alive, no sorry server, quorum down", alive: true, weight: 3, want: in(3), wantSum: 5},
		// perform_svr_state DEL_DEST: a dead one leaves the table ...
		{name: "dead", quorumUp: true, weight: 3, want: out, wantSum: 2},
		// ... ipvs_cmd turns DEL_DEST into EDIT_DEST at weight 0 with
		// inhibit (ivw: "Does the service use inhibit flag ?").
		{name: "dead, inhibit_on_failure", inhibit: true, quorumUp: true, weight: 3, want: in(0), wantSum: 2},
		{name: "dead, inhibit_on_failure, quorum down, sorry in", inhibit: true, sorry: "10.0.0.99:80", weight: 3, want: in(0), wantSorry: in(1), wantSum: 2},
		// update_quorum_state, quorum lost with a sorry server:
		// perform_quorum_state(vs, false) removes the alive ones, the
		// sorry server goes in at its effective_weight, 1 (alloc_ssvr).
		{name: "alive, quorum down, sorry server", sorry: "10.0.0.99:80", alive: true, weight: 3, want: out, wantSorry: in(1), wantSum: 5},
		{name: "alive, inhibit_on_failure, quorum down, sorry server", inhibit: true, sorry: "10.0.0.99:80", alive: true, weight: 3, want: in(0), wantSorry: in(1), wantSum: 5},
		// Quorum won: the sorry server leaves (DEL_DEST) ...
		{name: "alive, quorum up, sorry server", sorry: "10.0.0.99:80", quorumUp: true, alive: true, weight: 3, want: in(3), wantSum: 5},
		// ... or stays at weight 0 with sorry_server_inhibit
		// (init_service_vs: num_failed_checkers = 1 for the ADD_DEST).
		{name: "alive, quorum up, sorry_server_inhibit", sorry: "10.0.0.99:80", sorryInhibit: true, quorumUp: true, alive: true, weight: 3, want: in(3), wantSorry: in(0), wantSum: 5},
		{name: "alive, quorum down, sorry_server_inhibit", sorry: "10.0.0.99:80", sorryInhibit: true, alive: true, weight: 3, want: out, wantSorry: in(1), wantSum: 5},
		// misc_dynamic: update_svr_wgt stores the new effective_weight,
		// the kernel gets real_weight of it, the quorum counts it.
		{name: "misc_dynamic weight", quorumUp: true, alive: true, weight: 200, want: in(200), wantSum: 202},
		{name: "misc_dynamic weight below 0 counts 0", quorumUp: true, alive: true, weight: -7, want: in(0), wantSum: 2},
		{name: "misc_dynamic weight above INT32_MAX", quorumUp: true, alive: true, weight: math.MaxInt32 + 10, want: in(math.MaxInt32), wantSum: math.MaxInt32 + 2},
		{name: "misc_dynamic weight of a dead one counts nothing", quorumUp: true, weight: 200, want: out, wantSum: 2},
		// weight 0: in the table at 0, nothing to the quorum
		// (weigh_live_realservers sums real_weight).
		{name: "weight 0", quorumUp: true, alive: true, weight: 0, want: in(0), wantSum: 2},
		{name: "weight 0, everything dead", quorumUp: true, alive: true, weight: 0, secondDead: true, want: in(0), wantSum: 0},
		// drain (directord's own, no keepalived counterpart): weight 0
		// in the table and in the quorum's sum; it moves nothing else.
		{name: "drained", quorumUp: true, alive: true, weight: 3, drained: true, want: in(0), wantSum: 2},
		{name: "drained, misc_dynamic weight", quorumUp: true, alive: true, weight: 200, drained: true, want: in(0), wantSum: 2},
		{name: "drained and dead", quorumUp: true, weight: 3, drained: true, want: out, wantSum: 2},
		{name: "drained and dead, inhibit_on_failure", inhibit: true, quorumUp: true, weight: 3, drained: true, want: in(0), wantSum: 2},
		{name: "drained, quorum down, sorry server", sorry: "10.0.0.99:80", alive: true, weight: 3, drained: true, want: out, wantSorry: in(1), wantSum: 2},
		// s_svr_duplicates_rs: a sorry server that is also a real server
		// (same address and port) is never added while the quorum holds
		// (init_service_vs sets it without ADD_DEST): the address's
		// entry is the real server's; it takes the address at weight 1
		// when the quorum is lost.
		{name: "sorry server is the real server, inhibit, quorum up", sorry: "10.0.0.1:80", sorryInhibit: true, quorumUp: true, alive: true, weight: 3, want: in(3), wantSum: 5},
		{name: "sorry server is the real server, quorum down", sorry: "10.0.0.1:80", alive: true, weight: 3, want: out, wantSorry: in(1), wantSum: 5},
		{name: "sorry server is the real server, both inhibit, dead, quorum up", inhibit: true, sorry: "10.0.0.1:80", sorryInhibit: true, quorumUp: true, weight: 3, want: in(0), wantSum: 2},
		// check_data.c gives the sorry server the real server's inhibit
		// ("matches sorry server, but inhibit setting differs"): without
		// inhibit_on_failure, a dead one leaves no entry at all.
		{name: "sorry server is a dead real server without inhibit_on_failure, sorry_server_inhibit, quorum up", sorry: "10.0.0.1:80", sorryInhibit: true, quorumUp: true, weight: 3, want: out, wantSum: 2},
		{name: "sorry server is the real server, inhibit_on_failure only, quorum down", inhibit: true, sorry: "10.0.0.1:80", alive: true, weight: 3, want: in(0), wantSorry: in(1), wantSum: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vs := weighVS(tt.inhibit, tt.sorry, tt.sorryInhibit, 4, 0)
			health := []RealState{NewRealState(tt.alive, tt.weight), {Alive: !tt.secondDead, Weight: 2}}
			var drained map[netip.AddrPort]bool
			if tt.drained {
				drained = map[netip.AddrPort]bool{vs.RealServers[0].Addr: true}
			}
			got := Weigh(vs, health, drained, tt.quorumUp)
			second := Place{}
			if !tt.secondDead && (tt.quorumUp || tt.sorry == "") {
				second = in(2)
			}
			if got.Reals[0] != tt.want || got.Reals[1] != second || got.Sorry != tt.wantSorry || got.Sum != tt.wantSum {
				t.Errorf("got reals %+v sorry %+v sum %d\nwant reals [%+v %+v] sorry %+v sum %d",
					got.Reals, got.Sorry, got.Sum, tt.want, second, tt.wantSorry, tt.wantSum)
			}
			if dup := tt.sorry == "10.0.0.1:80"; got.SorryYields != (tt.sorryInhibit && tt.quorumUp && !dup) {
				t.Errorf("SorryYields %v", got.SorryYields)
			}
		})
	}
}

// TestWeighMissingHealth: a real server the checks have not spoken of
// counts as alive at its configured weight.
func TestWeighMissingHealth(t *testing.T) {
	got := Weigh(weighVS(false, "", false, 1, 0), nil, nil, true)
	want := Weights{Reals: []Place{{In: true, Weight: 3}, {In: true, Weight: 2}}, Sum: 5}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

// TestQuorumStep: keepalived's update_quorum_state (threshold quorum +
// hysteresis to win, quorum - hysteresis to lose, lost at 0 whatever the
// threshold) and its init case (init_service_vs at the start and at each
// reload: news when the sorry server goes in).
func TestQuorumStep(t *testing.T) {
	tests := []struct {
		name             string
		quorum, hyst     uint32
		sorry            bool
		up, init         bool
		sorryIn          bool
		sum              int
		wantUp, wantNews bool
	}{
		{"start, won", 4, 0, false, false, true, false, 4, true, true},
		{"start, won only at quorum+hysteresis", 4, 1, false, false, true, false, 4, false, false},
		{"start, won at quorum+hysteresis", 4, 1, false, false, true, false, 5, true, true},
		{"start without quorum, no sorry server: silent", 4, 0, false, false, true, false, 3, false, false},
		{"start without quorum, sorry server: Starting with quorum down", 4, 0, true, false, true, false, 3, false, true},
		{"start at 0, sorry server", 1, 0, true, false, true, false, 0, false, true},
		{"up, kept at quorum-hysteresis", 4, 1, false, true, false, false, 3, true, false},
		{"up, lost below quorum-hysteresis", 4, 1, false, true, false, false, 2, false, true},
		{"up, lost at 0", 1, 0, false, true, false, false, 0, false, true},
		{"down, not yet at quorum+hysteresis", 4, 1, true, false, false, false, 4, false, false},
		{"down, won", 4, 1, true, false, false, false, 5, true, true},
		{"down, stays down: no news", 4, 0, true, false, false, false, 1, false, false},
		{"up, stays up: no news", 4, 0, true, true, false, false, 9, true, false},
		// A reload (init) keeps the state and moves it by the new
		// thresholds.
		{"reload, up, still above quorum-hysteresis", 4, 2, true, true, true, false, 3, true, false},
		{"reload, up, below the new quorum", 9, 0, true, true, true, false, 3, false, true},
		{"reload, down, the same sorry server in: silent", 4, 0, true, false, true, true, 3, false, false},
		{"reload, down, a new sorry server goes in", 4, 0, true, false, true, false, 3, false, true},
		{"reload, down, no sorry server: silent", 4, 0, false, false, true, false, 3, false, false},
		{"reload, down, won under the new quorum", 2, 0, true, false, true, true, 3, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vs := &config.VirtualServer{Quorum: tt.quorum, Hysteresis: tt.hyst}
			if tt.sorry {
				vs.SorryServer = &config.Sorry{Addr: netip.MustParseAddrPort("10.0.0.99:80")}
			}
			up, news := quorumStep(vs, tt.up, tt.init, tt.sorryIn, tt.sum)
			if up != tt.wantUp || news != tt.wantNews {
				t.Errorf("up %v news %v, want %v %v", up, news, tt.wantUp, tt.wantNews)
			}
		})
	}
}

// TestWantAndStatusAreQueries: asking for the table or the status moves
// no quorum state and runs no script; the quorum scripts run at the
// transitions (the start, a verdict, a drain).
func TestWantAndStatusAreQueries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := parse(t, quorumConf("    quorum_up /bin/up\n    quorum_down /bin/down\n"))
		l := newLVS(t, cfg, newFakeKernel())
		var ran []string
		l.Notify = func(s *config.Script) { ran = append(ran, s.Command) }
		for range 3 {
			l.Want()
		}
		if len(ran) != 0 || !l.pools[0].init {
			t.Fatalf("Want before Run ran %q, stepped %v: a query moved the quorum", ran, !l.pools[0].init)
		}
		ctx, stop := running(t, l)
		if _, _, err := l.Status(ctx); err != nil {
			t.Fatal(err)
		}
		if want := []string{"/bin/up"}; !reflect.DeepEqual(ran, want) {
			t.Errorf("at the start %q, want %q", ran, want)
		}
		if err := l.Drain(ctx, netip.MustParseAddrPort("10.0.0.2:80"), true); err != nil {
			t.Fatal(err)
		}
		// The drain's transition, before any sync: the script is queued
		// by the time Drain returns.
		if want := []string{"/bin/up", "/bin/down"}; !reflect.DeepEqual(ran, want) {
			t.Errorf("after the drain %q, want %q", ran, want)
		}
		for range 3 {
			if _, _, err := l.Status(ctx); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		if want := []string{"/bin/up", "/bin/down"}; !reflect.DeepEqual(ran, want) {
			t.Errorf("after status and the resync %q, want %q", ran, want)
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestLVSReloadKeepsQuorumAsKeepalived: a virtual server that a reload
// keeps (the same address) keeps its quorum state, and the new quorum and
// hysteresis move it as keepalived's reload does (clear_diff_services
// copies quorum_state_up, then init_service_vs calls
// update_quorum_state): a hysteresis raised while the quorum holds moves
// nothing; a quorum raised above the sum loses it, once.
func TestLVSReloadKeepsQuorumAsKeepalived(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const base = `
virtual_server 192.0.2.1 80 {
    lb_algo rr
    lb_kind DR
    protocol TCP
    quorum %d
    hysteresis %d
    quorum_up /bin/up
    quorum_down /bin/down
    sorry_server 10.0.0.99 80
    real_server 10.0.0.1 80 {
        weight 1
    }
    real_server 10.0.0.2 80 {
        weight 2
    }
    real_server 10.0.0.3 80 {
        weight 3
        TCP_CHECK { }
    }
}
`
		k := newFakeKernel()
		l := newLVS(t, parse(t, fmt.Sprintf(base, 3, 0)), k)
		var ran []string
		l.Notify = func(s *config.Script) { ran = append(ran, s.Command) }
		ctx, stop := running(t, l)
		// 10.0.0.3 fails: 3 left, the quorum of 3 holds.
		l.Report(ctx, 0, 2, RealState{Alive: false, Weight: 3})
		synctest.Wait()
		down := []Seed{{Pool: 0, Real: 2, State: RealState{Alive: false, Weight: 3}}}
		reals := []string{"-A TCP 192.0.2.1:80 rr", "-a TCP 192.0.2.1:80 10.0.0.1:80 route 1", "-a TCP 192.0.2.1:80 10.0.0.2:80 route 2"}
		if got := k.lines(); !reflect.DeepEqual(got, reals) || !reflect.DeepEqual(ran, []string{"/bin/up"}) {
			t.Fatalf("at the start %q, scripts %q", got, ran)
		}
		// Sum 3, quorum 3, hysteresis 1: kept above 2, though a start
		// would need 4.
		if _, err := l.Reload(ctx, parse(t, fmt.Sprintf(base, 3, 1)), down); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := k.lines(); !reflect.DeepEqual(got, reals) || !reflect.DeepEqual(ran, []string{"/bin/up"}) {
			t.Errorf("hysteresis raised: %q, scripts %q; want the real servers and no script", got, ran)
		}
		// Quorum 5 (of 6) > 3: lost, the sorry server in, quorum_down once.
		for range 2 {
			if _, err := l.Reload(ctx, parse(t, fmt.Sprintf(base, 5, 0)), down); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
		}
		sorry := []string{"-A TCP 192.0.2.1:80 rr", "-a TCP 192.0.2.1:80 10.0.0.99:80 route 1"}
		if got := k.lines(); !reflect.DeepEqual(got, sorry) || !reflect.DeepEqual(ran, []string{"/bin/up", "/bin/down"}) {
			t.Errorf("quorum raised: %q, scripts %q; want the sorry server and quorum_down once", got, ran)
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestWeighMaglevHoldsItsTable: a virtual server of lvs_sched mh with
// mh-fallback keeps a real server keepalived would remove in the table at
// weight 0, with the weight its Maglev slots are built from; without
// mh-fallback, or with another scheduler, Weigh is keepalived's.
func TestWeighMaglevHoldsItsTable(t *testing.T) {
	vs := func(sched string, flags ...string) *config.VirtualServer {
		v := weighVS(false, "", false, 0, 0)
		v.Scheduler, v.SchedFlags = sched, flags
		return v
	}
	a := netip.MustParseAddrPort("10.0.0.1:80")
	tests := []struct {
		name    string
		vs      *config.VirtualServer
		first   RealState
		drained bool
		want    Place
	}{
		{"mh-fallback, alive", vs("mh", "mh-fallback"), RealState{Alive: true, Weight: 3}, false, Place{In: true, Weight: 3, TableWeight: 3}},
		{"mh-fallback, dead: held at 0", vs("mh", "mh-fallback", "mh-port"), RealState{Weight: 3}, false, Place{In: true, TableWeight: 3}},
		{"flag-1 is mh-fallback", vs("mh", "flag-1"), RealState{Weight: 3}, false, Place{In: true, TableWeight: 3}},
		{"mh-fallback, drained", vs("mh", "mh-fallback"), RealState{Alive: true, Weight: 3}, true, Place{In: true, TableWeight: 3}},
		{"mh-fallback, misc_dynamic 0: the configured weight", vs("mh", "mh-fallback"), RealState{Alive: true, Weight: 0}, false, Place{In: true, TableWeight: 3}},
		{"mh-fallback, misc_dynamic 7", vs("mh", "mh-fallback"), RealState{Alive: true, Weight: 7}, false, Place{In: true, Weight: 7, TableWeight: 7}},
		{"mh without mh-fallback, dead: removed", vs("mh", "mh-port"), RealState{Weight: 3}, false, Place{}},
		{"sh with sh-fallback, dead: removed", vs("sh", "sh-fallback"), RealState{Weight: 3}, false, Place{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			drained := map[netip.AddrPort]bool{a: tt.drained}
			w := Weigh(tt.vs, []RealState{tt.first, {Alive: true, Weight: 2}}, drained, true)
			if w.Reals[0] != tt.want {
				t.Errorf("first: %+v, want %+v", w.Reals[0], tt.want)
			}
		})
	}
}
