package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/directord/directord/config"
	"github.com/directord/directord/director"
	"github.com/directord/directord/healthcheck"
	"github.com/directord/directord/internal/alert"
	"github.com/directord/directord/internal/metrics"
	"github.com/directord/directord/internal/nft"
	"github.com/directord/directord/internal/notifyfifo"
	"github.com/directord/directord/internal/script"
	"github.com/directord/directord/ipvs"
	"github.com/directord/directord/vrrp"
)

// daemon is a running directord: VRRP (unless -C), and the health checks
// with the IPVS data plane (unless -P), which a reload changes in place.
type daemon struct {
	o       *options
	log     *slog.Logger
	started time.Time

	mu  sync.Mutex // one reload at a time; guards what follows
	cfg *config.Config

	node     *vrrp.Node
	guard    *guardian // hands over if the daemon dies; with VRRP only
	nodeStop context.CancelFunc
	nodeDone chan error
	nodeKey  string // config.Canonical of what the node runs

	statics   *vrrp.Statics // static_ipaddress, static_routes, static_rules (static.go)
	staticsNL *netlink.Handle

	k          *ipvs.Client
	ipvsNS     *os.File   // net_namespace_ipvs's namespace, kept for the client's redials
	fw         *nft.Table // the VIPs' drop table (nftables), across reloads; nil if none
	lvs        *director.LVS
	lvsStop    context.CancelFunc
	lvsDone    chan error
	checks     *healthcheck.Runner
	checksCtx  context.Context // the checks' own: ends their reports too
	checksStop context.CancelFunc
	checksDone chan struct{}
	gen        int  // the checks' generation, for LVS.ReportGen
	closing    bool // shutdown has begun: no reload starts anything again

	// ha_suspend: the host's addresses, followed once a configuration
	// uses it, fed to the running checks (haChecks) at each change.
	haMu     sync.Mutex
	haAddrs  *healthcheck.LocalAddrs
	haStop   context.CancelFunc
	haDone   chan struct{}
	haChecks *healthcheck.Runner

	// view is what status, metrics and the watchdog read, published after
	// every change so that they never wait for a reload.
	view atomic.Pointer[view]
	// reloading is when the reload in progress began (unix ns), or 0.
	reloading atomic.Int64

	statsMu sync.Mutex
	reloads reloadStats

	// The planned hand-overs in force (directorctl handover), kept
	// across reloads until resumed.
	yieldMu  sync.Mutex
	yieldAll bool
	yielded  map[string]bool
	// onResult sees every probe's result (the metrics).
	onResult func(*healthcheck.Check, healthcheck.Result)
	metrics  *metrics.Metrics // nil without --metrics-address

	// scripts runs every notify script, across reloads: a VRRP node or
	// data plane that stops hands its last scripts (notify_stop) to it
	// and goes, so that neither a reload nor d.mu waits for them.
	scripts *script.Queue

	// fifos are the notify FIFOs (fifo.go); fifoKey what they were
	// opened from.
	fifos   atomic.Pointer[notifyfifo.Set]
	fifoKey string

	// mailer sends the smtp_alert e-mails, across reloads that keep
	// global_defs' e-mail settings; mailKey is those settings.
	mailer  *alert.Mailer
	mailKey string

	// bgp is the speaker of global_defs' bgp block, nil without one; read
	// without d.mu by the data plane's and VRRP's callbacks. bgpDrained is
	// drain-director, kept across a reload that restarts the speaker.
	bgp        atomic.Pointer[bgpRun]
	bgpDrained atomic.Bool
}

// alerts is the Mailer for cfg's e-mail settings: the daemon's own while
// they do not change, else a new one (the old one is closed, a mail in
// progress cut). nil when cfg mails nothing.
func (d *daemon) alerts(cfg *config.Config) *alert.Mailer {
	key := fmt.Sprintf("%q %+v", cfg.Global.RouterID, cfg.Global.Email)
	if d.mailer != nil && key == d.mailKey {
		return d.mailer
	}
	d.mailer.Close()
	d.mailer, d.mailKey = alert.New(&cfg.Global, d.log), key
	return d.mailer
}

