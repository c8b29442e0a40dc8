package healthcheck

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/directord/directord/config"
	"github.com/directord/directord/internal/script"
)

// Event is a real server's change of state: what the IPVS side acts on.
type Event struct {
	Pool, Real int // the virtual server's and the real server's index in the configuration
	Alive      bool
	Weight     int // the weight to give it while alive
	Reason     string
}

// Check is one checker of one real server at run time.
type Check struct {
	Cfg      *config.Checker
	Prober   Prober
	Verdict  *Verdict
	srv      *server
	target   netip.Addr
	dynamic  int  // misc_dynamic's contribution to the weight
	reported bool // misc_dynamic reported a weight, which dynamic holds
	last     Result
	lastAt   time.Time
	// due is when the next probe is to start; Adopt carries it over a
	// reload, so that reloads do not put probes off; retry, that it is a
	// retry, which must not start early (entry.exact).
	due   atomic.Int64 // mono; 0 before the first schedule
	retry atomic.Bool
}

// server is a real server's checks, whose verdicts combine: it is alive
// when every checker is up.
type server struct {
	mu     sync.Mutex
	pool   *pool
	idx    int
	cfg    *config.RealServer
	checks []*Check
	alive  bool
	weight int
}

// logger is the pool's logger with the server's real_server, made when
// there is something to say: held by each server it was about 250 bytes
// of 10,000 checked servers' live heap for lines written seldom.
func (s *server) logger() *slog.Logger {
	return s.pool.log.With("real_server", s.cfg.Addr.String())
}

// pool counts its servers whose last probe was a local fault, to say so
// when all of them are.
type pool struct {
	mu      sync.Mutex
	vs      *config.VirtualServer
	name    string
	idx     int
	servers int
	unknown map[int]bool
	warned  bool
	// ha matches the virtual server's addresses, with ha_suspend (nil
	// without); suspended is set while none is on this host (SetLocal).
	ha        func(netip.Addr) bool
	suspended atomic.Bool
	log       *slog.Logger // the Runner's, with virtual_server
}

// Runner runs every check of a configuration, each on its own schedule
// (one goroutine keeps them all), at most Concurrency probes at a time.
type Runner struct {
	checks []*Check
	pools  []*pool
	emit   func(Event)
	log    *slog.Logger
	sem    chan struct{}
	// Jitter shortens each delay_loop by up to this fraction, at random,
	// so that checks started together drift apart and never fire late.
	Jitter float64
	// Egress tells whether the director's own way to an address is
	// broken (EgressDown): a failure then is Unknown, not Down. Its
	// answer for an address is kept for EgressTTL: when a link fails,
	// thousands of probes time out together, and one question to the
	// kernel answers them all.
	Egress func(netip.Addr) (string, bool)

	// OnResult, if set, sees every probe's result (metrics); it must not
	// block.
	OnResult func(c *Check, res Result)

	late    *lateness
	started int64 // mono, when Run began: the lateness of a probe carried over a reload counts from there
	clock   *Clock

	egressMu sync.Mutex
	egress   map[netip.Addr]egressAnswer
	asking   singleflight.Group // one question per address at a time
}

// lateness follows the probes that waited for this director longer than
// their delay_loop, to start after they were due or for a TLS handshake
// slot: the director then has more checks than its CPU (or Concurrency)
// serves, checks its real servers less often than configured, and sees
// their failures late. The log says so once a minute while it lasts, and
// when it is over; directord_check_wait_seconds shows the waits.
//
// A Runner that replaces another on a reload takes its lateness over
// (Adopt), so that an episode that spans the reload still ends in the log.
type lateness struct {
	active  atomic.Bool // an episode is under way
	mu      sync.Mutex
	since   time.Time // the first late probe of this episode; zero: none
	last    time.Time // the latest late probe
	warned  time.Time
	n       int // late probes not yet reported
	longest time.Duration
}

// LateEvery is how often the log says that checks run late, at most.
const LateEvery = time.Minute

