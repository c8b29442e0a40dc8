package bgp

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/directord/directord/config"
)

func TestStartOnly(t *testing.T) {
	rid := netip.MustParseAddr("10.0.0.11")
	derived := &config.BGP{LocalAS: 65010, ListenPort: 179}
	given := &config.BGP{LocalAS: 65010, ListenPort: 179, RouterID: rid}
	src := netip.MustParseAddr("10.0.0.21")
	viaSource := []*config.Neighbor{{Addr: netip.MustParseAddr("10.0.0.1"), SourceAddress: src}}
	for _, tc := range []struct {
		name     string
		old      *config.BGP
		next     config.BGP
		want     string
		wantRID  netip.Addr
		neighbor bool
	}{
		{"same", derived, config.BGP{LocalAS: 65010, ListenPort: 179}, "", rid, false},
		{"the derived router_id written out", derived, config.BGP{LocalAS: 65010, ListenPort: 179, RouterID: rid}, "", rid, false},
		{"derived stays derived", derived, config.BGP{LocalAS: 65010, ListenPort: 179}, "", rid, true},
		{"router_id removed: derived again", given, config.BGP{LocalAS: 65010, ListenPort: 179}, "router_id", src, true},
		{"local_as", given, config.BGP{LocalAS: 4200000000, ListenPort: 179, RouterID: rid}, "local_as", rid, false},
		{"all", derived, config.BGP{LocalAS: 65011, ListenPort: -1, RouterID: netip.MustParseAddr("10.0.0.12")}, "local_as, router_id, listen_port", netip.MustParseAddr("10.0.0.12"), false},
	} {
		next := tc.next
		if tc.neighbor {
			next.Neighbors = viaSource
		}
		got, gotRID, err := StartOnly(tc.old, &next, rid)
		if err != nil || got != tc.want || gotRID != tc.wantRID {
			t.Errorf("%s: %q %s %v, want %q %s", tc.name, got, gotRID, err, tc.want, tc.wantRID)
		}
	}
}

// restartSpeaker is a fakeSpeaker that records its starts and stops, and
// refuses to start with failAS.
type restartSpeaker struct {
	fakeSpeaker
	failAS uint32
}

func (s restartSpeaker) Start(_ context.Context, c *config.BGP) error {
	if c.LocalAS == s.failAS {
		s.w.rec("start AS %d failed", c.LocalAS)
		return errors.New("refused")
	}
	s.w.rec("start AS %d router_id %s", c.LocalAS, c.RouterID)
	return nil
}
func (s restartSpeaker) Configure(_ context.Context, c *config.BGP) error {
	s.w.rec("configure %d neighbors", len(c.Neighbors))
	return nil
}
func (s restartSpeaker) Stop(context.Context) error { s.w.rec("stop"); return nil }

// TestReconfigureRestarts: a reload that changes local_as withdraws every
// route before the speaker stops, keeps the addresses, starts the speaker
// under the new identity and announces again; one that changes only the
// neighbors configures them and withdraws nothing; one whose new
// settings do not start runs the old ones again.
func TestReconfigureRestarts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &fakeWorld{}
		sp := restartSpeaker{fakeSpeaker: fakeSpeaker{w}, failAS: 65099}
		a := NewAnnouncer(sp, fakeAddrs{w}, 2*time.Second, nil)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go a.Run(ctx)
		rid := netip.MustParseAddr("10.0.0.11")
		in := Inputs{Services: []Service{
			{Name: "TCP 192.0.2.1:80", Prefix: netip.MustParsePrefix("192.0.2.1/32"), Dev: "lo", Programmed: true, Quorum: true},
			{Name: "TCP 192.0.2.2:80", Prefix: netip.MustParsePrefix("192.0.2.2/32"), Dev: "lo", Programmed: true, Quorum: false},
		}}
		a.Wait(ctx, a.Set(in))
		w.restart()
		w.take()

		old := &config.BGP{LocalAS: 65010, RouterID: rid, ListenPort: 179}
		next := &config.BGP{LocalAS: 65011, RouterID: rid, ListenPort: 179}
		got, err := Reconfigure(ctx, sp, a, in, old, next, rid)
		if err != nil || got != rid {
			t.Fatalf("Reconfigure: %s %v", got, err)
		}
		a.Wait(ctx, a.Set(in))
		want := []string{"0s withdraw 192.0.2.1/32", "0s stop", "0s start AS 65011 router_id 10.0.0.11", "0s announce 192.0.2.1/32"}
		if d := cmp.Diff(want, w.take()); d != "" {
			t.Errorf("local_as changed (-want +got):\n%s", d)
		}
		if st := a.Status(); st[0].Dev != "lo" || !st[0].Announced {
			t.Errorf("after the restart: %+v", st)
		}

		more := &config.BGP{LocalAS: 65011, RouterID: rid, ListenPort: 179, Neighbors: []*config.Neighbor{{Addr: netip.MustParseAddr("10.0.0.1"), RemoteAS: 65000}}}
		if _, err := Reconfigure(ctx, sp, a, in, next, more, rid); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff([]string{"0s configure 1 neighbors"}, w.take()); d != "" {
			t.Errorf("a neighbor added (-want +got):\n%s", d)
		}

		bad := &config.BGP{LocalAS: 65099, RouterID: netip.MustParseAddr("10.0.0.99"), ListenPort: 179}
		got, err = Reconfigure(ctx, sp, a, in, more, bad, rid)
		if !errors.Is(err, ErrOldSettings) || got != rid {
			t.Errorf("a speaker that does not start: %s %v", got, err)
		}
		a.Wait(ctx, a.Set(in))
		want = []string{"0s withdraw 192.0.2.1/32", "0s stop", "0s start AS 65099 failed", "0s start AS 65011 router_id 10.0.0.11", "0s announce 192.0.2.1/32"}
		if d := cmp.Diff(want, w.take()); d != "" {
			t.Errorf("the new settings refused (-want +got):\n%s", d)
		}
	})
}
