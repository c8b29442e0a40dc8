package director

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"time"

	"github.com/directord/directord/config"
	"github.com/directord/directord/ipvs"
)

// Seed is a real server's health state for a new configuration: the
// verdicts of its checks carried over a reload.
type Seed struct {
	Pool, Real int
	State      RealState
}

// ErrStopped is what the control calls return once Run has.
var ErrStopped = errors.New("the IPVS data plane is stopped")

// Ping answers once Run's loop takes a call: the watchdog's proof that
// it turns.
func (l *LVS) Ping(ctx context.Context) error { return l.do(ctx, func() {}) }

// do runs f in Run's goroutine and waits for it.
func (l *LVS) do(ctx context.Context, f func()) error {
	done := make(chan struct{})
	select {
	case l.ctl <- func() { defer close(done); f() }:
	case <-l.stopped:
		return ErrStopped
	case <-ctx.Done():
		return ctx.Err()
	}
	<-done
	return nil
}

// Reload takes a new configuration and the health states of its real
// servers, and returns the generation its checks report with. Only the
// difference reaches the kernel: the reconciler leaves alone what is
// already right, so an unchanged virtual server or real server is not
// touched; virtual servers gone from the configuration are removed. A
// virtual server that is still there (by keepalived's vs_iseq: the same
// group, fwmark or address) keeps its quorum state, which the new quorum
// and hysteresis then move as keepalived's reload does; so a reload that
// moves no quorum runs no quorum script.
func (l *LVS) Reload(ctx context.Context, cfg *config.Config, seeds []Seed) (int, error) {
	pools, err := NewPools(cfg)
	if err != nil {
		return 0, err
	}
	var gen int
	var rerr error
	err = l.do(ctx, func() {
		old := map[string]*Pool{}
		for _, p := range l.pools {
			old[poolID(p.VS)] = p
		}
		states := initialStates(pools)
		for _, p := range pools {
			if o := old[poolID(p.VS)]; o != nil && !o.init {
				// keepalived's clear_diff_services copies
				// quorum_state_up; clear_diff_s_srv keeps the sorry
				// server's state when it is the same one.
				p.quorumUp = o.quorumUp
				os, ns := o.VS.SorryServer, p.VS.SorryServer
				p.sorryIn = !o.quorumUp && os != nil && ns != nil && os.Addr == ns.Addr
			}
		}
		for _, s := range seeds {
			if s.Pool < len(states) && s.Real < len(states[s.Pool]) {
				states[s.Pool][s.Real] = s.State
			}
		}
		g, og := cfg.Global, l.cfg.Global
		if !reflect.DeepEqual(g.SyncDaemon, og.SyncDaemon) {
			// Its instance may be another, in another state: the daemons
			// follow that one's state at once.
			l.syncd.cfg = g.SyncDaemon
			if l.syncdOK = l.syncState(); !l.syncdOK {
				rerr = errors.New("ipvs sync daemon: not as configured; trying again at the next resync")
			}
		}
		if !reflect.DeepEqual(g.LVSTimeouts, og.LVSTimeouts) {
			// Set as the new file asks, or, gone from it, the kernel's
			// own back, as keepalived's reload.
			if err := l.tmo.apply(l.k, g.LVSTimeouts); err != nil {
				rerr = errors.Join(rerr, err)
			}
		}
		// What still waits for the kernel is of the old file's pools,
		// whose indices the new one's do not share: given now, before
		// the new file's own, so that what is told keeps its order.
		l.giveWaiting()
		l.cfg, l.pools, l.states = cfg, pools, states
		l.advanceAll()
		l.gen++
		gen = l.gen
		l.wantOK = false
		l.reprogram = true
		l.reloaded = true
	})
	if err != nil {
		return 0, err
	}
	return gen, rerr
}

// poolID names a virtual server across a reload as keepalived's vs_iseq:
// by its group's name, else its fwmark and family, else its protocol and
// address.
func poolID(vs *config.VirtualServer) string {
	switch {
	case vs.Group != "":
		return fmt.Sprint("group ", vs.Group, " ", vs.Addr.Port())
	case vs.FWMark != 0:
		return fmt.Sprint("fwmark ", vs.Family, " ", vs.FWMark)
	}
	return fmt.Sprint(vs.Protocol, " ", vs.Addr)
}