func (l *lateness) note(log *slog.Logger, waited, delayLoop time.Duration, now time.Time) {
	if waited <= delayLoop && !l.active.Load() {
		return // on time, nothing to report: no lock
	}
	// The log is written after the lock is let go: a handler that
	// blocks (a full pipe) must not stop every probe here.
	var say func()
	l.mu.Lock()
	switch {
	case waited <= delayLoop:
		if l.since.IsZero() || now.Sub(l.last) < LateEvery {
			break
		}
		since, n, longest := l.since, l.n, l.longest
		say = func() {
			log.Info("health checks run on time again", "late_since", since.Format(time.RFC3339),
				"late_probes_since_warning", n, "longest_wait", longest.Round(time.Millisecond).String())
		}
		l.since, l.n, l.longest = time.Time{}, 0, 0
		l.active.Store(false)
	default:
		l.n++
		l.longest = max(l.longest, waited)
		l.last = now
		if l.since.IsZero() {
			l.since = now
			l.active.Store(true)
		}
		if !l.warned.IsZero() && now.Sub(l.warned) < LateEvery {
			break
		}
		since, n, longest := l.since, l.n, l.longest
		say = func() {
			log.Warn("health checks run late: this director has more checks than its CPU serves, and checks real servers less often than their delay_loop",
				"late_probes", n, "longest_wait", longest.Round(time.Millisecond).String(),
				"since", since.Format(time.RFC3339))
		}
		l.warned, l.n, l.longest = now, 0, 0
	}
	l.mu.Unlock()
	if say != nil {
		say()
	}
}

// EgressTTL is how long an answer of Egress is kept.
const EgressTTL = time.Second

type egressAnswer struct {
	why  string
	down bool
	at   time.Time
}

// egressDown asks Egress, or takes its answer of less than EgressTTL ago.
func (r *Runner) egressDown(addr netip.Addr, now time.Time) (string, bool) {
	r.egressMu.Lock()
	a, ok := r.egress[addr]
	r.egressMu.Unlock()
	if ok && now.Sub(a.at) < EgressTTL && now.Sub(a.at) >= 0 {
		return a.why, a.down
	}
	// Probes that timed out together ask together: one question to the
	// kernel answers them all.
	v, _, _ := r.asking.Do(addr.String(), func() (any, error) {
		why, down := r.Egress(addr)
		a := egressAnswer{why, down, now}
		r.egressMu.Lock()
		defer r.egressMu.Unlock()
		if r.egress == nil {
			r.egress = map[netip.Addr]egressAnswer{}
		}
		if len(r.egress) >= 65536 {
			for k, e := range r.egress {
				if now.Sub(e.at) >= EgressTTL {
					delete(r.egress, k)
				}
			}
		}
		r.egress[addr] = a
		return a, nil
	})
	a = v.(egressAnswer)
	return a.why, a.down
}

// Concurrency bounds the probes in flight, and so the descriptors they
// hold. It is large: a probe waiting for a silent server's timeout costs
// nothing but its descriptor, and must not delay the others. What costs
// CPU, the TLS handshake, has its own smaller bound (see HTTP).
const Concurrency = 1024

// Options are what a Runner's checks share besides the configuration.
// The zero value is the defaults.
type Options struct {
	// Clock is the checks' time; nil means a new one (NewClock). Tests
	// give one made in their testing/synctest bubble, or none: a Runner
	// made in a bubble has the bubble's.
	Clock *Clock
	// Handshakes bounds the TLS handshakes in flight across the checks
	// (SSL_GET); 0 means DefaultHandshakes.
	Handshakes int
}

// New is NewWith with the default Options.
func New(cfg *config.Config, emit func(Event), log *slog.Logger) (*Runner, error) {
	return NewWith(cfg, emit, log, Options{})
}

