package healthcheck

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/directord/directord/config"
	"github.com/directord/directord/internal/conftest"
	"github.com/directord/directord/internal/testconf"
)

// parse reads a test's configuration.
var parse = conftest.Parse

// poolConf is a virtual server of n real servers, each with one TCP_CHECK
// with the given timing lines.
func poolConf(n int, timing string) string {
	var sb strings.Builder
	sb.WriteString("virtual_server 192.0.2.1 80 {\n lb_algo rr\n lb_kind DR\n protocol TCP\n")
	for i := range n {
		fmt.Fprintf(&sb, " real_server 10.0.%d.%d 80 {\n  TCP_CHECK {\n%s\n  }\n }\n", i/250, 1+i%250, timing)
	}
	sb.WriteString("}\n")
	return sb.String()
}

// fake answers, or stops answering (its probes then take the whole
// connect_timeout and fail), or fails with a local fault.
type fake struct {
	answering atomic.Bool
	local     atomic.Bool
	timeout   time.Duration
	probes    atomic.Int64
}

func (f *fake) Probe(ctx context.Context) Result {
	f.probes.Add(1)
	switch {
	case f.local.Load():
		return Result{Outcome: Unknown, Reason: "connect: network is unreachable", Weight: -1}
	case f.answering.Load():
		time.Sleep(time.Millisecond)
		return Result{Outcome: Up, Reason: "connected", Weight: -1}
	}
	time.Sleep(f.timeout)
	return Result{Outcome: Down, Reason: "connect: timed out", Weight: -1, Silent: true}
}

// newRunner is New for a test that fails if it refuses.
func newRunner(t testing.TB, cfg *config.Config, emit func(Event), log *slog.Logger) *Runner {
	t.Helper()
	r, err := New(cfg, emit, log)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

type recorder struct {
	mu     sync.Mutex
	events []Event
	at     []time.Time
}

func (r *recorder) emit(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
	r.at = append(r.at, time.Now())
}

// TestTimingBounds ties the timings together: with delay_loop 6 s,
// connect_timeout 2 s, retry 2 and delay_before_retry 1 s, a real server
// that stops answering leaves the pool within 6 + 3x2 + 2x1 = 14 s (and
// not before the 3 failed attempts, 8 s), and one that answers again
// returns within one delay_loop, whatever the phase of its check.
func TestTimingBounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 20
		delayLoop, connectTimeout, retry, dbr := 6*time.Second, 2*time.Second, 2, time.Second
		cfg := parse(t, poolConf(n, "connect_timeout 2\n delay_loop 6\n retry 2\n delay_before_retry 1"))
		rec := &recorder{}
		r := newRunner(t, cfg, rec.emit, nil)
		r.Egress = nil
		fakes := make([]*fake, n)
		for i, c := range r.Checks() {
			fakes[i] = &fake{timeout: connectTimeout}
			fakes[i].answering.Store(true)
			c.Prober = fakes[i]
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { r.Run(ctx); close(done) }()

		// Let the checks drift apart, then stop the servers one by one at
		// different phases.
		time.Sleep(time.Minute)
		stopped := make([]time.Time, n)
		for i := range n {
			time.Sleep(delayLoop / n * 7 / 10)
			fakes[i].answering.Store(false)
			stopped[i] = time.Now()
		}
		time.Sleep(30 * time.Second)
		synctest.Wait()
		upper := delayLoop + time.Duration(retry+1)*connectTimeout + time.Duration(retry)*dbr
		lower := time.Duration(retry+1)*connectTimeout + time.Duration(retry)*dbr
		rec.mu.Lock()
		if len(rec.events) != n {
			t.Fatalf("%d events, want %d: %+v", len(rec.events), n, rec.events)
		}
		for k, e := range rec.events {
			took := rec.at[k].Sub(stopped[e.Real])
			if e.Alive || took > upper || took < lower {
				t.Errorf("real server %d: alive %v after %s, want down within [%s, %s]", e.Real, e.Alive, took, lower, upper)
			}
		}
		rec.events, rec.at = nil, nil
		rec.mu.Unlock()

		back := make([]time.Time, n)
		for i := range n {
			time.Sleep(delayLoop / n * 3 / 10)
			fakes[i].answering.Store(true)
			back[i] = time.Now()
		}
		time.Sleep(30 * time.Second)
		synctest.Wait()
		rec.mu.Lock()
		if len(rec.events) != n {
			t.Fatalf("%d events back, want %d", len(rec.events), n)
		}
		for k, e := range rec.events {
			if took := rec.at[k].Sub(back[e.Real]); !e.Alive || took > delayLoop+time.Millisecond {
				t.Errorf("real server %d: alive %v after %s, want up within %s", e.Real, e.Alive, took, delayLoop)
			}
		}
		rec.mu.Unlock()
		cancel()
		<-done
	})
}