// view is a consistent set of the running parts.
type view struct {
	cfg     *config.Config
	node    *vrrp.Node
	lvs     *director.LVS
	checks  *healthcheck.Runner
	closing bool
}

// publish makes the running parts visible to status, metrics and the
// watchdog; call it with d.mu held, after each change.
func (d *daemon) publish() {
	d.view.Store(&view{cfg: d.cfg, node: d.node, lvs: d.lvs, checks: d.checks, closing: d.closing})
}

type reloadStats struct {
	last       *reloadOutcome
	lastGood   time.Time
	ok, failed uint64
}

type reloadOutcome struct {
	at  time.Time
	err error
}

func (d *daemon) runVRRP() bool { return !d.o.checkOnly || d.o.vrrpOnly }
func (d *daemon) runLVS(cfg *config.Config) bool {
	return (!d.o.vrrpOnly || d.o.checkOnly) && (len(cfg.VirtualServers) > 0 || cfg.Global.SyncDaemon != nil)
}

// vrrpKey is what of a configuration the VRRP node runs: a reload that
// leaves it the same leaves the node alone, with its state and its
// addresses.
//
// The lists are sorted by name: moving an instance to another file or
// line is no change. Nice values are left out: they apply at start only.
func vrrpKey(cfg *config.Config) string {
	g := cfg.Global
	g.SyncDaemon, g.LVSTimeouts, g.LVSFlush, g.LVSFlushOnStop = nil, nil, false, config.FlushNone
	g.Nice, g.RTPriority = 0, 0
	g.NotifyFIFO, g.VRRPNotifyFIFO, g.LVSNotifyFIFO = nil, nil, nil // the daemon's (fifo.go)
	// Read at start; default_interface is the static entries' (static.go).
	g.MaxAutoPriority, g.MinAutoPriorityDelay, g.DefaultInterface = 0, 0, ""
	scripts := slices.SortedFunc(slices.Values(cfg.Scripts), func(a, b *config.VRRPScript) int { return strings.Compare(a.Name, b.Name) })
	groups := slices.SortedFunc(slices.Values(cfg.SyncGroups), func(a, b *config.SyncGroup) int { return strings.Compare(a.Name, b.Name) })
	insts := slices.SortedFunc(slices.Values(cfg.Instances), func(a, b *config.Instance) int { return strings.Compare(a.Name, b.Name) })
	files := slices.SortedFunc(slices.Values(cfg.TrackFiles), func(a, b *config.TrackFile) int { return strings.Compare(a.Name, b.Name) })
	// Not sorted: the first of a name is the one tracked.
	procs := cfg.TrackProcesses
	return config.Canonical(struct {
		G              config.Global
		Scripts        []*config.VRRPScript
		SyncGroups     []*config.SyncGroup
		Instances      []*config.Instance
		TrackFiles     []*config.TrackFile
		TrackProcesses []*config.TrackProcess
	}{g, scripts, groups, insts, files, procs})
}

// scriptsStopWait bounds the wait at stop for the notify scripts still
// queued (notify_stop, omega's quorum_down): each is bounded by
// script.NotifyTimeout too.
const scriptsStopWait = 10 * time.Second

// newScripts makes the daemon's script queue, its drops counted in the
// metrics.
func (d *daemon) newScripts() {
	d.scripts = script.NewQueue(d.log)
	if m := d.metrics; m != nil {
		d.scripts.OnDrop = func(j script.Job) { m.ObserveScriptDropped(j.Kind) }
	}
}

// waitScripts lets the last notify scripts run at stop, for a while, with
// no lock held.
func (d *daemon) waitScripts() {
	if d.scripts == nil {
		return
	}
	d.scripts.Close()
	ctx, cancel := context.WithTimeout(context.Background(), scriptsStopWait)
	defer cancel()
	if d.scripts.Wait(ctx) != nil {
		d.log.Warn("notify scripts still running at stop: not waiting for them", "waited", scriptsStopWait.String())
	}
	if d.mailer.Flush(ctx) != nil {
		d.log.Warn("smtp alerts still queued at stop: not waiting for them", "waited", scriptsStopWait.String())
	}
	d.mailer.Close()
}