// NewWith makes the checks of cfg; emit receives each change of a real
// server's state, from the goroutine of the check that caused it (the
// changes of one real server are emitted in order). A checker that
// cannot run (a MISC_CHECK script refused by enable_script_security) is
// an error.
func NewWith(cfg *config.Config, emit func(Event), log *slog.Logger, o Options) (*Runner, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if o.Clock == nil {
		o.Clock = NewClock()
	}
	r := &Runner{emit: emit, log: log, sem: make(chan struct{}, Concurrency), Jitter: 0.1, Egress: EgressDown,
		late: &lateness{}, clock: o.Clock}
	ca := ""
	if cfg.SSL != nil {
		ca = cfg.SSL.CA
	}
	var errs []error
	share := newTLSShare(o.Clock, o.Handshakes)
	cert, diags := ClientCertificate(cfg.SSL)
	for _, d := range diags {
		if d.Severity == config.Error {
			errs = append(errs, errors.New(d.String()))
		} else {
			log.Warn(d.String())
		}
	}
	share.cert = cert
	for pi, vs := range cfg.VirtualServers {
		p := &pool{vs: vs, name: vs.Pos.String(), idx: pi, unknown: map[int]bool{}, ha: haMatcher(cfg, vs)}
		p.log = log.With("virtual_server", p.name)
		r.pools = append(r.pools, p)
		for ri, rs := range vs.RealServers {
			for _, u := range rs.Unchecked() {
				p.log.Warn("real server not checked by a checker directord does not have",
					"real_server", rs.Addr.String(), "checker", u.Type, "at", u.Pos.String(), "always_alive", rs.AlwaysAlive())
			}
			if len(rs.Checkers) == 0 {
				// Nothing to check: no server (nor its logger) made to be
				// dropped. At 1,000 x 20 without checkers those were
				// 100,000 objects of garbage among the pools' own, which
				// kept 3 MB of heap spans in use for 0.4 MB live.
				continue
			}
			s := &server{pool: p, idx: ri, cfg: rs, alive: true, weight: rs.Weight}
			for _, c := range rs.Checkers {
				var pr Prober
				var err error
				switch c.Type {
				case config.CheckHTTPGet, config.CheckSSLGet:
					pr, err = newHTTP(c, rs, ca, share)
				case config.CheckTCP:
					pr = &TCP{Target: TargetOf(c, rs)}
				case config.CheckMisc:
					pr, err = NewMisc(c, &cfg.Global)
				case config.CheckUDP:
					pr, err = NewUDP(c, rs)
				case config.CheckDNS:
					pr, err = NewDNS(c, rs)
				case config.CheckSMTP:
					pr, err = NewSMTP(c, rs)
				default:
					err = fmt.Errorf("checker type %s", c.Type)
				}
				if errors.Is(err, script.ErrDisabled) {
					// As keepalived: a MISC_CHECK whose script is disabled
					// (insecure, not found) is removed, not an error.
					s.logger().Warn("MISC_CHECK removed: its script is disabled", "at", c.Pos.String(), "reason", err.Error())
					continue
				}
				if err != nil {
					errs = append(errs, fmt.Errorf("%s: %s: %w", c.Pos, c.Type, err))
					continue
				}
				if cp, ok := pr.(interface{ setClock(*Clock) }); ok {
					cp.setClock(o.Clock)
				}
				ch := &Check{Cfg: c, Prober: pr, Verdict: NewVerdict(c.Retry, c.Rise, c.Fall, c.Alpha), srv: s,
					target: TargetOf(c, rs).Addr.Addr()}
				s.checks = append(s.checks, ch)
				s.alive = s.alive && ch.Verdict.Up()
				r.checks = append(r.checks, ch)
			}
			if len(s.checks) > 0 {
				p.servers++ // those that can be unknown (not one whose checks were all removed)
			}
		}
	}
	return r, errors.Join(errs...)
}

// Initial is every checked real server's state before any probe: alive,
// or not with alpha.
func (r *Runner) Initial() []Event {
	var out []Event
	seen := map[*server]bool{}
	for _, c := range r.checks {
		s := c.srv
		if !seen[s] {
			seen[s] = true
			out = append(out, Event{Pool: s.pool.idx, Real: s.idx, Alive: s.alive, Weight: s.weight, Reason: "start"})
		}
	}
	return out
}

// Adopt takes over the state of old's checks, after a reload: a checker
// that is the same (same virtual server, real server and settings,
// wherever the file has them) keeps its verdict, its count of failures or
// successes in a row, its misc_dynamic weight and its last result, so an
// unchanged real server keeps its health state. Call it before Run, with
// old stopped; it reports how many checks were adopted.
func (r *Runner) Adopt(old *Runner) int {
	r.late = old.late
	prev := map[string]*Check{}
	for i, k := range keys(old.checks) {
		prev[k] = old.checks[i]
	}
	newKeys := keys(r.checks)
	n := 0
	touched := map[*server]bool{}
	for i, c := range r.checks {
		o := prev[newKeys[i]]
		if o == nil {
			continue
		}
		o.srv.mu.Lock()
		*c.Verdict = *o.Verdict
		c.last, c.lastAt = o.last, o.lastAt
		// misc_dynamic's weight is absolute: kept as the script said it,
		// whatever the new configured weight.
		c.dynamic, c.reported = 0, o.reported
		if o.reported {
			c.dynamic = o.dynamic + o.srv.cfg.Weight - c.srv.cfg.Weight
		}
		// The next probe when it was due: a probe the reload cut short
		// is due already.
		if due := o.due.Load(); due != 0 {
			// On this Runner's scale, which may start elsewhere.
			c.due.Store(due + int64(old.clock.epoch.Sub(r.clock.epoch)))
		}
		c.retry.Store(o.retry.Load())
		o.srv.mu.Unlock()
		touched[c.srv] = true
		n++
	}
	for s := range touched {
		s.alive, s.weight = s.verdict()
	}
	return n
}