// TestLocalFaultsKeepThePool: when every probe of a pool fails with a
// fault of the director, nothing changes, however long it lasts.
func TestLocalFaultsKeepThePool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := parse(t, poolConf(3, "connect_timeout 1\n delay_loop 2\n retry 1\n delay_before_retry 1"))
		rec := &recorder{}
		var logs strings.Builder
		var lmu sync.Mutex
		r := newRunner(t, cfg, rec.emit, newTestLogger(&logs, &lmu))
		// Two servers fail with a local error, the third times out while
		// this director's own interface is down.
		r.Egress = func(a netip.Addr) (string, bool) { return "this director's interface eth0 is down", true }
		for i, c := range r.Checks() {
			f := &fake{timeout: time.Second}
			f.local.Store(i < 2)
			c.Prober = f
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { r.Run(ctx); close(done) }()
		time.Sleep(10 * time.Minute)
		cancel()
		<-done
		if len(rec.events) != 0 {
			t.Errorf("events %+v: a local fault must not move the pool", rec.events)
		}
		lmu.Lock()
		defer lmu.Unlock()
		if strings.Count(logs.String(), "fails with a fault of this director") != 1 {
			t.Errorf("log:\n%s", logs.String())
		}
	})
}

// TestNoLeaks runs 10,000 real HTTP checks against local servers: the
// goroutines and descriptors are as many after as before; with
// reuse_connection too, whose kept connections are closed when the checks
// stop.
//
// What a busy machine can change is counted by its cause, not refused: a
// probe that outlasts its connect_timeout on a starved host (the server
// got no CPU in time) is a timeout, and its code path must not
// leak either; it costs the reused connection, which the next probe dials
// again (within the same probe, when the kept connection was the one to
// hang: an answer that took the whole connect_timeout). So the run goes
// on until 10,000 probes were answered, timeouts
// besides; any other failure is an error; and with reuse_connection the
// connections are at most one per checker plus one per timeout.
func TestNoLeaks(t *testing.T) {
	for _, reuse := range []time.Duration{0, time.Hour} {
		t.Run(fmt.Sprint("reuse_connection ", reuse), func(t *testing.T) {
			s := newServer(t, false)
			cfg := &config.Config{VirtualServers: []*config.VirtualServer{{}}}
			vs := cfg.VirtualServers[0]
			var timeout time.Duration
			for range 10 {
				c, rs := httpChecker("HTTP_GET", s, url("/ok"))
				timeout = c.ConnectTimeout
				c.DelayLoop, c.DelayBeforeRetry = time.Millisecond, time.Millisecond
				c.HTTP.ReuseConnection = reuse
				rs.Checkers = []*config.Checker{c}
				vs.RealServers = append(vs.RealServers, rs)
			}
			r := newRunner(t, cfg, func(Event) {}, nil)
			var count, timeouts atomic.Int64
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			for _, c := range r.Checks() {
				c.Prober = &counted{Prober: c.Prober, after: func(res Result) {
					switch {
					case ctx.Err() != nil:
					case res.Outcome == Up:
						// Answered after its whole connect_timeout: the
						// kept connection hung, and the probe asked again
						// on a new one (HTTP.fetch).
						if res.Latency >= timeout {
							timeouts.Add(1)
						}
						if count.Add(1) == 10000 {
							cancel()
						}
					case strings.Contains(res.Reason, "timed out"):
						timeouts.Add(1)
					default:
						t.Errorf("probe: %v", res)
					}
				}}
			}
			// The checker's side alone: the server in this process may
			// accept, after the run, a connection a check dialled and
			// closed, and serve it for a moment (seen on a busy host).
			port := uint16(s.Listener.Addr().(*net.TCPAddr).Port)
			fds0, g0 := fds(t, port), goroutines()
			r.Run(ctx)
			// Only a leak never settles: a starved host may take its
			// time to end the checks' goroutines and close their sockets.
			deadline := time.Now().Add(30 * time.Second)
			for time.Now().Before(deadline) && (fds(t, port) > fds0 || goroutines() > g0) {
				time.Sleep(10 * time.Millisecond)
			}
			if f, g := fds(t, port), goroutines(); f > fds0 || g > g0 {
				t.Errorf("after %d checks: %d descriptors (was %d), %d goroutines (was %d)", count.Load(), f, fds0, g, g0)
			}
			if n, lost := s.conns.Load(), timeouts.Load(); reuse > 0 && n > 10+lost {
				t.Errorf("%d connections for 10 checks reusing theirs, with %d timeouts", n, lost)
			}
			if n := timeouts.Load(); n > 0 {
				t.Logf("%d probes timed out (a busy host) beside the 10,000 answered", n)
			}
		})
	}
}