// nodeKeyOf is what the VRRP node of cfg runs, its scripts as checked
// included: a reload that changes neither leaves the node alone.
func (d *daemon) nodeKeyOf(cfg *config.Config) string {
	return vrrpKey(cfg) + "\n" + script.CheckConfig(cfg, script.Sections{VRRP: true}, nil).Key()
}

// scriptSections are the scripts of cfg that this daemon runs.
func (d *daemon) scriptSections(cfg *config.Config) script.Sections {
	return script.Sections{VRRP: d.runVRRP(), LVS: d.runLVS(cfg)}
}

// ipvsOptions says where the IPVS socket opens: net_namespace_ipvs's
// namespace, whose file is opened once and kept for the client's redials;
// nil for directord's own namespace.
func (d *daemon) ipvsOptions(cfg *config.Config) (*ipvs.Options, error) {
	name := cfg.Global.NetNamespaceIPVS
	if name == nil {
		return nil, nil
	}
	if d.ipvsNS == nil {
		f, err := ipvsNetNS(*name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", cfg.Global.NetNamespaceIPVSPos(), err)
		}
		d.ipvsNS = f
	}
	return &ipvs.Options{NetNS: int(d.ipvsNS.Fd())}, nil
}

// The table keeps the macvlans too: a change of either side's method
// must not leave it out silently (the Node asks for it at run time).
var _ vrrp.VMACFirewall = (*nft.Table)(nil)

// firewall is the nftables table of cfg's instances without accept
// mode and of its macvlans (IGMP and MLD reports), opened once (a table of its name left
// by a crash is deleted then) and kept across reloads; nil when no
// instance needs it (Config.NFTableName).
func (d *daemon) firewall(cfg *config.Config) (*nft.Table, error) {
	name := cfg.NFTableName()
	if name == "" {
		return nil, nil
	}
	if d.fw == nil {
		t, err := nft.Open(nft.Options{Table: name, Priority: cfg.Global.NFTPriorityOrDefault(), Counters: cfg.Global.NFTCounters})
		drops := false
		for _, in := range cfg.Instances {
			drops = drops || in.DropsVIPs()
		}
		if err != nil && !drops {
			// Only for the macvlans' reports: they run without.
			d.log.Warn("vrrp firewall: no nftables table: the macvlans' IGMP and MLD reports leave with the VMAC", "err", err)
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("vrrp: the drop rules of instances without accept mode: %w", err)
		}
		d.fw = t
		for _, in := range cfg.Instances {
			if !in.DropsVIPs() {
				continue
			}
			for _, v := range append(append([]config.VIP{}, in.VIPs...), in.ExcludedVIPs...) {
				if a := v.Prefix.Addr(); a.Is6() && a.IsLinkLocalUnicast() {
					d.log.Warn("vrrp firewall: link-local virtual addresses are not filtered (keepalived's per-interface sets are not built)", "instance", in.Name, "vip", v.Prefix.String())
				}
			}
		}
	}
	return d.fw, nil
}

// namespacesKept refuses a reload that changes net_namespace or
// net_namespace_ipvs, as keepalived 2.2.7 ("Cannot change network
// namespace at a reload - please restart"): the running configuration
// goes on.
func namespacesKept(o *options, old, cfg *config.Config) error {
	if was, is := netNamespaceOf(o, old), netNamespaceOf(o, cfg); was != is {
		return fmt.Errorf("net_namespace cannot change at a reload (from %q to %q): restart directord", was, is)
	}
	str := func(p *string) string {
		if p == nil {
			return "(directord's own)"
		}
		if *p == "" {
			return "(the host's)"
		}
		return *p
	}
	if was, is := str(old.Global.NetNamespaceIPVS), str(cfg.Global.NetNamespaceIPVS); was != is {
		return fmt.Errorf("net_namespace_ipvs cannot change at a reload (from %s to %s): restart directord", was, is)
	}
	// keepalived: "Cannot change nftables table name at a reload".
	if was, is := old.NFTableName(), cfg.NFTableName(); was != "" && is != "" && was != is {
		return fmt.Errorf("the nftables table cannot change at a reload (from %s to %s): restart directord", was, is)
	}
	return nil
}

