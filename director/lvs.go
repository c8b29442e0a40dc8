package director

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/directord/directord/config"
	"github.com/directord/directord/internal/alert"
	"github.com/directord/directord/internal/script"
	"github.com/directord/directord/ipvs"
	"github.com/directord/directord/vrrp"
)

// Kernel is what LVS needs of the kernel's IPVS; *ipvs.Client is one.
type Kernel interface {
	ipvs.Kernel
	SyncKernel
	Flush() error
	Timeouts() (ipvs.Timeouts, error)
	SetTimeouts(ipvs.Timeouts) error
}

// LVS runs the data plane of a configuration: it keeps the kernel's
// virtual servers as the pools want them, on every director whatever its
// VRRP state (the virtual addresses decide which one gets the traffic, so
// a backup that takes over already holds the table), and makes the sync
// daemons follow their VRRP instance.
type LVS struct {
	k      Kernel
	log    *slog.Logger
	cfg    *config.Config
	pools  []*Pool
	states [][]RealState
	rec    *ipvs.Reconciler
	syncd  *SyncDaemons
	tmo    timeouts // lvs_timeouts, and the kernel's own to restore

	// KeepOnStop leaves the virtual servers in the kernel at stop
	// (keepalived's --dont-release-ipvs), for a restart that adopts them
	// without cutting a connection.
	KeepOnStop bool

	// Resync is how often the kernel's table is read again, to repair
	// what was changed behind directord's back; RetryMin and RetryMax
	// bound the wait before a failed change is tried again.
	Resync, RetryMin, RetryMax time.Duration

	// Sysctls are the kernel's net.ipv4.vs settings (sloppy_tcp and
	// sloppy_sctp, set while a virtual server is announced by BGP); set
	// it before Run, the default is /proc/sys.
	Sysctls Sysctls
	sloppy  map[string]sloppyHeld
	// sloppyOn: the setting was 1 at the last applySloppy.
	sloppyOn map[string]bool

	// wantOK: a full sync was tried since the last reload or drain, so
	// a verdict programs its own pool's services alone; false before the
	// first, after a reload or a drain (whose full sync is pending) and
	// after a verdict's sync failed (the retry's full sync takes it). The
	// wanted table itself is not kept between syncs (1.7 MB of live heap
	// at 1,000 x 20): a verdict writes its pool's services afresh.
	wantOK  bool
	updates chan update

	// Notify runs a quorum or real server notify script; it must not
	// block (the default queues it on the LVS's script queue, where its
	// scripts run in turn).
	Notify func(s *config.Script)
	// FIFO, if set, writes a notify FIFO line (lvs_notify_fifo); it must
	// not block.
	FIFO func(line string)
	// Alerts mails the smtp_alert e-mails of quorum and real server
	// changes; nil mails none. Set it before Run.
	Alerts *alert.Mailer
	// OnServing, if set before Run, sees after every attempt to program
	// the kernel whether each virtual server is programmed and has quorum
	// (what BGP announces on); it is called from Run's goroutine and must
	// not block.
	OnServing func([]Serving)
	// AfterFullSync, if set before Run, is called from Run's goroutine
	// after each full sync that left the kernel holding the wanted
	// table: the start's first sync, each resync (every Resync, which
	// reads the whole table back) and the first after a Reload. Each
	// leaves far more garbage than stays live (the dump's netlink
	// messages, the decoded table replaced, the reload's parse); the
	// daemon returns the free heap to the system then (releaseMemory).
	// It must not block.
	AfterFullSync func()

	scripts   *script.Queue
	ownQueue  bool // scripts is the LVS's own: its stop waits for them
	notesMu   sync.Mutex
	notesShut bool

	// gen counts reloads: verdicts of an older generation's checks are
	// dropped, their indices are of another configuration.
	gen     int
	drained map[netip.AddrPort]bool // real servers kept at weight 0 by the operator
	ctl     chan func()             // run in Run's goroutine: reloads, drains, status
	// reprogram asks Run for a full sync after a ctl function.
	reprogram bool
	reloaded  bool // a Reload's full sync is pending (AfterFullSync)
	// held keeps the notifications of the start (the quorum's, a real
	// server's) until the first sync has been tried, in their order: see
	// say.
	held    []func()
	holding bool
	// pending keeps a verdict's notifications (its real server's, its
	// pool's quorum) until the kernel holds what the verdict changed:
	// see tell. verdict is true while a verdict is being applied.
	pending []note
	verdict bool
	// syncdOK is false while the sync daemons are not as wanted: the
	// resync tries again.
	syncdOK bool
	// flush ends the run of a sync daemon's role a transition took away
	// (SyncDaemons.Next).
	flush *time.Timer

	ops, opErrors atomic.Uint64
	lastSync      atomic.Int64 // unix nanoseconds

	mu      sync.Mutex
	vrrp    map[string]vrrp.State // the latest state of each instance
	kick    chan struct{}
	synced  chan struct{} // closed after the first successful sync, for tests
	stopped chan struct{} // closed when Run returns
}