// counted is a prober whose results a test sees; it closes what its
// prober keeps.
type counted struct {
	Prober
	after func(Result)
}

func (c *counted) Probe(ctx context.Context) Result {
	res := c.Prober.Probe(ctx)
	c.after(res)
	return res
}

func (c *counted) Close() error {
	if cl, ok := c.Prober.(io.Closer); ok {
		return cl.Close()
	}
	return nil
}

type proberFunc func(context.Context) Result

func (f proberFunc) Probe(ctx context.Context) Result { return f(ctx) }

func fds(t *testing.T, server uint16) int {
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err) // Linux has /proc: without it the test would prove nothing
	}
	theirs := serverSockets(t, server)
	n := 0
	for _, e := range es {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && theirs[l] {
			continue
		}
		n++
	}
	return n
}

// serverSockets is the set of /proc/self/fd link texts ("socket:[N]") of
// the TCP sockets whose local port is port: the test server's listener
// and the connections it accepted.
func serverSockets(t *testing.T, port uint16) map[string]bool {
	set := map[string]bool{}
	for _, f := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // no IPv6
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fs := strings.Fields(line)
			if len(fs) < 10 {
				continue
			}
			_, hex, ok := strings.Cut(fs[1], ":")
			p, err := strconv.ParseUint(hex, 16, 16)
			if !ok || err != nil {
				t.Fatalf("%s: local address %q", f, fs[1])
			}
			if uint16(p) == port {
				set["socket:["+fs[9]+"]"] = true
			}
		}
	}
	return set
}

// goroutines counts this process's goroutines but the test server's
// connections' (net/http's conn.serve and what it starts).
func goroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if !strings.Contains(g, "net/http.(*conn).serve") && !strings.Contains(g, "net/http.(*connReader).backgroundRead") {
			n++
		}
	}
	return n
}