// keys names each check by what it is, wherever the file has it: its
// virtual server's services, its real server and its settings (the same
// checker twice on one real server told apart by order). Computed for a
// reload only: it costs a JSON round trip per check.
func keys(checks []*Check) []string {
	out := make([]string, len(checks))
	seen := map[string]bool{}
	for i, c := range checks {
		k := c.srv.pool.vs.Identity() + " " + c.srv.cfg.Addr.String() + " " + config.Canonical(c.Cfg)
		for seen[k] {
			k += "+"
		}
		seen[k] = true
		out[i] = k
	}
	return out
}

// Where is the check's virtual server and real server, by their indices
// in the configuration.
func (c *Check) Where() (pool, real int) { return c.srv.pool.idx, c.srv.idx }

// Checks are the checks, for status and metrics.
func (r *Runner) Checks() []*Check { return r.checks }

// Last is the check's last result and when it came.
func (c *Check) Last() (Result, time.Time) {
	c.srv.mu.Lock()
	defer c.srv.mu.Unlock()
	return c.last, c.lastAt
}

// Run runs the checks until ctx ends, and returns when every probe has.
//
// One goroutine keeps the checks in order of their next probe and starts
// those that are due, reading the clock once per wake-up; a probe has a
// goroutine of its own only while it runs. An idle check thus costs a
// place in a heap rather than a goroutine and a timer: with 10,000 real
// servers, tens of megabytes and as many wake-ups less.
func (r *Runner) Run(ctx context.Context) {
	q := &schedule{kick: make(chan struct{}, 1)}
	now := r.clock.Now()
	r.started = r.clock.mono(now)
	for _, c := range r.checks {
		due := c.due.Load()
		if due == 0 {
			due = r.clock.mono(now.Add(r.first(c.Cfg)))
			c.due.Store(due)
		}
		heap.Push(q, entry{c: c, when: due, exact: c.retry.Load()})
	}
	var wg sync.WaitGroup
	// Last, once every probe has returned: the connections kept for the
	// next probes (reuse_connection) are closed.
	defer func() {
		for _, c := range r.checks {
			if cl, ok := c.Prober.(io.Closer); ok {
				cl.Close()
			}
		}
	}()
	defer wg.Wait()
	// A function timer rather than a channel's: a channel timer reads the
	// clock to send the time, and each reading counts (see Clock).
	timer := time.AfterFunc(time.Hour, func() {
		select {
		case q.kick <- struct{}{}:
		default:
		}
	})
	defer timer.Stop()
	var due, idle []entry
	for {
		q.mu.Lock()
		woke := r.clock.Now()
		if r.clock.sinceBase(woke) > time.Second {
			// The wall clock read again, once a second: the clock's
			// base follows a stepped clock.
			woke = r.clock.rebase()
		}
		r.clock.setCoarse(woke)
		now := r.clock.mono(woke)
		// With the checks due now, those due within Slack that may
		// start early: one wake-up for many checks. A check suspended by
		// ha_suspend does not probe, and is due again a delay_loop later,
		// as keepalived's disabled checkers.
		for q.Len() > 0 && (q.entries[0].when <= now || !q.entries[0].exact && q.entries[0].when <= now+int64(Slack)) {
			e := heap.Pop(q).(entry)
			if e.c.srv.pool.suspended.Load() {
				e.when = now + int64(max(e.c.Cfg.DelayLoop, time.Millisecond))
				e.c.due.Store(e.when)
				idle = append(idle, e)
				continue
			}
			due = append(due, e)
		}
		for i, e := range idle {
			heap.Push(q, e)
			idle[i] = entry{}
		}
		idle = idle[:0]
		wait := time.Hour
		if q.Len() > 0 {
			wait = time.Duration(q.entries[0].when - now)
		}
		q.mu.Unlock()
		waited := false
		for i, e := range due {
			select {
			case r.sem <- struct{}{}:
			default:
				// Every place taken: wait for one. The heap read above is
				// then stale, and is read again before sleeping.
				waited = true
				select {
				case r.sem <- struct{}{}:
				case <-ctx.Done():
					return
				}
				// The probe starts now, not when the scheduler woke: its
				// result says when (Result.At less its Latency), which
				// saves a clock reading here for each probe while every
				// place is taken.
			}
			due[i] = entry{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				r.probe(ctx, e.c, q, woke, e.when)
			}()
		}
		due = due[:0]
		if waited {
			continue
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-q.kick:
		}
	}
}