// ErrUnknownReal is Drain's error for a real server in no virtual server.
var ErrUnknownReal = errors.New("no virtual server has this real server")

// Drain sets real server addr (in every virtual server that has it) to
// weight 0, or gives it its weight back. It stays in the kernel's table,
// so its established connections go on; new ones go to the others. The
// drain outlives reloads until undone.
func (l *LVS) Drain(ctx context.Context, addr netip.AddrPort, on bool) error {
	var found bool
	err := l.do(ctx, func() {
		for _, p := range l.pools {
			for _, rs := range p.VS.RealServers {
				found = found || rs.Addr == addr
			}
		}
		switch {
		case on && found && !l.drained[addr]:
			l.drained[addr] = true
		case !on && l.drained[addr]:
			delete(l.drained, addr)
			found = true // undrain what is not in the configuration anymore
		default:
			return
		}
		l.log.Info("real server drain", "real_server", addr.String(), "drained", on)
		l.advanceAll()
		l.wantOK = false
		l.reprogram = true
	})
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("%s: %w", addr, ErrUnknownReal)
	}
	return nil
}

// syncServices programs the services keys of one pool as want has them,
// and counts what it did.
func (l *LVS) syncServices(want ipvs.Table, keys []ipvs.ServiceKey) error {
	res, err := l.rec.SyncServices(want, keys)
	l.count(len(res.Ops), err)
	return err
}

func (l *LVS) count(ops int, err error) {
	l.ops.Add(uint64(ops))
	if err != nil {
		l.opErrors.Add(1)
		return
	}
	l.lastSync.Store(time.Now().UnixNano())
}

// PoolStatus is a pool's state, for status and metrics.
type PoolStatus struct {
	VS       *config.VirtualServer
	QuorumUp bool
	Reals    []RealStatus
	// Digest fingerprints the pool's services as the kernel holds them
	// (ipvs.Reconciler.Digest): the same on every director that holds
	// the same table; "" while that is not known.
	Digest string
}

// RealStatus is a real server's state in its pool.
type RealStatus struct {
	Addr    netip.AddrPort
	Alive   bool
	Drained bool
	Weight  int // the checks' weight
	// Effective is the weight the kernel gets, or -1 when the real server
	// is left out of the table.
	Effective int
}

// Status is every pool's state and the drained real servers.
func (l *LVS) Status(ctx context.Context) ([]PoolStatus, []netip.AddrPort, error) {
	var out []PoolStatus
	var drained []netip.AddrPort
	err := l.do(ctx, func() {
		for i, p := range l.pools {
			ps := PoolStatus{VS: p.VS, QuorumUp: p.quorumUp, Digest: l.rec.Digest(p.Keys)}
			w := Weigh(p.VS, l.states[i], l.drained, p.quorumUp)
			for j, rs := range p.VS.RealServers {
				r := RealStatus{Addr: rs.Addr, Alive: l.states[i][j].Alive, Drained: l.drained[rs.Addr],
					Weight: int(l.states[i][j].Weight), Effective: -1}
				if w.Reals[j].In {
					r.Effective = w.Reals[j].Weight
				}
				ps.Reals = append(ps.Reals, r)
			}
			out = append(out, ps)
		}
		for a := range l.drained {
			drained = append(drained, a)
		}
	})
	slices.SortFunc(drained, func(a, b netip.AddrPort) int { return a.Compare(b) })
	return out, drained, err
}

// Counters are the kernel operations sent, the failed syncs and the time
// of the last good one.
func (l *LVS) Counters() (ops, errs uint64, last time.Time) {
	if n := l.lastSync.Load(); n != 0 {
		last = time.Unix(0, n)
	}
	return l.ops.Load(), l.opErrors.Load(), last
}

// Close lets go of an LVS that will not run (its notify goroutine); after
// Run it does nothing.
func (l *LVS) Close() {
	l.notesMu.Lock()
	defer l.notesMu.Unlock()
	if !l.notesShut {
		l.notesShut = true
		if l.ownQueue {
			l.scripts.Close()
		}
	}
}