// TestDynamicWeight: misc_dynamic's weight reaches the event, a failure
// drops it, and two checkers must both be up.
func TestDynamicWeight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := parse(t, `
virtual_server 192.0.2.1 80 {
    lb_algo wrr
    lb_kind DR
    protocol TCP
    real_server 10.0.0.1 80 {
        weight 5
        MISC_CHECK {
            misc_path /bin/true
            misc_dynamic
            delay_loop 1
        }
        TCP_CHECK {
            delay_loop 1
            retry 0
        }
    }
}
`)
		rec := &recorder{}
		r := newRunner(t, cfg, rec.emit, nil)
		r.Egress = nil
		var weight atomic.Int64
		weight.Store(12)
		tcpUp := &fake{}
		tcpUp.answering.Store(true)
		r.Checks()[0].Prober = proberFunc(func(context.Context) Result {
			w := int(weight.Load())
			if w < 0 {
				return Result{Outcome: Down, Reason: "exit 1", Weight: -1}
			}
			return Result{Outcome: Up, Reason: "exit", Weight: w}
		})
		r.Checks()[1].Prober = tcpUp
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { r.Run(ctx); close(done) }()
		step := func(what string, want ...Event) {
			t.Helper()
			time.Sleep(3 * time.Second)
			synctest.Wait()
			rec.mu.Lock()
			defer rec.mu.Unlock()
			var got []string
			for _, e := range rec.events {
				got = append(got, fmt.Sprintf("%v/%d", e.Alive, e.Weight))
			}
			var w []string
			for _, e := range want {
				w = append(w, fmt.Sprintf("%v/%d", e.Alive, e.Weight))
			}
			if strings.Join(got, " ") != strings.Join(w, " ") {
				t.Errorf("%s: events %q, want %q", what, got, w)
			}
			rec.events = nil
		}
		step("exit 14", Event{Alive: true, Weight: 12})
		weight.Store(-1)
		step("exit 1", Event{Alive: false, Weight: 5})
		weight.Store(3)
		step("exit 5", Event{Alive: true, Weight: 3})
		tcpUp.answering.Store(false)
		step("the other checker fails", Event{Alive: false, Weight: 3})
		cancel()
		<-done
	})
}

// TestEgressAsked: when a link fails, 200 checks time out together; the
// kernel is asked about each address at most once per EgressTTL, and an
// answer that changed is taken once it is older than that.
func TestEgressAsked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := parse(t, poolConf(200, "connect_timeout 1\n delay_loop 2\n retry 0"))
		for _, rs := range cfg.VirtualServers[0].RealServers {
			// One address for all; the loaded spec is shared, so changed
			// as a copy, as config does.
			sp := *rs.Checkers[0].CheckerSpec
			sp.ConnectIP = netip.MustParseAddr("10.9.9.9")
			rs.Checkers[0].CheckerSpec = &sp
		}
		rec := &recorder{}
		r := newRunner(t, cfg, rec.emit, nil)
		var asked atomic.Int64
		var linkDown atomic.Bool
		linkDown.Store(true)
		r.Egress = func(netip.Addr) (string, bool) {
			asked.Add(1)
			return "this director's interface eth0 is down", linkDown.Load()
		}
		for _, c := range r.Checks() {
			c.Prober = &fake{timeout: time.Second}
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { r.Run(ctx); close(done) }()
		time.Sleep(20 * time.Second)
		if n := asked.Load(); n < 5 || n > 21 {
			t.Errorf("Egress asked %d times in 20 s for one address, want at most one a second", n)
		}
		if len(rec.events) != 0 {
			t.Fatalf("events %+v while this director's link was down", rec.events)
		}
		linkDown.Store(false)
		time.Sleep(5 * time.Second)
		cancel()
		<-done
		if len(rec.events) != 200 {
			t.Errorf("%d real servers went down once the link was up, want 200", len(rec.events))
		}
	})
}

