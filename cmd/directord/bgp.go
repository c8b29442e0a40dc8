package main

// The BGP speaker of global_defs' bgp block: the daemon's parts feed the
// announcer's inputs (the data plane its programmed services and quorum,
// VRRP its mastership, directorctl the drain flag) and the announcer does
// the rest (bgp/).

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/directord/directord/bgp"
	"github.com/directord/directord/config"
	"github.com/directord/directord/director"
	"github.com/directord/directord/internal/control"
	"github.com/directord/directord/vrrp"
)

// bgpRun is a running speaker and its announcer, with the inputs as the
// daemon's parts last said them.
type bgpRun struct {
	log    *slog.Logger
	sp     *bgp.Process
	ann    *bgp.Announcer
	nl     *netlink.Handle
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	cfg      *config.Config
	running  *config.BGP // the bgp block the speaker runs
	key      string      // config.Canonical of running
	routerID netip.Addr
	serving  map[string]director.Serving // by virtual server identity
	vrrp     map[string]vrrp.State
	drained  bool
}

// startBGP starts the speaker of cfg's bgp block; drained carries
// drain-director over a reload that restarts it.
func startBGP(cfg *config.Config, drained bool, log *slog.Logger) (*bgpRun, error) {
	b := &bgpRun{log: log, serving: map[string]director.Serving{}, vrrp: map[string]vrrp.State{}, drained: drained, cfg: cfg,
		running: cfg.Global.BGP, key: config.Canonical(cfg.Global.BGP)}
	rid, err := bgp.RouterID(cfg.Global.BGP)
	if err != nil {
		return nil, fmt.Errorf("bgp: %w", err)
	}
	b.routerID = rid
	if b.nl, err = netlink.NewHandle(); err != nil {
		return nil, fmt.Errorf("bgp: netlink: %w", err)
	}
	b.sp = bgp.NewProcess(log)
	b.sp.OnSession = sessionLogger(log)
	c := *cfg.Global.BGP
	c.RouterID = rid
	if err := b.sp.Start(context.Background(), &c); err != nil {
		b.nl.Close()
		return nil, err
	}
	b.ann = bgp.NewAnnouncer(b.sp, bgp.NetlinkAddresses{H: b.nl}, cfg.Global.BGP.WithdrawWait, log)
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel, b.done = cancel, make(chan struct{})
	go func() { defer close(b.done); b.ann.Run(ctx) }()
	b.push()
	return b, nil
}

// sessionLogger logs a session coming up and going down; the states in
// between only with -D.
func sessionLogger(log *slog.Logger) func(bgp.SessionEvent) {
	var mu sync.Mutex
	up := map[netip.Addr]bool{}
	return func(ev bgp.SessionEvent) {
		mu.Lock()
		was := up[ev.Neighbor]
		up[ev.Neighbor] = ev.State == bgp.Established
		mu.Unlock()
		switch {
		case ev.State == bgp.Established:
			log.Info("bgp session established", "neighbor", ev.Neighbor.String())
		case was:
			log.Warn("bgp session down", "neighbor", ev.Neighbor.String(), "state", ev.State.String(), "reason", ev.Reason)
		default:
			log.Debug("bgp session", "neighbor", ev.Neighbor.String(), "state", ev.State.String(), "reason", ev.Reason)
		}
	}
}

// inputs are the decider's inputs now; call with b.mu held.
func (b *bgpRun) inputs() bgp.Inputs {
	in := bgp.Inputs{Drained: b.drained, VRRPMaster: map[netip.Addr]bool{}}
	for _, inst := range b.cfg.Instances {
		for _, v := range inst.VIPs {
			a := v.Prefix.Addr()
			in.VRRPMaster[a] = in.VRRPMaster[a] || b.vrrp[inst.Name] == vrrp.Master
		}
	}
	for _, vs := range b.cfg.VirtualServers {
		if vs.Announce == nil {
			continue
		}
		s := b.serving[vs.Identity()]
		for _, p := range vs.AnnouncedPrefixes() {
			in.Services = append(in.Services, bgp.Service{Name: vs.Name(), Prefix: p,
				Dev: vs.Announce.Dev, Programmed: s.Programmed, Quorum: s.Quorum})
		}
	}
	return in
}

// push hands the announcer the inputs now and returns their generation.
func (b *bgpRun) push() uint64 {
	b.mu.Lock()
	in := b.inputs()
	b.mu.Unlock()
	return b.ann.Set(in)
}

// setServing takes the data plane's word (director.LVS.OnServing).
func (b *bgpRun) setServing(st []director.Serving) {
	b.mu.Lock()
	b.serving = map[string]director.Serving{}
	for _, s := range st {
		b.serving[s.VS.Identity()] = s
	}
	b.mu.Unlock()
	b.push()
}

// observe takes a VRRP transition; it never blocks.
func (b *bgpRun) observe(ev vrrp.Event) {
	b.mu.Lock()
	b.vrrp[ev.Instance] = ev.To
	b.mu.Unlock()
	b.push()
}

// drain sets drain-director and waits until the routes are withdrawn (or
// announced again).
func (b *bgpRun) drain(ctx context.Context, on bool) error {
	b.mu.Lock()
	b.drained = on
	b.mu.Unlock()
	b.log.Info("bgp: drain-director", "drained", on)
	return b.ann.Wait(ctx, b.push())
}