// Bootstrap is the wait before any check's first probe, keepalived's
// BOOTSTRAP_DELAY (check_api.c register_checkers_thread).
const Bootstrap = time.Second

// first is the wait before a check's first probe, as keepalived's:
// Bootstrap plus a random part of its warmup, which defaults to its
// delay_loop (config), so that thousands of checks start at the rate
// they will keep; warmup 0 starts them all after Bootstrap.
func (r *Runner) first(c *config.Checker) time.Duration {
	d := Bootstrap
	if c.Warmup > 0 {
		d += time.Duration(rand.Int64N(int64(c.Warmup)))
	}
	return d
}

// probe runs one probe of c, due at due (mono), holding a place of
// r.sem, takes its result and puts c back in q for its next probe. The
// probe started when its result says (its end, At or the clock read
// here, less its Latency), else at woke, the scheduler's latest reading.
func (r *Runner) probe(ctx context.Context, c *Check, q *schedule, woke time.Time, due int64) {
	res := c.Prober.Probe(ctx)
	<-r.sem
	if ctx.Err() != nil {
		return // c.due is still this probe's: due at once after a reload
	}
	end, start := res.At, woke
	if end.IsZero() {
		end = r.clock.Now()
	}
	if !res.At.IsZero() || res.Latency > 0 {
		start = end.Add(-res.Latency)
	}
	r.clock.setCoarse(end)
	// Late from when it was due, or for a check carried over a reload,
	// from when this Runner began: the reload's own time is not the
	// director's overload.
	res.Waited += time.Duration(max(r.clock.mono(start)-max(due, r.started), 0))
	r.late.note(r.log, res.Waited, c.Cfg.DelayLoop, end)
	// Only a silent failure can be this director's broken link: a
	// status 500 or a refused connection came from the real server.
	if res.Outcome == Down && res.Silent && r.Egress != nil {
		if why, down := r.egressDown(c.target, end); down {
			res.Outcome, res.Reason = Unknown, why+" ("+res.Reason+")"
		}
	}
	if r.OnResult != nil {
		r.OnResult(c, res)
	}
	// A retry comes delay_before_retry after the failed attempt, as in
	// keepalived; the next cycle delay_loop after the start of this
	// one, so that a probe that waited out its timeout does not push
	// the next one back: a server that answers again is seen within
	// one delay_loop.
	var next time.Duration
	retry := r.record(c, res, end)
	if retry {
		next = c.Cfg.DelayBeforeRetry
		if res.Outcome == Unknown {
			// This director's own trouble (out of descriptors): do not
			// make it worse by trying again at once.
			next = max(next, time.Second)
		}
	} else {
		next = c.Cfg.DelayLoop
		if r.Jitter > 0 {
			next -= time.Duration(rand.Float64() * r.Jitter * float64(next))
		}
		next -= end.Sub(start)
	}
	next = max(next, time.Millisecond)
	when := r.clock.mono(end) + int64(next)
	c.due.Store(when)
	c.retry.Store(retry)
	q.mu.Lock()
	heap.Push(q, entry{c: c, when: when, exact: retry})
	first := q.entries[0].c == c
	q.mu.Unlock()
	if first {
		// Earlier than the scheduler's wake-up: wake it.
		select {
		case q.kick <- struct{}{}:
		default:
		}
	}
}