// TestAdoptAcrossReload: after a reload that moves the file's lines, a
// real server that was down stays down, one half-way through its retries
// keeps its count, and a real server whose checker changed starts afresh.
func TestAdoptAcrossReload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		conf := poolConf(3, "connect_timeout 1\n delay_loop 2\n retry 1")
		cfg := parse(t, conf)
		rec := &recorder{}
		old := newRunner(t, cfg, rec.emit, nil)
		old.Egress = nil
		for _, c := range old.Checks() {
			c.Prober = &fake{timeout: time.Second} // none answers
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { old.Run(ctx); close(done) }()
		time.Sleep(30 * time.Second)
		cancel()
		<-done
		if len(rec.events) != 3 {
			t.Fatalf("events %+v, want the 3 real servers down", rec.events)
		}
		// The same file two lines lower, the third real server's checker
		// changed.
		moved := "\n\n" + conf
		i := strings.LastIndex(moved, "retry 1")
		moved = moved[:i] + "retry 2" + moved[i+len("retry 1"):]
		nr := newRunner(t, parse(t, moved), rec.emit, nil)
		if n := nr.Adopt(old); n != 2 {
			t.Errorf("adopted %d checks, want 2", n)
		}
		var alive []bool
		for _, e := range nr.Initial() {
			alive = append(alive, e.Alive)
		}
		if want := []bool{false, false, true}; !reflect.DeepEqual(alive, want) {
			t.Errorf("after the reload alive %v, want %v", alive, want)
		}
		if r, at := nr.Checks()[0].Last(); r.Outcome != Down || at.IsZero() {
			t.Errorf("the last result was not kept: %+v at %v", r, at)
		}
		if p, rs := nr.Checks()[2].Where(); p != 0 || rs != 2 {
			t.Errorf("Where %d %d", p, rs)
		}
		// The adopted checks keep their schedule, at the same instant on
		// the new Runner's clock; the changed one has none yet.
		for i, c := range nr.Checks() {
			due, was := c.due.Load(), old.Checks()[i].due.Load()
			same := nr.clock.epoch.Add(time.Duration(due)).Equal(old.clock.epoch.Add(time.Duration(was)))
			if (i < 2) != (same && due != 0) {
				t.Errorf("check %d due at %d, was %d", i, due, was)
			}
		}
		// A misc_dynamic weight is kept as the script gave it, whatever
		// the new configured weight.
		dyn := `virtual_server 192.0.2.1 80 {
 protocol TCP
 real_server 10.0.0.1 80 {
  weight 10
  MISC_CHECK {
   misc_path /bin/true
   misc_dynamic
  }
 }
}
`
		or := newRunner(t, parse(t, dyn), rec.emit, nil)
		or.record(or.Checks()[0], Result{Outcome: Up, Weight: 5}, time.Now())
		nr2 := newRunner(t, parse(t, strings.Replace(dyn, "weight 10", "weight 20", 1)), rec.emit, nil)
		nr2.Adopt(or)
		if e := nr2.Initial(); len(e) != 1 || e[0].Weight != 5 {
			t.Errorf("after the reload %+v, want weight 5 (the script's)", e)
		}
	})
}

// TestSaturatedStartsOnTime: with every place of the bound taken by
// silent probes, a check that comes due while the scheduler waits for a
// place starts as soon as one frees, not a whole wait later.
func TestSaturatedStartsOnTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := parse(t, poolConf(4, "connect_timeout 5\n   delay_loop 60\n   retry 0"))
		r := newRunner(t, cfg, func(Event) {}, nil)
		r.sem = make(chan struct{}, 2)
		r.Jitter = 0
		start := time.Now()
		var mu sync.Mutex
		began := map[int]time.Duration{}
		for i, c := range r.Checks() {
			// Checks 0 and 1 at once (both places for 5 s), 2 due at 1 s
			// and 3 at 2 s.
			c.due.Store(r.clock.mono(start.Add([]time.Duration{0, 0, time.Second, 2 * time.Second}[i])))
			c.Prober = proberFunc(func(ctx context.Context) Result {
				mu.Lock()
				if _, ok := began[i]; !ok {
					began[i] = time.Since(start)
				}
				mu.Unlock()
				select {
				case <-time.After(5 * time.Second):
				case <-ctx.Done():
				}
				return Result{Outcome: Down, Reason: "timed out", Weight: -1, Silent: true}
			})
		}
		r.Egress = nil
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		r.Run(ctx)
		// 2 and 3 both when the places free, at 5 s (3 must not wait for
		// a wake-up planned at 1 s for 2 s later, from when 2 started).
		want := map[int]time.Duration{0: 0, 1: 0, 2: 5 * time.Second, 3: 5 * time.Second}
		for i, w := range want {
			if began[i] != w {
				t.Errorf("check %d began at %v, want %v", i, began[i], w)
			}
		}
	})
}