// daemonMain runs the configuration until SIGTERM or SIGINT; SIGHUP
// reloads it.
func daemonMain(o *options, cfg *config.Config, stderr io.Writer) int {
	d := &daemon{o: o, log: newLogger(o, stderr), started: time.Now(), cfg: cfg, yielded: map[string]bool{}}
	log := d.log
	if o.pidFile != "" {
		if err := os.WriteFile(o.pidFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
			log.Error("write pid file", "file", o.pidFile, "err", err)
			return exitFailure
		}
		defer os.Remove(o.pidFile)
	}
	// Adverts must leave on time on a busy host, or a backup takes the VIP
	// of a master that is only slow.
	if err := renice(cfg.Global.Nice); err != nil {
		log.Warn("could not set the nice value", "vrrp_priority", cfg.Global.Nice, "err", err)
	}
	if p := cfg.Global.RTPriority; p > 0 && d.runVRRP() {
		if err := setRealtime(p); err != nil {
			log.Warn("could not set real-time scheduling", "vrrp_rt_priority", p, "err", err)
		}
	}
	// Signals stay caught until the end: a second SIGTERM during the
	// shutdown does not cut short the priority 0 adverts and the removal of
	// the addresses.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if g := cfg.Global; g.MaxAutoPriority > 0 && d.runVRRP() {
		go runAutoPriority(ctx, &autoPriority{max: g.MaxAutoPriority, minDelay: g.MinAutoPriorityDelay}, g.RTPriority, log)
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	d.newMetrics()
	d.newScripts()
	script.CheckConfig(cfg, d.scriptSections(cfg), log)
	d.mu.Lock()
	vrrp.InitTrackFiles(cfg, false, log) // init_file, as keepalived at start
	d.openFIFOs(cfg)
	err := d.start(cfg)
	d.publish()
	d.mu.Unlock()
	defer d.closeFIFOs() // after the shutdown's last lines
	if err != nil {
		log.Error("directord cannot start", "err", err)
		d.shutdown()
		d.waitScripts()
		return exitFailure
	}
	var aux sync.WaitGroup
	auxCtx, stopAux := context.WithCancel(context.Background())
	if err := d.serveAux(auxCtx, &aux); err != nil {
		log.Error("directord cannot start", "err", err)
		stopAux()
		d.shutdown()
		d.waitScripts()
		return exitFailure
	}
	// Where the start's time went (docs/benchmarks.md): reading the
	// configuration, then building the model, the checks and the IPVS
	// side (whose first sync logs its own time) and VRRP.
	phases := []any{"config_ms", o.loaded.Milliseconds(),
		"start_ms", time.Since(o.begun.Add(o.loaded)).Milliseconds(),
		"exec_to_main_ms", o.execToMain.Milliseconds()}
	if !o.execKnown {
		phases = phases[:4]
	}
	log.Debug("start: phases", phases...)
	log.Info("directord started", "version", version, "config", o.file,
		"instances", len(cfg.Instances), "virtual_servers", len(cfg.VirtualServers), "vrrp", d.node != nil, "ipvs", d.lvs != nil)
	notifyReady()
	for {
		select {
		case <-hup:
			notifyReloading()
			d.reload()
			notifyReady()
			continue
		case <-ctx.Done():
		}
		break
	}
	notifyStopping()
	log.Info("directord stopping")
	err = d.shutdown()
	d.waitScripts()
	stopAux()
	aux.Wait()
	if err != nil {
		log.Error("shutdown", "err", err)
		return exitFailure
	}
	log.Info("directord stopped")
	return exitOK
}

// start runs a configuration: the IPVS side first, so that a master's
// traffic finds its virtual servers.
func (d *daemon) start(cfg *config.Config) error {
	if cfg.Global.BGP != nil {
		// First, so that its sessions come up while the rest starts;
		// nothing is announced before the data plane says it serves.
		b, err := startBGP(cfg, false, d.log)
		if err != nil {
			return err
		}
		d.bgp.Store(b)
	}
	if d.runLVS(cfg) {
		if err := d.startLVS(cfg); err != nil {
			return err
		}
	}
	// Before the instances: a unicast_src_ip may be a static address.
	if err := d.applyStatics(cfg); err != nil {
		return err
	}
	if d.runVRRP() && len(cfg.Instances) > 0 {
		if err := d.startNode(cfg); err != nil {
			return err
		}
	}
	return nil
}