// Serving is one virtual server as the announcer sees it.
type Serving struct {
	VS *config.VirtualServer
	// Programmed: its services are in the kernel as wanted (the last
	// attempt to program it succeeded) and, for a virtual server announced
	// by BGP, the sloppy setting its protocol needs is 1 (sloppyNeeded):
	// what a director must have before a router sends it flows that
	// another director started.
	Programmed bool
	Quorum     bool
}

// serving tells OnServing where every pool stands.
func (l *LVS) serving(programmed bool) {
	if l.OnServing == nil {
		return
	}
	out := make([]Serving, len(l.pools))
	for i, p := range l.pools {
		out[i] = Serving{VS: p.VS, Programmed: programmed && l.sloppyReady(p.VS), Quorum: p.QuorumUp()}
	}
	l.OnServing(out)
}

// update is a health verdict on real server rs of pool.
type update struct {
	gen, pool, rs int
	st            RealState
}

// NewLVS prepares the data plane of cfg; nothing reaches the kernel
// before Run.
func NewLVS(cfg *config.Config, k Kernel, log *slog.Logger) (*LVS, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	pools, err := NewPools(cfg)
	if err != nil {
		return nil, err
	}
	l := &LVS{
		k: k, log: log, cfg: cfg, pools: pools,
		rec:      ipvs.NewReconciler(k),
		syncd:    NewSyncDaemons(k, cfg.Global.SyncDaemon, log),
		Sysctls:  procSysctls{},
		Resync:   30 * time.Second,
		RetryMin: time.Second,
		RetryMax: 30 * time.Second,
		vrrp:     map[string]vrrp.State{},
		updates:  make(chan update, 64),
		drained:  map[netip.AddrPort]bool{},
		ctl:      make(chan func()),
		kick:     make(chan struct{}, 1),
		synced:   make(chan struct{}),
		stopped:  make(chan struct{}),
	}
	if s, ok := k.(Sysctls); ok {
		// A kernel that has its own settings (the tests' fake, a
		// namespace's) keeps them.
		l.Sysctls = s
	}
	l.states = initialStates(pools)
	runner := script.NewRunner(&cfg.Global)
	l.scripts, l.ownQueue = script.NewQueue(log), true
	l.Notify = func(s *config.Script) {
		l.notesMu.Lock()
		defer l.notesMu.Unlock()
		if l.notesShut {
			return
		}
		l.scripts.Submit(script.PoolJob(runner, s))
	}
	return l, nil
}

// ShareScripts makes the LVS's scripts run on q, which outlives it: its
// stop does not wait for them. Call it before Run.
func (l *LVS) ShareScripts(q *script.Queue) {
	l.scripts, l.ownQueue = q, false
}