// TestClockNow: one reading of the monotonic clock gives the time, of
// day too, in the process and in a synctest bubble (whose clock is
// decades away: the base is read again there).
func TestClockNow(t *testing.T) {
	c := NewClock()
	t0 := time.Now()
	m := c.Now()
	t1 := time.Now()
	if m.Before(t0) || m.After(t1) {
		t.Errorf("Now %v, not between %v and %v", m, t0, t1)
	}
	if d := m.Round(0).Sub(t1.Round(0)); d < -time.Second || d > time.Second {
		t.Errorf("Now's time of day is %v from the wall clock's", d)
	}
	synctest.Test(t, func(t *testing.T) {
		m1 := c.Now()
		if !m1.Equal(time.Now()) {
			t.Errorf("in a bubble, Now %v, want the bubble's %v", m1, time.Now())
		}
		time.Sleep(5 * time.Second)
		if d := c.Now().Sub(m1); d != 5*time.Second {
			t.Errorf("in a bubble, 5 s later Now moved %v", d)
		}
	})
	if d := time.Until(c.Now()); d < -time.Second || d > time.Second {
		t.Errorf("after a bubble, Now is %v from the clock", d)
	}
	var none *Clock // a prober's made alone: the process's clock
	if d := time.Since(none.Now()); d < 0 || d > time.Second {
		t.Errorf("a nil Clock's Now is %v from the clock", d)
	}
}

// TestResultTimeIsTheProbes: a probe that read the clock at its verdict
// (Result.At) saves the Runner its own reading: that time is the one
// kept.
func TestResultTimeIsTheProbes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := parse(t, poolConf(1, "connect_timeout 5\n   delay_loop 60\n   retry 0"))
		r := newRunner(t, cfg, func(Event) {}, nil)
		r.Egress = nil
		start := time.Now()
		c := r.Checks()[0]
		c.due.Store(r.clock.mono(start))
		r.Jitter = 0
		verdict := start.Add(time.Second)
		c.Prober = proberFunc(func(ctx context.Context) Result {
			time.Sleep(2 * time.Second)
			return Result{Outcome: Up, Reason: "connected", Weight: -1, At: verdict, Latency: 500 * time.Millisecond}
		})
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		r.Run(ctx)
		if _, at := c.Last(); !at.Equal(verdict) {
			t.Errorf("result kept at %v, want the probe's %v", at.Sub(start), verdict.Sub(start))
		}
		// It started at At less Latency (0.5 s): its next cycle comes a
		// delay_loop (60 s) after that.
		if got, want := time.Duration(c.due.Load()-r.clock.mono(start)), 60500*time.Millisecond; got != want {
			t.Errorf("next probe due at %v, want %v", got, want)
		}
	})
}

// TestLateChecksSaid: probes that wait for a place longer than their
// delay_loop make the log say that checks run late (once a minute while
// it lasts, with how many and the longest wait) and, a minute after the
// last late one, that they run on time again; each result says how long
// it waited.
func TestLateChecksSaid(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := parse(t, poolConf(2, "connect_timeout 5\n   delay_loop 2\n   retry 0"))
		var mu sync.Mutex
		var logs strings.Builder
		r := newRunner(t, cfg, func(Event) {}, newTestLogger(&logs, &mu))
		r.Egress, r.Jitter = nil, 0
		r.sem = make(chan struct{}, 1) // one probe at a time
		start := time.Now()
		var slow atomic.Bool
		slow.Store(true)
		for _, c := range r.Checks() {
			c.due.Store(r.clock.mono(start))
			c.Prober = proberFunc(func(ctx context.Context) Result {
				began := r.clock.Now() // as the real probers: their start and end (done)
				if slow.Load() {
					time.Sleep(3 * time.Second) // longer than delay_loop, holding the place
				}
				return r.clock.done(Result{Outcome: Up, Reason: "connected", Weight: -1}, began)
			})
		}
		var waits []time.Duration
		r.OnResult = func(_ *Check, res Result) {
			mu.Lock()
			defer mu.Unlock()
			waits = append(waits, res.Waited)
		}
		ctx, cancel := context.WithCancel(t.Context())
		finished := make(chan struct{})
		go func() { r.Run(ctx); close(finished) }()
		time.Sleep(10 * time.Second)
		synctest.Wait()
		mu.Lock()
		if len(waits) < 2 || waits[0] != 0 || waits[1] != 3*time.Second {
			t.Errorf("waits %v, want the first 0 and the second 3s (the first's probe)", waits)
		}
		if n := strings.Count(logs.String(), "health checks run late"); n != 1 {
			t.Errorf("said %d times that checks run late in 10 s, want once:\n%s", n, logs.String())
		}
		mu.Unlock()
		slow.Store(false)
		time.Sleep(2 * LateEvery)
		synctest.Wait()
		cancel()
		<-finished
		mu.Lock()
		defer mu.Unlock()
		if !strings.Contains(logs.String(), "health checks run on time again") {
			t.Errorf("not said that checks run on time again:\n%s", logs.String())
		}
		if n := strings.Count(logs.String(), "health checks run late"); n != 1 {
			t.Errorf("said %d times that checks run late, want once:\n%s", n, logs.String())
		}
	})
}