func (d *daemon) startLVS(cfg *config.Config) error {
	opts, err := d.ipvsOptions(cfg)
	if err != nil {
		return fmt.Errorf("ipvs: virtual servers and sync daemons cannot run: %w", err)
	}
	k, err := ipvs.Dial(opts)
	if err != nil {
		return fmt.Errorf("ipvs: virtual servers and sync daemons cannot run: %w", err)
	}
	lvs, err := director.NewLVS(cfg, k, d.log)
	if err != nil {
		k.Close()
		return fmt.Errorf("virtual servers: %w", err)
	}
	lvs.KeepOnStop = d.o.keepIPVS
	lvs.AfterFullSync = releaseMemory
	if opts != nil {
		// sloppy_tcp and sloppy_sctp are the IPVS namespace's.
		lvs.Sysctls = director.NamespaceSysctls(opts.NetNS)
	}
	if d.scripts != nil {
		lvs.ShareScripts(d.scripts)
	}
	lvs.FIFO = d.writeLVS
	lvs.Alerts = d.alerts(cfg)
	lvs.OnServing = d.bgpServing
	for _, w := range ipvsAdvice(os.ReadFile) {
		d.log.Warn(w)
	}
	d.gen = 0 // a new LVS's first generation
	checks, err := d.newChecks(cfg, lvs)
	if err != nil {
		lvs.Close()
		k.Close()
		return err
	}
	for _, e := range checks.r.Initial() {
		lvs.Seed(e.Pool, e.Real, director.NewRealState(e.Alive, e.Weight))
	}
	d.k, d.lvs = k, lvs
	ctx, cancel := context.WithCancel(context.Background())
	d.lvsStop, d.lvsDone = cancel, make(chan error, 1)
	go func() { d.lvsDone <- lvs.Run(ctx) }()
	d.runChecks(checks)
	if d.node != nil {
		// VRRP runs already (a reload added virtual servers): the sync
		// daemons start from its instances' present state.
		d.node.Observe(d.vrrpObserver(lvs))
		if st, err := d.node.Status(context.Background()); err == nil {
			for _, s := range st {
				lvs.Observe(vrrp.Event{Instance: s.Name, To: s.State})
			}
		}
	}
	return nil
}

// newChecks makes the checks of cfg, reporting to lvs with the
// generation in d.gen when they run (runChecks). Their reports end with
// their context: stopped checks never wait on a busy data plane.
func (d *daemon) newChecks(cfg *config.Config, lvs *director.LVS) (*checkSet, error) {
	cs := &checkSet{}
	cs.ctx, cs.cancel = context.WithCancel(context.Background())
	gen := &d.gen
	r, err := healthcheck.New(cfg, func(e healthcheck.Event) {
		lvs.ReportGen(cs.ctx, *gen, e.Pool, e.Real, director.NewRealState(e.Alive, e.Weight))
	}, d.log)
	if err != nil {
		cs.cancel()
		return nil, fmt.Errorf("health checks: %w", err)
	}
	r.OnResult = d.onResult
	cs.r = r
	return cs, nil
}

// checkSet is a Runner with the context it runs and reports in.
type checkSet struct {
	r      *healthcheck.Runner
	ctx    context.Context
	cancel context.CancelFunc
}

// runChecks starts checks; d.gen must be theirs.
func (d *daemon) runChecks(cs *checkSet) {
	d.feedHASuspend(cs.r)
	d.checks, d.checksCtx, d.checksStop, d.checksDone = cs.r, cs.ctx, cs.cancel, make(chan struct{})
	done := d.checksDone
	go func() { defer close(done); cs.r.Run(cs.ctx) }()
	d.log.Debug("health checks running", "generation", d.gen, "checks", len(cs.r.Checks()))
}