// Observe takes a VRRP transition; it never blocks, so vrrp.Node may
// call it from an instance's goroutine.
//
// An instance stopping (to Initialize: directord's shutdown, or a reload
// that restarts VRRP) leaves the sync daemons as they are: starting a
// backup daemon only to stop it at once costs the kernel seconds, and a
// restarted instance says where it stands soon enough.
func (l *LVS) Observe(ev vrrp.Event) {
	if ev.To == vrrp.Initialize {
		return
	}
	l.mu.Lock()
	l.vrrp[ev.Instance] = ev.To
	l.mu.Unlock()
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// Seed sets a real server's state before Run: the health checks' initial
// verdicts (alive, or not with alpha).
func (l *LVS) Seed(pool, rs int, st RealState) {
	if pool < len(l.states) && rs < len(l.states[pool]) {
		l.states[pool][rs] = st
	}
}

// Report gives the LVS a health check's verdict on real server rs (its
// index in the configuration) of pool; it blocks only while the LVS is
// busy with the kernel, and not at all once Run has returned.
func (l *LVS) Report(ctx context.Context, pool, rs int, st RealState) {
	l.ReportGen(ctx, 0, pool, rs, st)
}

// ReportGen is Report from the checks of generation gen (0 at start, then
// what Reload returned): a verdict of an older generation is dropped.
func (l *LVS) ReportGen(ctx context.Context, gen, pool, rs int, st RealState) {
	select {
	case l.updates <- update{gen, pool, rs, st}:
	case <-ctx.Done():
	case <-l.stopped:
	}
}

// Want is the table the pools want now. It is a query: it moves no
// quorum state and runs no script.
func (l *LVS) Want() ipvs.Table {
	t := ipvs.Table{}
	for i, p := range l.pools {
		p.Write(l.states[i], l.drained, t)
	}
	return t
}

// advance moves pool i's quorum state after a change of its real servers'
// states or drains, and gives the notifications of a transition (tell):
// the log, quorum_up or quorum_down, the FIFO line, the e-mail (queued),
// as keepalived logs and then runs do_vs_notifies.
func (l *LVS) advance(i int) {
	p := l.pools[i]
	init := p.init
	if !p.Advance(l.states[i], l.drained) {
		return
	}
	up := p.QuorumUp()
	l.tell(i, -1, noteState, up, l.quorumTold(i, l.states[i], up, init))
}

// quorumTold is what pool i's quorum transition to up tells, its real
// servers in states: in keepalived's order (ipwrapper.c
// update_quorum_state, do_vs_notifies), the log line, the script, the
// FIFO line, the mail.
func (l *LVS) quorumTold(i int, states []RealState, up, init bool) func() {
	vs := l.pools[i].VS
	var sum int64
	if vs.SMTPAlert && l.Alerts != nil {
		sum = int64(Weigh(vs, states, l.drained, up).Sum)
	}
	return func() {
		lvl := slog.LevelInfo
		if !up {
			lvl = slog.LevelWarn
		}
		l.log.Log(context.Background(), lvl, "virtual server quorum", "virtual_server", vs.Pos.String(), "quorum_up", up)
		if s := script.Quorum(vs, up); s != nil {
			l.Notify(s)
		}
		l.fifoVS(vs, up)
		if vs.SMTPAlert && l.Alerts != nil {
			l.Alerts.Send(alert.Quorum(l.Alerts.RouterID(), vs, up, init, sum))
		}
	}
}

// say gives a notification now, or after the start's first sync while
// that is pending. keepalived tells a virtual server's quorum at its
// start once it has put the service and its real servers in the kernel
// (ipwrapper.c init_service_vs, update_quorum_state); directord programs
// the whole table in one sync, and tells all of them after it, so that
// the start's 1,000 lines, scripts and FIFO lines of 1,000 virtual
// servers do not hold the table back (in a guest without a vDSO they
// were 0.13 s of its clock readings alone).
func (l *LVS) say(f func()) {
	if l.holding {
		l.held = append(l.held, f)
		return
	}
	f()
}

// release gives the notifications held for the start, in their order.
func (l *LVS) release() {
	held := l.held
	l.held, l.holding = nil, false
	for _, f := range held {
		f()
	}
}

// A note is a notification that waits for the kernel: of real server rs
// of pool (kind state: its notify_up or notify_down and FIFO line; kind
// mail: its e-mail), or of the pool's quorum (rs -1), a transition to up
// or down. Every note is of the current generation: a reload gives what
// waits (giveWaiting) before it renumbers the pools.
type note struct {
	pool, rs int
	kind     noteKind
	up       bool
	f        func()
}

type noteKind uint8

const (
	noteState noteKind = iota
	noteMail
)

// tell gives a notification of pool's real server rs (-1: of its
// quorum), a transition to up. While a verdict is applied (l.verdict) it
// waits in pending until the kernel holds that pool as wanted, as
// keepalived notifies only once its ipvs_cmd has succeeded (ipwrapper.c
// perform_svr_state: on a failure the real server keeps its state, its
// notifies are not run, and the next check tries again). A verdict's
// transition opposite to the last one still waiting of the same real
// server (or quorum) cancels it, and neither is given: the kernel never
// held the first, and keepalived would have seen no change. Any other
// notification (a drain's, a reload's quorum) waits behind one of the
// same real server or quorum, so that what is told keeps its order;
// without one it is say. It reports whether it cancelled.
func (l *LVS) tell(pool, rs int, kind noteKind, up bool, f func()) (cancelled bool) {
	last := -1
	for i, n := range l.pending {
		if n.pool == pool && n.rs == rs && n.kind == kind {
			last = i
		}
	}
	switch {
	case !l.verdict && last < 0:
		l.say(f)
		return false
	case l.verdict && last >= 0 && l.pending[last].up != up:
		l.pending = slices.Delete(l.pending, last, last+1)
		return true
	}
	l.pending = append(l.pending, note{pool, rs, kind, up, f})
	return false
}

// untell replays pool's quorum after tell cancelled a transition of its
// real server rs that the kernel never held, st being what the verdict
// leaves it in (its state as last told). keepalived's quorum steps only
// with real servers whose ipvs_cmd succeeded (ipwrapper.c
// perform_svr_state, update_quorum_state), one at a time: so from the
// quorum as last told, each real server's transition still waiting, in
// its order, steps it, and a quorum transition waits right after the one
// that made it; those waiting before go. With a hysteresis the quorum is
// not a function of the weights alone, and stepping on from where the
// cancelled transition left it would differ: at quorum 3 and hysteresis
// 1, a server of weight 2 down (3 to 1: lost) and back (3: not won back
// below 4) would lose a quorum that keepalived, which saw neither, keeps.
func (l *LVS) untell(pool, rs int, st RealState) {
	p := l.pools[pool]
	states := slices.Clone(l.states[pool])
	states[rs] = st
	up, seen := p.quorumUp, false
	for _, n := range l.pending {
		switch {
		case n.pool != pool || n.kind != noteState:
		case n.rs < 0 && !seen:
			up, seen = !n.up, true
		case n.rs >= 0 && n.rs < len(states):
			states[n.rs].Alive = !n.up
		}
	}
	pending := make([]note, 0, len(l.pending))
	for _, n := range l.pending {
		if n.pool != pool || n.kind != noteState {
			pending = append(pending, n)
			continue
		}
		if n.rs < 0 || n.rs >= len(states) {
			continue
		}
		pending = append(pending, n)
		states[n.rs].Alive = n.up
		var moved bool
		up, moved = quorumStep(p.VS, up, false, false, Weigh(p.VS, states, l.drained, up).Sum)
		if moved {
			pending = append(pending, note{pool, -1, noteState, up, l.quorumTold(pool, states, up, false)})
		}
	}
	l.pending = pending
	p.quorumUp = up
}

// told gives the start's notifications (release), then those waiting
// for the kernel of the pools holds says the kernel now holds as wanted
// (nil: all of them), in their order.
func (l *LVS) told(holds func(pool int) bool) {
	l.release()
	var give []note
	keep := l.pending[:0]
	for _, n := range l.pending {
		if holds == nil || holds(n.pool) {
			give = append(give, n)
		} else {
			keep = append(keep, n)
		}
	}
	clear(l.pending[len(keep):])
	l.pending = keep
	for _, n := range give {
		n.f()
	}
}

// giveWaiting gives every notification waiting for the kernel, at a
// reload (whose new pools do not share the old ones' indices): after the
// start's, if those are still held.
func (l *LVS) giveWaiting() {
	waiting := l.pending
	l.pending = nil
	for _, n := range waiting {
		l.say(n.f)
	}
}

// toldAfterFailure gives, after a full sync that failed, the
// notifications of the pools none of whose services failed, when err
// says which failed (ipvs.FailedServices): the others' changes are in
// the kernel, as keepalived's are, one ipvs_cmd each.
func (l *LVS) toldAfterFailure(err error) {
	failed, known := ipvs.FailedServices(err)
	if !known {
		l.release()
		return
	}
	l.told(func(i int) bool {
		if i >= len(l.pools) {
			return false
		}
		for _, k := range l.pools[i].Keys {
			if failed[k] {
				return false
			}
		}
		return true
	})
}

// advanceAll is advance for every pool: at the start, and after a drain
// or a reload, which may move any pool's quorum.
func (l *LVS) advanceAll() {
	for i := range l.pools {
		l.advance(i)
	}
}

// Run programs the kernel and keeps it so until ctx ends.
func (l *LVS) Run(ctx context.Context) error {
	defer close(l.stopped)
	g := l.cfg.Global
	if g.LVSFlush {
		l.log.Info("lvs_flush: flushing the kernel's IPVS table")
		if err := l.k.Flush(); err != nil {
			l.log.Error("lvs_flush", "err", err)
		}
	}
	if err := l.tmo.apply(l.k, g.LVSTimeouts); err != nil {
		l.log.Error("lvs_timeouts", "err", err)
	}
	l.flush = time.NewTimer(time.Hour)
	l.flush.Stop()
	defer l.flush.Stop()
	l.syncdOK = l.syncState()
	// The pools start without quorum: their first step, before the
	// first sync, says whether they have it; what it has to say waits
	// for that sync (say).
	l.holding = true
	l.advanceAll()

	resync := time.NewTicker(l.Resync)
	defer resync.Stop()
	retry := time.NewTimer(0) // the first sync, at once
	defer retry.Stop()
	backoff := l.RetryMin
	first := true
	for {
		select {
		case <-ctx.Done():
			return l.stop()
		case <-l.kick:
			l.syncdOK = l.syncState()
		case <-l.flush.C:
			l.syncdOK = l.syncState()
		case <-resync.C:
			l.rec.Invalidate()
			retry.Reset(0)
			if !l.syncdOK {
				l.syncdOK = l.syncState()
			}
		case f := <-l.ctl:
			f()
			if l.reprogram {
				l.reprogram = false
				retry.Reset(0)
			}
		case u := <-l.updates:
			if u.gen != l.gen || u.pool >= len(l.states) || u.rs >= len(l.states[u.pool]) || l.states[u.pool][u.rs] == u.st {
				continue
			}
			// keepalived's order: the real server's script and FIFO line
			// (perform_svr_state's do_rs_notifies), its quorum's
			// (update_quorum_state), then the checker's mail.
			l.verdict = true
			changed := l.states[u.pool][u.rs].Alive != u.st.Alive
			vs, rs, alive := l.pools[u.pool].VS, l.pools[u.pool].VS.RealServers[u.rs], u.st.Alive
			if changed && l.tell(u.pool, u.rs, noteState, alive, func() {
				if s := script.RealServer(rs, alive); s != nil {
					l.Notify(s)
				}
				l.fifoRS(vs, rs, alive)
			}) {
				l.untell(u.pool, u.rs, u.st)
			}
			l.states[u.pool][u.rs] = u.st
			l.advance(u.pool)
			if changed && rs.SMTPAlert && l.Alerts != nil {
				l.tell(u.pool, u.rs, noteMail, alive, func() {
					l.Alerts.Send(alert.RealServer(l.Alerts.RouterID(), vs, rs, alive))
				})
			}
			l.verdict = false
			if first || !l.wantOK {
				continue // the pending full sync takes it, and tells
			}
			// Only this pool's services: a verdict costs the same
			// whatever the size of the table.
			p := l.pools[u.pool]
			want := make(ipvs.Table, len(p.Keys))
			p.Write(l.states[u.pool], l.drained, want)
			if err := l.syncServices(want, p.Keys); err != nil {
				// The full sync of the retry takes it, with the backoff;
				// until then verdicts only update the states.
				l.log.Error("ipvs: programming the kernel failed; trying again", "in", backoff.String(), "err", err)
				l.wantOK = false
				retry.Reset(backoff)
				backoff = min(2*backoff, l.RetryMax)
				l.serving(false)
				continue
			}
			l.serving(true)
			pool := u.pool
			l.told(func(i int) bool { return i == pool })
		case <-retry.C:
			began := time.Now()
			l.wantOK = true
			res, err := l.rec.Sync(l.Want())
			l.count(len(res.Ops), err)
			if err != nil {
				l.log.Error("ipvs: programming the kernel failed; trying again", "in", backoff.String(), "err", err)
				retry.Reset(backoff)
				backoff = min(2*backoff, l.RetryMax)
				l.serving(false)
				l.toldAfterFailure(err) // and the start's (release)
				continue
			}
			backoff = l.RetryMin
			l.applySloppy(l.announces())
			if l.sloppyMissing() {
				// Not announced until it is: tried again with the
				// backoff, not only at the next resync.
				retry.Reset(backoff)
				backoff = min(2*backoff, l.RetryMax)
			}
			l.serving(true)
			if len(res.Ops) > 0 || first {
				l.log.Info("ipvs table programmed", "ops", len(res.Ops), "read_kernel", res.Read,
					"took", time.Since(began).Round(time.Millisecond).String())
			}
			if l.log.Enabled(ctx, slog.LevelDebug) {
				// Asked first: each op's String, built for a line that is
				// not written, was 21,000 Sprintfs and 5.7 MB of garbage at
				// the start of 1,000 x 20.
				for _, o := range res.Ops {
					l.log.Debug("ipvs", "op", o.String())
				}
			}
			for _, m := range reordered(res.Ops) {
				l.log.Info("ipvs: Maglev destinations put back in their order (the kernel's differed)",
					"service", m.key.String(), "moved", m.moved)
			}
			l.told(nil)
			if (res.Read || l.reloaded) && l.AfterFullSync != nil {
				l.AfterFullSync()
			}
			l.reloaded = false
			if first {
				close(l.synced)
				first = false
			}
		}
	}
}

// omegaStop gives, at stop, what keepalived's checker tells for each
// virtual server with omega (stop has the order): with reals, each real
// server that was in the table and alive (as last told: states,
// quorumUp) down, its notify_down, FIFO line and mail
// (clear_service_rs, do_rs_notifies); then the virtual server's
// quorum_down, FIFO line and mail (update_vs_notifies, do_vs_notifies).
func (l *LVS) omegaStop(states [][]RealState, quorumUp []bool, reals bool) {
	for i, p := range l.pools {
		if !p.VS.Omega || i >= len(states) {
			continue
		}
		if reals {
			w := Weigh(p.VS, states[i], l.drained, quorumUp[i])
			for j, rs := range p.VS.RealServers {
				if j >= len(states[i]) || !states[i][j].Alive || !w.Reals[j].In {
					continue
				}
				if s := rs.NotifyDown(); s != nil {
					l.Notify(s)
				}
				l.fifoRS(p.VS, rs, false)
				if rs.SMTPAlert && l.Alerts != nil {
					l.Alerts.Send(alert.Shutdown(l.Alerts.RouterID(), p.VS, rs))
				}
			}
		}
		if p.VS.QuorumDown != nil {
			l.Notify(p.VS.QuorumDown)
		}
		l.fifoVS(p.VS, false)
		if p.VS.SMTPAlert && l.Alerts != nil {
			l.Alerts.Send(alert.Shutdown(l.Alerts.RouterID(), p.VS, nil))
		}
	}
}

// syncState applies the sync daemons for the latest state of their
// instance (Backup until it is known).
func (l *LVS) syncState() bool {
	inst := l.syncd.Instance()
	l.mu.Lock()
	st, ok := l.vrrp[inst]
	l.mu.Unlock()
	if !ok {
		st = vrrp.Backup
	}
	err := l.syncd.SetState(st)
	if next := l.syncd.Next(); !next.IsZero() {
		l.flush.Reset(max(0, time.Until(next)))
	}
	if err != nil {
		l.log.Error("ipvs sync daemon", "err", err)
		return false
	}
	return true
}

// stop does what keepalived's checker does at shutdown (check_daemon.c
// checker_terminate_phase1, ipwrapper.c clear_services): unless
// KeepOnStop (-I, which skips all of it), directord's virtual servers
// leave the kernel and those with omega tell it, in keepalived's order
// (below). The kernel's own connection timeouts come back in every case
// (keepalived's ipvs_stop). The sync daemons stop.
func (l *LVS) stop() error {
	l.release() // stopped before the first sync
	// A verdict the kernel never took is not told, and its real server
	// and quorum stop as they were told last: as keepalived's checker,
	// whose failed ipvs_cmd left the real server as it was (its omega
	// notify_down at stop follows rs->alive). Each waiting note is a
	// transition not told.
	states := l.states
	quorumUp := make([]bool, len(l.pools))
	for i, p := range l.pools {
		quorumUp[i] = p.quorumUp
	}
	if len(l.pending) > 0 {
		states = make([][]RealState, len(l.states))
		for i := range l.states {
			states[i] = slices.Clone(l.states[i])
		}
		for _, n := range l.pending {
			switch {
			case n.kind != noteState || n.pool >= len(states):
			case n.rs < 0:
				quorumUp[n.pool] = !quorumUp[n.pool]
			case n.rs < len(states[n.pool]):
				states[n.pool][n.rs].Alive = !states[n.pool][n.rs].Alive
			}
		}
		l.log.Warn("stopping with verdicts the kernel never took: their notifications are not given", "notifications", len(l.pending))
		l.pending = nil
	}
	g := l.cfg.Global
	// keepalived's order (ipwrapper.c clear_services, clear_service_vs,
	// clear_service_rs), for each virtual server: without a flush, its
	// real servers (and sorry server) leave the kernel, then with omega
	// each that was in the table and alive is told down (its script,
	// FIFO line, mail), then its quorum (update_vs_notifies), then the
	// service goes; with lvs_flush_on_stop VS its quorum is told, then
	// the service goes; with lvs_flush_on_stop ALL the table is flushed,
	// then each quorum is told. directord does each step for all of
	// them at once: what each virtual server's notifications find in the
	// kernel is what keepalived's find.
	var errs []error
	// As keepalived: the virtual servers directord made (or adopted) go,
	// read from the kernel afresh, once (a sync that fails reads it
	// again); someone else's stay.
	l.rec.Invalidate()
	remove := func() {
		res, err := l.rec.Sync(ipvs.Table{})
		l.log.Info("removing directord's virtual servers", "ops", len(res.Ops))
		errs = append(errs, err)
	}
	switch {
	case l.KeepOnStop:
		l.log.Info("leaving the virtual servers in the kernel (--dont-release-ipvs)")
	case g.LVSFlushOnStop == config.FlushAll:
		l.log.Info("lvs_flush_on_stop: flushing the kernel's IPVS table")
		errs = append(errs, l.k.Flush())
		l.omegaStop(states, quorumUp, false)
	case g.LVSFlushOnStop == config.FlushVS:
		l.omegaStop(states, quorumUp, false)
		remove()
	default:
		res, err := l.rec.EmptyServices()
		l.log.Info("removing directord's real servers", "ops", len(res.Ops))
		errs = append(errs, err)
		l.omegaStop(states, quorumUp, true)
		remove()
	}
	l.Close() // no more scripts; those queued run
	if l.ownQueue {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if l.scripts.Wait(ctx) != nil {
			l.log.Warn("notify scripts still running at stop: not waiting for them")
		}
		cancel()
	}
	errs = append(errs, l.tmo.restore(l.k))
	if !l.KeepOnStop {
		l.applySloppy(false)
	}
	if d := l.syncd.FlushWait(); d > 0 {
		// The peer taking over needs the connections of our last
		// seconds, which the kernel sends within this.
		l.log.Info("letting the IPVS sync daemon send its last connections", "wait", d.String())
		time.Sleep(d)
	}
	errs = append(errs, l.syncd.Stop())
	return errors.Join(errs...)
}