// TestSlackStartsCyclesNotRetriesEarly: a wake-up of the scheduler starts
// the cycles due within Slack with the check due now, and no retry before
// its delay_before_retry.
func TestSlackStartsCyclesNotRetriesEarly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := parse(t, poolConf(4, "connect_timeout 5\n   delay_loop 60\n   retry 1\n   delay_before_retry 1"))
		r := newRunner(t, cfg, func(Event) {}, nil)
		r.Egress, r.Jitter = nil, 0
		start := time.Now()
		var mu sync.Mutex
		began := map[int][]time.Duration{}
		// 0 now, and failing once (its retry due at 1 s); 1 at 1 ms (within
		// Slack of 0); 2 at 3 ms (beyond); 3 at 1 s less 1 ms, with 0's
		// retry within Slack after it.
		dues := []time.Duration{0, time.Millisecond, 3 * time.Millisecond, time.Second - time.Millisecond}
		for i, c := range r.Checks() {
			c.due.Store(r.clock.mono(start.Add(dues[i])))
			// As after a first success: a failure is then retried (the
			// start's first failure would take it down at once).
			c.Verdict.proven = true
			c.Prober = proberFunc(func(ctx context.Context) Result {
				mu.Lock()
				began[i] = append(began[i], time.Since(start))
				n := len(began[i])
				mu.Unlock()
				if i == 0 && n == 1 {
					return Result{Outcome: Down, Reason: "status 500", Weight: -1}
				}
				return Result{Outcome: Up, Reason: "connected", Weight: -1}
			})
		}
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		r.Run(ctx)
		want := map[int][]time.Duration{
			0: {0, time.Second},
			1: {0},
			2: {3 * time.Millisecond},
			3: {time.Second - time.Millisecond},
		}
		for i, w := range want {
			if fmt.Sprint(began[i]) != fmt.Sprint(w) {
				t.Errorf("check %d began at %v, want %v", i, began[i], w)
			}
		}
	})
}

