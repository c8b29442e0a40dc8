package gobgp

import (
	"context"
	"log/slog"
	"net/netip"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/apiutil"
	gbgp "github.com/osrg/gobgp/v4/pkg/packet/bgp"

	"github.com/directord/directord/bgp"
	"github.com/directord/directord/config"
)

// TestGoBGPConfigure runs the real GoBGP server in this process, its
// neighbors on loopback addresses where nothing answers (no packet leaves
// the host), and checks that Configure adds, removes and replaces only
// what changed, and that announces and withdraws are idempotent.
func TestGoBGPConfigure(t *testing.T) {
	ctx := context.Background()
	nb := func(addr string, as uint32) *config.Neighbor {
		return &config.Neighbor{Addr: netip.MustParseAddr(addr), RemoteAS: as, HoldTime: config.DefaultHoldTime, Port: 1, Passive: true}
	}
	cfg := &config.BGP{LocalAS: 65010, RouterID: netip.MustParseAddr("192.0.2.1"), ListenPort: -1,
		Neighbors: []*config.Neighbor{nb("127.0.0.2", 65000), nb("127.0.0.3", 65000)}}
	g := New(nil)
	if err := g.Start(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	defer g.Stop(ctx)
	list := func() []string {
		t.Helper()
		ns, err := g.Neighbors(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, n := range ns {
			out = append(out, n.Addr.String()) // the state depends on timing
		}
		slices.Sort(out)
		return out
	}
	if got := list(); !slices.Equal(got, []string{"127.0.0.2", "127.0.0.3"}) {
		t.Errorf("neighbors %v", got)
	}
	// One removed, one added, one changed (its AS), with communities on it.
	changed := nb("127.0.0.3", 65001)
	changed.Communities = []string{"65010:1"}
	med := uint32(5)
	changed.MED = &med
	next := &config.BGP{LocalAS: 65010, RouterID: cfg.RouterID, ListenPort: -1,
		Neighbors: []*config.Neighbor{changed, nb("127.0.0.4", 65000)}}
	if err := g.Configure(ctx, next); err != nil {
		t.Fatal(err)
	}
	ns, _ := g.Neighbors(ctx)
	got := map[netip.Addr]uint32{}
	for _, n := range ns {
		got[n.Addr] = n.RemoteAS
	}
	want := map[netip.Addr]uint32{netip.MustParseAddr("127.0.0.3"): 65001, netip.MustParseAddr("127.0.0.4"): 65000}
	if len(got) != len(want) || got[netip.MustParseAddr("127.0.0.3")] != 65001 || got[netip.MustParseAddr("127.0.0.4")] != 65000 {
		t.Errorf("after Configure: %v, want %v", got, want)
	}
	// The same again: nothing to do, no error (the policy unchanged).
	if err := g.Configure(ctx, next); err != nil {
		t.Fatal(err)
	}
	for _, p := range []netip.Prefix{netip.MustParsePrefix("10.1.0.100/32"), netip.MustParsePrefix("2001:db8::100/128")} {
		for range 2 {
			if err := g.Announce(ctx, p); err != nil {
				t.Fatalf("announce %s: %v", p, err)
			}
		}
		for range 2 {
			if err := g.Withdraw(ctx, p); err != nil {
				t.Fatalf("withdraw %s: %v", p, err)
			}
		}
	}
}

func TestMinLevel(t *testing.T) {
	var b strings.Builder
	lvl := &slog.LevelVar{}
	lvl.Set(slog.LevelWarn)
	log := slog.New(minLevel{slog.NewTextHandler(&b, nil), lvl}).With("component", "gobgp")
	log.Info("Add a peer configuration")
	log.Warn("failed to add BFD peer")
	if out := b.String(); strings.Contains(out, "Add a peer") || !strings.Contains(out, "failed to add BFD peer") || !strings.Contains(out, "component=gobgp") {
		t.Errorf("logged:\n%s", out)
	}
}

// TestBFDFollowsSession: a neighbor with BFD is added with GoBGP's BFD
// off, shown "down"; its session seen Established turns it on, seen
// down turns it off again (bfdFollow). The events are given by hand:
// the neighbor, on loopback, never answers.
func TestBFDFollowsSession(t *testing.T) {
	ctx := context.Background()
	a := netip.MustParseAddr("127.0.0.2")
	n := &config.Neighbor{Addr: a, RemoteAS: 65000, HoldTime: config.DefaultHoldTime, Port: 1, Passive: true,
		BFD: &config.BFD{Interval: 100 * time.Millisecond, Multiplier: 3}}
	g := New(nil)
	// The real session's own events are waited out first: passive, with
	// nothing connecting, it goes Active and stays.
	active := make(chan struct{})
	var once sync.Once
	g.OnSession = func(e bgp.SessionEvent) {
		if e.State == bgp.Active {
			once.Do(func() { close(active) })
		}
	}
	if err := g.Start(ctx, &config.BGP{LocalAS: 65010, RouterID: netip.MustParseAddr("192.0.2.1"), ListenPort: -1,
		Neighbors: []*config.Neighbor{n}}); err != nil {
		t.Fatal(err)
	}
	defer g.Stop(ctx)
	enabled := func() bool {
		t.Helper()
		on := false
		if err := g.s.ListPeer(ctx, &api.ListPeerRequest{Address: a.String()}, func(p *api.Peer) {
			on = p.Bfd != nil && p.Bfd.Enabled
		}); err != nil {
			t.Fatal(err)
		}
		return on
	}
	select {
	case <-active:
	case <-time.After(30 * time.Second):
		t.Fatal("the passive session not Active within 30s")
	}
	if enabled() {
		t.Errorf("BFD on before the session is up")
	}
	if ns, _ := g.Neighbors(ctx); len(ns) != 1 || ns[0].BFD != "down" {
		t.Errorf("neighbors %+v, want one with BFD down", ns)
	}
	event := func(st gbgp.FSMState) {
		g.peerEvent(&apiutil.WatchEventMessage_PeerEvent{Type: apiutil.PEER_EVENT_STATE,
			Peer: apiutil.Peer{State: apiutil.PeerState{NeighborAddress: a, SessionState: st}}}, time.Time{})
	}
	// bfdFollow acts on its own goroutine: waited for, within a bound a
	// busy machine cannot reach (it is one UpdatePeer).
	waitBFD := func(want bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); enabled() != want; {
			if time.Now().After(deadline) {
				t.Fatalf("BFD on: %v, want %v", !want, want)
			}
			runtime.Gosched()
		}
	}
	event(gbgp.BGP_FSM_ESTABLISHED)
	waitBFD(true)
	event(gbgp.BGP_FSM_IDLE)
	waitBFD(false)
}
