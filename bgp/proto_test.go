package bgp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/directord/directord/config"
)

// list is a slice that the tests' goroutines append to under a lock
// (synctest's clock orders them, but the race detector does not see it).
type list[T any] struct {
	mu sync.Mutex
	v  []T
}

func (l *list[T]) add(v T) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.v = append(l.v, v)
}

func (l *list[T]) get() []T {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.v)
}

// addrs compares netip values.
var addrs = cmpopts.EquateComparable(netip.Addr{})

// recSpeaker records its calls, one string each.
type recSpeaker struct {
	mu        sync.Mutex
	calls     []string
	neighbors []NeighborStatus
	fail      map[string]error // by call
}

func (f *recSpeaker) record(c string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, c)
	return f.fail[c]
}

func (f *recSpeaker) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func (f *recSpeaker) Start(_ context.Context, c *config.BGP) error {
	return f.record(fmt.Sprintf("start %d %d", c.LocalAS, len(c.Neighbors)))
}
func (f *recSpeaker) Configure(_ context.Context, c *config.BGP) error {
	return f.record(fmt.Sprintf("configure %d %d", c.LocalAS, len(c.Neighbors)))
}
func (f *recSpeaker) Announce(_ context.Context, p netip.Prefix) error {
	return f.record("announce " + p.String())
}
func (f *recSpeaker) Withdraw(_ context.Context, p netip.Prefix) error {
	return f.record("withdraw " + p.String())
}
func (f *recSpeaker) Neighbors(context.Context) ([]NeighborStatus, error) {
	return f.neighbors, f.record("neighbors")
}
func (f *recSpeaker) Stop(context.Context) error { return f.record("stop") }

// fakeHelper is a helper process in this one: a Server of a recSpeaker
// on pipes. kill ends it as SIGKILL would: its output closes, and the
// speaker sees nothing more.
type fakeHelper struct {
	sp    *recSpeaker
	srv   *Server
	inW   *io.PipeWriter
	outW  *io.PipeWriter
	ended chan struct{}
}

func startFake(sp *recSpeaker) (*fakeHelper, *helper) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	f := &fakeHelper{sp: sp, srv: NewServer(sp, outW), inW: inW, outW: outW, ended: make(chan struct{})}
	go func() {
		defer close(f.ended)
		f.srv.Serve(inR)
		outW.Close()
	}()
	return f, &helper{stdin: inW, stdout: outR, kill: f.kill,
		wait: func() error { <-f.ended; return nil }}
}

func (f *fakeHelper) kill() {
	f.outW.CloseWithError(errors.New("killed"))
	f.inW.CloseWithError(errors.New("killed"))
}

var (
	pa = netip.MustParsePrefix("192.0.2.1/32")
	pb = netip.MustParsePrefix("192.0.2.2/32")
	pc = netip.MustParsePrefix("2001:db8::3/128")
)

func testBGP(as uint32, neighbors ...string) *config.BGP {
	c := &config.BGP{LocalAS: as, RouterID: netip.MustParseAddr("192.0.2.254"), ListenPort: -1, WithdrawWait: time.Second}
	for _, n := range neighbors {
		c.Neighbors = append(c.Neighbors, &config.Neighbor{Addr: netip.MustParseAddr(n), RemoteAS: 65000, HoldTime: 9 * time.Second,
			Port: 179, BFD: &config.BFD{Interval: 300 * time.Millisecond, Multiplier: 3}, Communities: []string{"65010:1"}})
	}
	return c
}