// TestReloadIsNotLateness: a check carried over a reload, due during it,
// is not late by the reload's time (it counts from the new Runner's
// start), and a retry carried over keeps its exact time.
func TestReloadIsNotLateness(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := parse(t, poolConf(2, "connect_timeout 5\n   delay_loop 2\n   retry 1\n   delay_before_retry 1"))
		old := newRunner(t, cfg, func(Event) {}, nil)
		start := time.Now()
		old.Checks()[0].due.Store(old.clock.mono(start))
		// Check 1's retry, due at 10 s, 1 ms after the scheduler's first
		// wake-up (check 0's, within Slack of it).
		old.Checks()[1].due.Store(old.clock.mono(start.Add(10*time.Second + time.Millisecond)))
		old.Checks()[1].retry.Store(true)
		time.Sleep(10 * time.Second) // the reload's time
		var mu sync.Mutex
		var logs strings.Builder
		r := newRunner(t, cfg, func(Event) {}, newTestLogger(&logs, &mu))
		if n := r.Adopt(old); n != 2 {
			t.Fatalf("adopted %d checks, want 2", n)
		}
		r.Egress, r.Jitter = nil, 0
		began := map[int]time.Duration{}
		waited := map[int]time.Duration{}
		for i, c := range r.Checks() {
			c.Prober = proberFunc(func(ctx context.Context) Result {
				s := r.clock.Now()
				mu.Lock()
				if _, ok := began[i]; !ok {
					began[i] = s.Sub(start)
				}
				mu.Unlock()
				return r.clock.done(Result{Outcome: Up, Reason: "connected", Weight: -1}, s)
			})
		}
		r.OnResult = func(c *Check, res Result) {
			mu.Lock()
			defer mu.Unlock()
			if _, ok := waited[c.srv.idx]; !ok {
				waited[c.srv.idx] = res.Waited
			}
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		r.Run(ctx)
		if waited[0] != 0 {
			t.Errorf("the check due during the reload waited %v, want 0", waited[0])
		}
		if began[1] != 10*time.Second+time.Millisecond {
			t.Errorf("the retry carried over began at %v, want 10.001s", began[1])
		}
		if strings.Contains(logs.String(), "run late") {
			t.Errorf("a reload said to be lateness:\n%s", logs.String())
		}
	})
}

// TestRunnerOwnsClockAndHandshakes: a Runner's checks share its clock
// and its bound on TLS handshakes (Options), which another Runner does
// not share: nothing of the checks is process-wide.
func TestRunnerOwnsClockAndHandshakes(t *testing.T) {
	conf := strings.ReplaceAll(poolConf(2, ""), "TCP_CHECK {", "SSL_GET {\n   url {\n    path /\n   }")
	clock := NewClock()
	a, err := NewWith(parse(t, conf), func(Event) {}, nil, Options{Clock: clock, Handshakes: 3})
	if err != nil {
		t.Fatal(err)
	}
	b := newRunner(t, parse(t, conf), func(Event) {}, nil)
	if a.clock != clock || b.clock == nil || b.clock == clock {
		t.Errorf("clocks: a's %p (given %p), b's %p: want a's the given one, b's its own", a.clock, clock, b.clock)
	}
	var sems []chan struct{}
	for _, r := range []*Runner{a, b} {
		for _, c := range r.Checks() {
			p := c.Prober.(*HTTP)
			if p.clock != r.clock {
				t.Errorf("a prober's clock is not its Runner's")
			}
			sems = append(sems, p.handshakes)
		}
	}
	if len(sems) != 4 || sems[0] != sems[1] || sems[2] != sems[3] || sems[0] == sems[2] {
		t.Fatalf("handshake bounds not one per Runner: %v", sems)
	}
	if cap(sems[0]) != 3 || cap(sems[2]) != DefaultHandshakes {
		t.Errorf("bounds %d and %d, want 3 (Options) and %d", cap(sems[0]), cap(sems[2]), DefaultHandshakes)
	}
}

// TestUncheckedRealServersCostNothing: the runner makes nothing for a
// real server without checkers (issue 20): at 1,000 x 20 the servers and
// loggers it made and dropped were 100,000 objects of garbage among the
// pools' own, and kept 3 MB of the idle daemon's heap spans in use for
// 0.4 MB live. 50 pools of 40 such real servers allocate what 50 pools
// of one do, give or take one allocation a pool (its name's line
// number, without one below 100); before, 16 more a real server.
func TestUncheckedRealServersCostNothing(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	allocs := func(rs int) float64 {
		cfg := parse(t, testconf.Table(50, rs, false))
		return testing.AllocsPerRun(5, func() {
			if _, err := NewWith(cfg, func(Event) {}, log, Options{}); err != nil {
				t.Fatal(err)
			}
		})
	}
	if one, many := allocs(1), allocs(40); many > one+50 {
		t.Errorf("the runner of 50 x 40 unchecked real servers allocates %.0f times, of 50 x 1 %.0f", many, one)
	}
}