// schedule is the checks in order of their next probe (a heap).
type schedule struct {
	mu      sync.Mutex
	entries []entry
	kick    chan struct{} // a check now comes first
}

type entry struct {
	c    *Check
	when int64 // mono
	// exact: a retry, which must not start before its
	// delay_before_retry (a server is not down before its attempts
	// took their time); a cycle, shortened at random anyway (Jitter),
	// may start up to Slack early.
	exact bool
}

// Slack is how early the scheduler starts a check's cycle (not a retry)
// with others due before it: at 5,000 probes a second, due 0.2 ms apart,
// each would have a wake-up of its own, and every wake-up of the
// scheduler is a clock reading, a timer and two goroutine switches.
const Slack = 2 * time.Millisecond

func (q *schedule) Len() int           { return len(q.entries) }
func (q *schedule) Less(i, j int) bool { return q.entries[i].when < q.entries[j].when }
func (q *schedule) Swap(i, j int)      { q.entries[i], q.entries[j] = q.entries[j], q.entries[i] }
func (q *schedule) Push(x any)         { q.entries = append(q.entries, x.(entry)) }
func (q *schedule) Pop() any {
	n := len(q.entries) - 1
	e := q.entries[n]
	q.entries[n] = entry{}
	q.entries = q.entries[:n]
	return e
}

// record takes a probe's result: the checker's verdict, then its real
// server's, emitted if it changed. It reports whether the next probe is a
// retry.
func (r *Runner) record(c *Check, res Result, now time.Time) bool {
	s := c.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	c.last, c.lastAt = res, now
	changed, retry := c.Verdict.Next(res.Outcome)
	s.pool.local(s.idx, res.Outcome == Unknown)
	if (res.Outcome == Down || (res.Outcome == Unknown && c.Cfg.LogAllFailures)) && s.pool.log.Enabled(context.Background(), slog.LevelDebug) {
		s.logger().Debug("check failed", "check", c.Cfg.Type.String(), "outcome", res.Outcome.String(), "reason", res.Reason)
	}
	// misc_dynamic, as keepalived's check_misc.c: an exit code of 2 or
	// more sets the weight, exit 0 gives the configured weight back; a
	// failure leaves the weight alone while retries remain, and only a
	// checker that went down drops its contribution.
	switch {
	case res.Outcome == Up && res.Weight >= 0:
		c.dynamic, c.reported = res.Weight-s.cfg.Weight, true
	case res.Outcome == Up && c.Cfg.Misc != nil && c.Cfg.Misc.Dynamic:
		c.dynamic, c.reported = 0, false
	case res.Outcome == Down && !c.Verdict.Up():
		c.dynamic, c.reported = 0, false
	}
	alive, weight := s.verdict()
	if !changed && alive == s.alive && weight == s.weight {
		return retry
	}
	was := s.alive
	s.alive, s.weight = alive, weight
	if alive != was {
		s.logger().Info("real server", "alive", alive, "weight", weight,
			"check", c.Cfg.Type.String(), "reason", res.Reason)
	}
	r.emit(Event{Pool: s.pool.idx, Real: s.idx, Alive: alive, Weight: weight, Reason: res.Reason})
	return retry
}

// verdict is the real server's state from its checks': alive when every
// checker is up, at its configured weight plus what each MISC_CHECK with
// misc_dynamic made of it (keepalived's effective_weight: iweight plus
// each checker's cur_weight), at least 0. What the kernel gets of it is
// director.Weigh's to decide.
func (s *server) verdict() (alive bool, weight int) {
	alive, weight = true, s.cfg.Weight
	for _, c := range s.checks {
		alive = alive && c.Verdict.Up()
		weight += c.dynamic
	}
	return alive, max(weight, 0)
}

// local notes whether server i's last probe was a local fault, and says
// so once when every server of the pool is in that case: the pool is
// kept as it was, since those probes prove nothing.
func (p *pool) local(i int, unknown bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if unknown {
		p.unknown[i] = true
	} else {
		delete(p.unknown, i)
	}
	switch all := len(p.unknown) == p.servers; {
	case all && !p.warned:
		p.warned = true
		p.log.Warn("every check of the virtual server fails with a fault of this director: its real servers are kept as they were")
	case !all && p.warned && len(p.unknown) == 0:
		p.warned = false
		p.log.Info("the virtual server's checks work again")
	}
}