// TestServerRoundTrip: every call goes through the protocol to the
// speaker and back, its errors and the neighbors' statuses unchanged, and
// the speaker's session events reach OnSession.
func TestServerRoundTrip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		sp := &recSpeaker{
			neighbors: []NeighborStatus{{Addr: netip.MustParseAddr("10.0.0.1"), RemoteAS: 65000, State: Established, Since: since, BFD: "up", Sent: 2},
				{Addr: netip.MustParseAddr("2001:db8::1"), RemoteAS: 65001, State: Active}},
			fail: map[string]error{"announce " + pb.String(): errors.New("bgp: announce 192.0.2.2/32: refused")},
		}
		var fh *fakeHelper
		var events list[SessionEvent]
		p := &Process{Log: slog.New(slog.DiscardHandler), OnSession: events.add}
		p.launch = func(context.Context) (*helper, error) {
			f, h := startFake(sp)
			fh = f
			return h, nil
		}
		ctx := context.Background()
		if err := p.Start(ctx, testBGP(65010, "10.0.0.1")); err != nil {
			t.Fatal(err)
		}
		if err := p.Configure(ctx, testBGP(65010, "10.0.0.1", "2001:db8::1")); err != nil {
			t.Fatal(err)
		}
		if err := p.Announce(ctx, pa); err != nil {
			t.Fatal(err)
		}
		if err := p.Announce(ctx, pb); err == nil || err.Error() != "bgp: announce 192.0.2.2/32: refused" {
			t.Errorf("announce's error: %v, want the speaker's", err)
		}
		if err := p.Withdraw(ctx, pa); err != nil {
			t.Fatal(err)
		}
		ns, err := p.Neighbors(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(sp.neighbors, ns, addrs); d != "" {
			t.Errorf("neighbors (-sent +received):\n%s", d)
		}
		ev := SessionEvent{Neighbor: netip.MustParseAddr("10.0.0.1"), State: Established}
		fh.srv.Event(ev)
		down := SessionEvent{Neighbor: netip.MustParseAddr("10.0.0.1"), State: Active, Reason: "hold timer expired"}
		fh.srv.Event(down)
		synctest.Wait()
		if d := cmp.Diff([]SessionEvent{ev, down}, events.get(), addrs); d != "" {
			t.Errorf("events (-sent +received):\n%s", d)
		}
		if err := p.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		want := []string{"start 65010 1", "configure 65010 2", "announce 192.0.2.1/32", "announce 192.0.2.2/32",
			"withdraw 192.0.2.1/32", "neighbors", "stop"}
		if d := cmp.Diff(want, sp.Calls()); d != "" {
			t.Errorf("the speaker's calls (-want +got):\n%s", d)
		}
		select {
		case <-fh.ended:
		default:
			t.Error("the helper still runs after Stop")
		}
		if err := p.Announce(ctx, pa); err == nil {
			t.Error("announce after Stop: no error")
		}
	})
}

// TestServeBadLines: a line that is not a request is answered by an error
// naming its line, and the requests after it are served; the bgp block
// travels whole.
func TestServeBadLines(t *testing.T) {
	cfg := testBGP(65010, "10.0.0.1")
	b, _ := json.Marshal(request{ID: 7, Op: opStart, BGP: cfg})
	in := strings.Join([]string{"not json", `{"id":3}`, `{"id":4,"op":"dance"}`, `{"id":5,"op":"announce"}`, string(b)}, "\n") + "\n"
	var gotCfg *config.BGP
	sp := &captureStart{recSpeaker: &recSpeaker{}, got: &gotCfg}
	var out bytes.Buffer
	if err := NewServer(sp, &out).Serve(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	var got []message
	for l := range strings.Lines(out.String()) {
		var m message
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		got = append(got, m)
	}
	want := []message{
		{Error: `bgp protocol: line 1 is not a request: invalid character 'o' in literal null (expecting 'u'): "not json"`},
		{Error: `bgp protocol: line 2 is not a request: no id or op: "{\"id\":3}"`},
		{ID: 4, Error: `bgp protocol: unknown op "dance"`},
		{ID: 5, Error: "bgp protocol: announce without a prefix"},
		{ID: 7},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("responses (-want +got):\n%s", d)
	}
	// The end of the input stops the speaker it started.
	if d := cmp.Diff([]string{"start 65010 1", "stop"}, sp.Calls()); d != "" {
		t.Errorf("calls (-want +got):\n%s", d)
	}
	if d := cmp.Diff(config.Canonical(cfg), config.Canonical(gotCfg)); d != "" {
		t.Errorf("the bgp block (-sent +received):\n%s", d)
	}
}

// TestServeOrphaned: the end of the input with the speaker running calls
// Orphaned before the speaker stops (the helper's last records must go
// where someone reads them); after a stop, the end calls nothing.
func TestServeOrphaned(t *testing.T) {
	b, _ := json.Marshal(request{ID: 1, Op: opStart, BGP: testBGP(65010, "10.0.0.1")})
	stop, _ := json.Marshal(request{ID: 2, Op: opStop})
	for _, tc := range []struct {
		name string
		in   string
		want []string
	}{
		{"running", string(b) + "\n", []string{"start 65010 1", "orphaned", "stop"}},
		{"stopped", string(b) + "\n" + string(stop) + "\n", []string{"start 65010 1", "stop"}},
		{"never started", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp := &recSpeaker{}
			srv := NewServer(sp, io.Discard)
			srv.Orphaned = func() { sp.record("orphaned") }
			if err := srv.Serve(strings.NewReader(tc.in)); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, sp.Calls()); d != "" {
				t.Errorf("calls (-want +got):\n%s", d)
			}
		})
	}
}