// feedHASuspend gives r the host's addresses before it runs, and at each
// change after, when its configuration has ha_suspend: the address watch
// starts with the first such configuration and lasts until shutdown. A
// watch that cannot start leaves the checks running, unsuspended.
func (d *daemon) feedHASuspend(r *healthcheck.Runner) {
	d.haMu.Lock()
	defer d.haMu.Unlock()
	d.haChecks = r
	if !r.UsesHASuspend() {
		return
	}
	if d.haAddrs == nil {
		w, err := healthcheck.WatchLocalAddrs(d.log)
		if err != nil {
			d.log.Error("ha_suspend: cannot follow this host's addresses; the checks run unsuspended", "err", err)
			return
		}
		ctx, cancel := context.WithCancel(context.Background())
		d.haAddrs, d.haStop, d.haDone = w, cancel, make(chan struct{})
		go func() {
			defer close(d.haDone)
			w.Run(ctx, func() {
				d.haMu.Lock()
				defer d.haMu.Unlock()
				if d.haChecks != nil {
					d.haChecks.SetLocal(w.Addrs())
				}
			})
		}()
	}
	r.SetLocal(d.haAddrs.Addrs())
}

// stopHASuspend ends the address watch.
func (d *daemon) stopHASuspend() {
	d.haMu.Lock()
	stop, done := d.haStop, d.haDone
	d.haAddrs, d.haStop, d.haChecks = nil, nil, nil
	d.haMu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
}

// stopChecks stops the running checks and waits for their probes.
func (d *daemon) stopChecks() {
	if d.checksStop != nil {
		d.checksStop()
		<-d.checksDone
		d.checksStop = nil
	}
}

func (d *daemon) startNode(cfg *config.Config) error {
	node, h, err := d.newNode(cfg)
	if err != nil {
		return err
	}
	d.runNode(cfg, node, h)
	return nil
}

// newNode prepares VRRP for cfg (its interfaces found, its sockets open)
// without running it.
func (d *daemon) newNode(cfg *config.Config) (*vrrp.Node, *netlink.Handle, error) {
	h, err := netlink.NewHandle()
	if err != nil {
		return nil, nil, fmt.Errorf("netlink: %w", err)
	}
	// The firewall first: the Node puts its IPv6 macvlans in it before
	// they come up.
	fw, err := d.firewall(cfg)
	if err != nil {
		h.Close()
		return nil, nil, err
	}
	var vfw vrrp.Firewall
	if fw != nil {
		vfw = fw
	}
	node, err := vrrp.NewNodeFirewall(cfg, h, d.log, vfw)
	if err != nil {
		h.Close()
		return nil, nil, err // vrrp.NewNode says "vrrp: ..." itself
	}
	if d.scripts != nil {
		node.ShareScripts(d.scripts)
	}
	node.NotifyFIFO(d.writeVRRP)
	node.SetAlerts(d.alerts(cfg))
	return node, h, nil
}

func (d *daemon) runNode(cfg *config.Config, node *vrrp.Node, h *netlink.Handle) {
	node.Observe(d.vrrpObserver(d.lvs))
	if d.guard == nil {
		g, err := startGuardian(d.o, d.log)
		if err != nil {
			d.log.Error("the guardian cannot start: a crash of directord would leave its VIPs", "err", err)
		}
		d.guard = g
	}
	if d.guard != nil {
		node.OnTestament(d.guard.Bequeath)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	d.reYield(node) // before it runs: its instances start handed over
	go func() { done <- node.Run(ctx); h.Close() }()
	d.node, d.nodeStop, d.nodeDone, d.nodeKey = node, cancel, done, d.nodeKeyOf(cfg)
	d.seedBGP()
}

// stopNode stops VRRP cleanly: priority 0 adverts, addresses removed.
func (d *daemon) stopNode() error {
	if d.node == nil {
		return nil
	}
	d.nodeStop()
	err := <-d.nodeDone
	d.node = nil
	return err
}

// shutdown stops everything: VRRP first (the peer takes over within
// Skew_Time), then the checks, then the data plane (sync daemons stopped,
// the table left or flushed as configured).
func (d *daemon) shutdown() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closing = true
	defer d.publish()
	var errs []error
	if b := d.bgp.Load(); b != nil {
		// Before anything else: the routers stop sending before an
		// address or a service goes.
		d.bgp.Store(nil)
		errs = append(errs, b.stop())
	}
	errs = append(errs, d.stopNode())
	if d.fw != nil {
		// After VRRP has removed its addresses, as keepalived's nft_end.
		errs = append(errs, d.fw.Close())
		d.fw = nil
	}
	errs = append(errs, d.closeStatics()) // after the instances, as keepalived
	if d.guard != nil {
		d.guard.Stop() // after VRRP's own hand-over
		d.guard = nil
	}
	d.stopChecks()
	d.stopHASuspend()
	if d.lvs != nil {
		d.lvsStop()
		errs = append(errs, <-d.lvsDone)
		d.k.Close()
		d.lvs = nil
	}
	return errors.Join(errs...)
}