// reconfigure moves the speaker to cfg and waits until the addresses cfg
// no longer announces are withdrawn (and, after bgp_withdraw_wait, off
// lo): before the data plane removes their services. A change of
// local_as, router_id or listen_port restarts the speaker, every route
// withdrawn first (bgp.Reconfigure).
func (b *bgpRun) reconfigure(ctx context.Context, cfg *config.Config) error {
	var errs []error
	if key := config.Canonical(cfg.Global.BGP); key != b.key {
		b.mu.Lock()
		in := b.inputs()
		b.mu.Unlock()
		rid, err := bgp.Reconfigure(ctx, b.sp, b.ann, in, b.running, cfg.Global.BGP, b.routerID)
		if err != nil {
			errs = append(errs, err)
		}
		// Settings that did not start are tried again at the next reload.
		if !errors.Is(err, bgp.ErrOldSettings) {
			b.mu.Lock()
			b.routerID, b.running, b.key = rid, cfg.Global.BGP, key
			b.mu.Unlock()
		}
	}
	b.ann.SetWithdrawWait(cfg.Global.BGP.WithdrawWait)
	b.mu.Lock()
	b.cfg = cfg
	b.mu.Unlock()
	errs = append(errs, b.ann.Wait(ctx, b.push()))
	return errors.Join(errs...)
}

// stop withdraws every route, waits bgp_withdraw_wait, removes the
// addresses, then closes the sessions.
func (b *bgpRun) stop() error {
	b.cancel()
	<-b.done
	b.mu.Lock()
	in := b.inputs()
	b.mu.Unlock()
	b.log.Info("bgp: withdrawing every route before stopping")
	ctx, cancel := context.WithTimeout(context.Background(), b.cfg.Global.BGP.WithdrawWait+30*time.Second)
	defer cancel()
	err := b.ann.Stop(ctx, in)
	err = errors.Join(err, b.sp.Stop(ctx))
	b.nl.Close()
	return err
}

// status is the speaker's part of directorctl status.
func (b *bgpRun) status(ctx context.Context) *control.BGP {
	b.mu.Lock()
	st := &control.BGP{LocalAS: b.running.LocalAS, RouterID: b.routerID.String(), Drained: b.drained,
		Neighbors: []control.BGPNeighbor{}, Addresses: []control.BGPAddress{}}
	b.mu.Unlock()
	ns, err := b.sp.Neighbors(ctx)
	if err != nil {
		b.log.Warn("status: bgp", "err", err)
	}
	for _, n := range ns {
		st.Neighbors = append(st.Neighbors, control.BGPNeighbor{Address: n.Addr.String(), RemoteAS: n.RemoteAS, State: n.State.String(),
			Since: n.Since, BFD: n.BFD, PrefixesSent: n.Sent})
	}
	for _, a := range b.ann.Status() {
		st.Addresses = append(st.Addresses, control.BGPAddress{Prefix: a.Prefix.String(), Announced: a.Announced, Reason: a.Reason,
			Detail: a.Detail, Dev: a.Dev, Since: a.Since})
	}
	return st
}

// vrrpObserver is what the VRRP node calls with each transition: the
// data plane's sync daemons and the speaker both follow it.
func (d *daemon) vrrpObserver(lvs *director.LVS) func(vrrp.Event) {
	return func(ev vrrp.Event) {
		if lvs != nil {
			lvs.Observe(ev)
		}
		if b := d.bgp.Load(); b != nil {
			b.observe(ev)
		}
	}
}

// bgpServing is the data plane's OnServing.
func (d *daemon) bgpServing(st []director.Serving) {
	if b := d.bgp.Load(); b != nil {
		b.setServing(st)
	}
}

// seedBGP gives the speaker the VRRP instances' present state (a speaker
// started, or instances resumed by a reload, see no transition).
func (d *daemon) seedBGP() {
	b := d.bgp.Load()
	if b == nil || d.node == nil {
		return
	}
	st, err := d.node.Status(context.Background())
	if err != nil {
		return
	}
	for _, s := range st {
		b.observe(vrrp.Event{Instance: s.Name, To: s.State})
	}
}

// reloadBGP starts, stops or reconfigures the speaker for cfg; called
// before the data plane's reload, so that what is withdrawn goes before
// its service. Called with d.mu held.
func (d *daemon) reloadBGP(cfg *config.Config) error {
	b := d.bgp.Load()
	switch {
	case b == nil && cfg.Global.BGP == nil:
		return nil
	case b == nil:
		nb, err := startBGP(cfg, d.bgpDrained.Load(), d.log)
		if err != nil {
			return err
		}
		d.bgp.Store(nb) // the data plane's reload that follows says what it serves
		d.seedBGP()
		return nil
	case cfg.Global.BGP == nil:
		d.bgp.Store(nil)
		return b.stop()
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Global.BGP.WithdrawWait+30*time.Second)
	defer cancel()
	return b.reconfigure(ctx, cfg)
}

// DrainDirector is directorctl drain-director and undrain-director.
func (d *daemon) DrainDirector(ctx context.Context, on bool) error {
	b := d.bgp.Load()
	if b == nil {
		return errors.New("this directord runs no BGP speaker (no bgp block in global_defs)")
	}
	d.bgpDrained.Store(on)
	return b.drain(ctx, on)
}