type captureStart struct {
	*recSpeaker
	got **config.BGP
}

func (c *captureStart) Start(ctx context.Context, cfg *config.BGP) error {
	*c.got = cfg
	return c.recSpeaker.Start(ctx, cfg)
}

// TestLinkBadLine: a line from the helper that is not a message is
// reported, and the responses after it still reach their calls.
func TestLinkBadLine(t *testing.T) {
	l := newLink(nopWriteCloser{io.Discard})
	var bad []string
	var events []SessionEvent
	err := l.read(strings.NewReader("garbage\n"+`{"error":"bgp protocol: line 9 is not a request"}`+"\n"+`{"session":{"neighbor":"10.0.0.1","state":"idle","reason":"x"}}`+"\n"),
		func(ev SessionEvent) { events = append(events, ev) }, func(err error) { bad = append(bad, err.Error()) })
	if !errors.Is(err, io.EOF) {
		t.Errorf("read: %v, want EOF", err)
	}
	want := []string{`bgp: an unreadable line from the speaker's process: invalid character 'g' looking for beginning of value: "garbage"`,
		"bgp protocol: line 9 is not a request"}
	if d := cmp.Diff(want, bad); d != "" {
		t.Errorf("reported (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]SessionEvent{{Neighbor: netip.MustParseAddr("10.0.0.1"), State: Idle, Reason: "x"}}, events, addrs); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// TestProcessRestartReplays: a helper that dies is started again after
// the backoff, and given the latest bgp block and every route announced
// (those withdrawn not), including what was asked while it was down;
// the sessions it had are reported idle.
func TestProcessRestartReplays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var helpers list[*fakeHelper]
		var launched list[time.Time]
		var events list[SessionEvent]
		p := &Process{Log: slog.New(slog.DiscardHandler), OnSession: events.add}
		p.launch = func(context.Context) (*helper, error) {
			f, h := startFake(&recSpeaker{})
			helpers.add(f)
			launched.add(time.Now())
			return h, nil
		}
		ctx := context.Background()
		if err := p.Start(ctx, testBGP(65010, "10.0.0.1")); err != nil {
			t.Fatal(err)
		}
		for _, pr := range []netip.Prefix{pa, pb, pc} {
			if err := p.Announce(ctx, pr); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Withdraw(ctx, pb); err != nil {
			t.Fatal(err)
		}
		if err := p.Configure(ctx, testBGP(65010, "10.0.0.1", "10.0.0.2")); err != nil {
			t.Fatal(err)
		}
		helpers.get()[0].srv.Event(SessionEvent{Neighbor: netip.MustParseAddr("10.0.0.1"), State: Established})
		synctest.Wait()
		died := time.Now()
		helpers.get()[0].kill()
		synctest.Wait()
		if len(helpers.get()) != 1 {
			t.Fatalf("%d helpers started at once, want the backoff first", len(helpers.get()))
		}
		// While it is down: refused, and kept.
		if err := p.Announce(ctx, pb); !errors.Is(err, ErrSpeakerDown) {
			t.Errorf("announce while down: %v, want ErrSpeakerDown", err)
		}
		if err := p.Withdraw(ctx, pc); !errors.Is(err, ErrSpeakerDown) {
			t.Errorf("withdraw while down: %v, want ErrSpeakerDown", err)
		}
		if _, err := p.Neighbors(ctx); !errors.Is(err, ErrSpeakerDown) {
			t.Errorf("neighbors while down: %v, want ErrSpeakerDown", err)
		}
		time.Sleep(DefaultMinBackoff) // the fake clock: the backoff passes
		synctest.Wait()
		if len(helpers.get()) != 2 {
			t.Fatalf("%d helpers, want 2", len(helpers.get()))
		}
		if got := launched.get()[1].Sub(died); got != DefaultMinBackoff {
			t.Errorf("started again after %v, want %v", got, DefaultMinBackoff)
		}
		calls := helpers.get()[1].sp.Calls()
		slices.Sort(calls[1:])
		want := []string{"start 65010 2", "announce 192.0.2.1/32", "announce 192.0.2.2/32"}
		if d := cmp.Diff(want, calls); d != "" {
			t.Errorf("replayed (-want +got):\n%s", d)
		}
		wantEv := []SessionEvent{{Neighbor: netip.MustParseAddr("10.0.0.1"), State: Established},
			{Neighbor: netip.MustParseAddr("10.0.0.1"), State: Idle, Reason: "the speaker's process exited"}}
		if d := cmp.Diff(wantEv, events.get(), addrs); d != "" {
			t.Errorf("events (-want +got):\n%s", d)
		}
		if err := p.Announce(ctx, pc); err != nil {
			t.Fatal(err)
		}
		if err := p.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff([]string{"announce 2001:db8::3/128", "stop"}, helpers.get()[1].sp.Calls()[3:]); d != "" {
			t.Errorf("after the restart (-want +got):\n%s", d)
		}
	})
}

// TestProcessBackoff: a helper that cannot start is tried again after 1
// s, then twice as long each time up to 30 s; Stop ends the attempts.
func TestProcessBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var first *fakeHelper
		var tries list[time.Time]
		p := &Process{Log: slog.New(slog.DiscardHandler)}
		p.launch = func(context.Context) (*helper, error) {
			tries.add(time.Now())
			if first == nil {
				f, h := startFake(&recSpeaker{})
				first = f
				return h, nil
			}
			return nil, errors.New("bgp: start /x/directord-bgp: no such file")
		}
		ctx := context.Background()
		if err := p.Start(ctx, testBGP(65010)); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		first.kill()
		synctest.Wait()
		time.Sleep(200 * time.Second)
		synctest.Wait()
		var gaps []time.Duration
		ts := tries.get()
		for i := 2; i < len(ts); i++ {
			gaps = append(gaps, ts[i].Sub(ts[i-1]))
		}
		s := time.Second
		want := []time.Duration{2 * s, 4 * s, 8 * s, 16 * s, 30 * s, 30 * s, 30 * s, 30 * s, 30 * s}
		if d := cmp.Diff(want, gaps); d != "" {
			t.Errorf("the gaps between tries (-want +got):\n%s", d)
		}
		if err := p.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		n := len(tries.get())
		time.Sleep(time.Minute)
		synctest.Wait()
		if got := len(tries.get()); got != n {
			t.Errorf("%d tries after Stop", got-n)
		}
	})
}