// errStopping refuses a reload or a drain during shutdown.
var errStopping = errors.New("directord is stopping")

// errBadConfig marks a reload refused for the file's errors.
type errBadConfig struct{ msgs []string }

func (e *errBadConfig) Error() string { return strings.Join(e.msgs, "; ") }

// reload reads the file again. A bad file changes nothing: the running
// configuration goes on and the log names file:line. A good one is applied
// by difference: an unchanged VRRP section keeps its node (state and
// addresses), unchanged checkers keep their verdicts and the reconciler
// touches only what changed in the kernel.
func (d *daemon) reload() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closing {
		return errStopping
	}
	d.reloading.Store(time.Now().UnixNano())
	err := d.reloadLocked()
	// Now that the old configuration, checks and node are dropped; and
	// again once the data plane's sync of the reload is over
	// (LVS.AfterFullSync), which may come before or after this.
	releaseMemory()
	d.publish()
	d.reloading.Store(0)
	now := time.Now()
	d.statsMu.Lock()
	defer d.statsMu.Unlock()
	d.reloads.last = &reloadOutcome{at: now, err: err}
	if err != nil {
		d.reloads.failed++
		d.log.Error("reload refused: the running configuration goes on", "config", d.o.file, "err", err)
		return err
	}
	d.reloads.ok++
	d.reloads.lastGood = now
	return nil
}