// TestProcessStartFails: a speaker that refuses to start is an error,
// and its helper is ended, not restarted.
func TestProcessStartFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var helpers list[*fakeHelper]
		p := &Process{Log: slog.New(slog.DiscardHandler)}
		p.launch = func(context.Context) (*helper, error) {
			f, h := startFake(&recSpeaker{fail: map[string]error{"start 65010 0": errors.New("bgp: start the speaker: address in use")}})
			helpers.add(f)
			return h, nil
		}
		if err := p.Start(context.Background(), testBGP(65010)); err == nil || !strings.Contains(err.Error(), "address in use") {
			t.Fatalf("start: %v, want the speaker's error", err)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if len(helpers.get()) != 1 {
			t.Errorf("%d helpers started, want 1", len(helpers.get()))
		}
		select {
		case <-helpers.get()[0].ended:
		default:
			t.Error("the helper of a failed start still runs")
		}
	})
}

// TestHelperPathMissing: a missing helper is an error naming its path.
func TestHelperPathMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), HelperName)
	_, err := (&Process{Path: path, Log: slog.New(slog.DiscardHandler)}).execHelper(context.Background())
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "missing") {
		t.Errorf("error %v, want one naming %s", err, path)
	}
}

// TestRelayLog: the helper's slog records land in directord's log with
// their level, message and attributes in order; other lines as errors.
func TestRelayLog(t *testing.T) {
	var helperOut bytes.Buffer
	hl := slog.New(slog.NewJSONHandler(&helperOut, &slog.HandlerOptions{Level: slog.LevelDebug}))
	hl.Warn("peer refused", "component", "gobgp", "neighbor", "10.0.0.1", "n", 3)
	hl.Debug("detail", "ok", true)
	helperOut.WriteString("panic: boom\n")
	var got bytes.Buffer
	rm := func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}
	relayLog(slog.New(slog.NewTextHandler(&got, &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: rm})), &helperOut)
	want := `level=WARN msg="peer refused" component=gobgp neighbor=10.0.0.1 n=3
level=DEBUG msg=detail ok=true
level=ERROR msg="bgp: speaker's process" output="panic: boom"
`
	if d := cmp.Diff(want, got.String()); d != "" {
		t.Errorf("relayed (-want +got):\n%s", d)
	}
}