func (d *daemon) reloadLocked() error {
	log := d.log
	cfg, diags := config.Load(d.o.file, config.Options{ConfigID: d.o.configID, Strict: d.o.strict})
	var msgs []string
	for _, e := range diags {
		switch {
		case e.Severity == config.Error:
			log.Error("configuration", "at", e.Pos.String(), "keyword", e.Keyword, "err", e.Message)
			msgs = append(msgs, e.String())
		case e.Lenient:
			// What keepalived runs past, directord too: said at each load.
			log.Warn("configuration", "at", e.Pos.String(), "keyword", e.Keyword, "warning", e.Message)
		}
	}
	if len(msgs) > 0 || unreadable(diags, d.o.file) {
		if len(msgs) == 0 {
			msgs = []string{d.o.file + ": cannot be read"}
		}
		return &errBadConfig{msgs}
	}
	if err := namespacesKept(d.o, d.cfg, cfg); err != nil {
		return err
	}
	// Scripts are checked again, as keepalived does at a reload: a
	// permission fixed or broken since counts from now.
	script.CheckConfig(cfg, d.scriptSections(cfg), log)
	// What can fail is tried before anything changes.
	if _, err := director.NewPools(cfg); err != nil {
		return err
	}
	if err := d.checkInterfaces(cfg); err != nil {
		return err
	}
	wantLVS := d.runLVS(cfg)
	var checks *checkSet
	if d.lvs != nil {
		var err error
		if checks, err = d.newChecks(cfg, d.lvs); err != nil {
			return err
		}
	} else if wantLVS {
		// The checks a new data plane would run must be possible before
		// VRRP changes (a script refused by enable_script_security).
		if _, err := healthcheck.New(cfg, func(healthcheck.Event) {}, nil); err != nil {
			return fmt.Errorf("health checks: %w", err)
		}
	}
	vrrp.InitTrackFiles(cfg, true, log) // a reload writes only missing files
	var newNode bool
	var node *vrrp.Node
	var nodeNL *netlink.Handle
	if d.runVRRP() {
		newNode = (d.node == nil) != (len(cfg.Instances) == 0) || (d.node != nil && d.nodeKeyOf(cfg) != d.nodeKey)
	}
	if newNode && len(cfg.Instances) > 0 {
		// Its interfaces must exist before the running VRRP stops.
		var err error
		if node, nodeNL, err = d.newNode(cfg); err != nil {
			return err
		}
		defer func() {
			if node != nil { // not run: a later step failed
				node.Close()
				nodeNL.Close()
			}
		}()
	}

	// BGP before the data plane: an address no longer announced is
	// withdrawn (and off lo after bgp_withdraw_wait) before its service
	// goes.
	if err := d.reloadBGP(cfg); err != nil {
		log.Error("reload: bgp", "err", err)
	}

	// The data plane: checks stopped, their verdicts adopted by the new
	// ones, the LVS given the new pools; the new checks then run.
	//
	// A data plane left with no virtual server keeps running, idle: the
	// reconciler removes what the old file made.
	switch {
	case d.lvs != nil:
		d.stopChecks()
		adopted := checks.r.Adopt(d.checks)
		var seeds []director.Seed
		for _, e := range checks.r.Initial() {
			seeds = append(seeds, director.Seed{Pool: e.Pool, Real: e.Real, State: director.NewRealState(e.Alive, e.Weight)})
		}
		gen, err := d.lvs.Reload(context.Background(), cfg, seeds)
		if gen == 0 {
			// The data plane ended under us: nothing to give the checks.
			checks.cancel()
			return fmt.Errorf("ipvs: %w", err)
		}
		if err != nil {
			log.Error("reload: ipvs", "err", err)
		}
		d.gen = gen
		d.runChecks(checks)
		log.Info("reload: virtual servers", "virtual_servers", len(cfg.VirtualServers), "checks", len(checks.r.Checks()), "checks_kept", adopted)
	case wantLVS:
		if err := d.startLVS(cfg); err != nil {
			return err
		}
	}

	if newNode {
		switch {
		case node != nil && d.node != nil:
			// A changed VRRP section: the instances that are the same
			// virtual routers go on in the new node in the state they had,
			// without a transition, their addresses never leaving (as
			// keepalived's reload); the old node then stops what the file
			// no longer has.
			plan := vrrp.PlanReload(d.cfg, cfg)
			for _, p := range plan {
				log.Info("reload: vrrp instance", "instance", cmp.Or(p.New, p.Old), "change", p.Change.String(), "was", p.Old, "what", p.What)
			}
			node.Adopt(d.node, plan)
			oldStop, oldDone := d.nodeStop, d.nodeDone
			d.runNode(cfg, node, nodeNL)
			if d.lvs != nil {
				// The resumed instances make no transition: the sync
				// daemons learn their state (and a renamed one's) here.
				if st, err := node.Status(context.Background()); err == nil {
					for _, s := range st {
						d.lvs.Observe(vrrp.Event{Instance: s.Name, To: s.State})
					}
				}
			}
			node = nil
			oldStop()
			if err := <-oldDone; err != nil {
				log.Error("reload: stopping the removed VRRP instances", "err", err)
			}
		case node != nil:
			d.runNode(cfg, node, nodeNL)
			node = nil
		default:
			if err := d.stopNode(); err != nil {
				log.Error("reload: stopping VRRP", "err", err)
			}
		}
	} else if d.node != nil {
		log.Info("reload: VRRP unchanged; its instances keep their state")
	}
	if err := d.applyStatics(cfg); err != nil {
		log.Error("reload: static entries", "err", err)
	}
	d.openFIFOs(cfg) // those of the new file, if they changed
	d.cfg = cfg
	log.Info("reload done", "config", d.o.file)
	return nil
}

func newLogger(o *options, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: slog.LevelInfo}
	if o.logDetail {
		opts.Level = slog.LevelDebug
	}
	if o.logFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// ipvsAdvice is what this namespace's IPVS settings (read with read, a
// path under /proc/sys) do that an operator of a director would not want,
// one warning each: docs/install.md.
func ipvsAdvice(read func(string) ([]byte, error)) []string {
	var out []string
	if b, err := read("/proc/sys/net/ipv4/vs/expire_nodest_conn"); err == nil && strings.TrimSpace(string(b)) == "0" {
		out = append(out, "net.ipv4.vs.expire_nodest_conn is 0: a new connection that reuses the client port of an "+
			"unfinished connection to a real server taken out of the pool is dropped (or, at weight 0, sent to that server) "+
			"until the old entry times out; set it to 1 (docs/install.md)")
	}
	return out
}
