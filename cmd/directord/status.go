package main

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"time"

	"github.com/directord/directord/config"
	"github.com/directord/directord/internal/control"
)

// statusTimeout bounds how long a status waits for a busy part (the data
// plane in the middle of a large sync).
const statusTimeout = 5 * time.Second

// Status is a snapshot for directorctl and the metrics.
//
// It reads the published view, never d.mu: a reload in progress does not
// hold it up, and it shows the parts as they were before the reload.
func (d *daemon) Status() control.Status {
	ctx, cancel := context.WithTimeout(context.Background(), statusTimeout)
	defer cancel()
	v := d.view.Load()
	if v == nil {
		v = &view{cfg: d.cfg}
	}
	cfg := v.cfg
	d.statsMu.Lock()
	st := control.Status{
		Version: version, PID: os.Getpid(), Started: d.started, ConfigFile: d.o.file,
		LastGoodReload: d.reloads.lastGood, ReloadsOK: d.reloads.ok, ReloadsFailed: d.reloads.failed,
		Instances: []control.Instance{}, VirtualServers: []control.VirtualServer{}, Drained: []string{},
	}
	if r := d.reloads.last; r != nil {
		st.LastReload = &control.Reload{At: r.at, OK: r.err == nil}
		if r.err != nil {
			st.LastReload.Error = r.err.Error()
		}
	}
	d.statsMu.Unlock()
	if v.node != nil {
		is, err := v.node.Status(ctx)
		if err != nil {
			d.log.Warn("status: vrrp", "err", err)
		}
		byName := map[string]*config.Instance{}
		for _, in := range cfg.Instances {
			byName[in.Name] = in
		}
		for _, s := range is {
			ci := control.Instance{Name: s.Name, State: s.State.String(), Since: s.Since, EffectivePriority: s.Priority, HandedOver: s.Yielding,
				AdvertsSent: s.Sent, AdvertsReceived: s.Received, Transitions: s.Transitions, Drops: s.Drops, VIPs: []string{}}
			if s.MasterAddr.IsValid() {
				ci.MasterAddr = s.MasterAddr.String()
			}
			if in := byName[s.Name]; in != nil {
				ci.VRID, ci.Interface, ci.Version, ci.Priority = uint8(in.VRID), in.Interface, in.Version, uint8(in.Priority)
				for _, a := range in.VIPs {
					ci.VIPs = append(ci.VIPs, a.Prefix.String())
				}
			}
			st.Instances = append(st.Instances, ci)
		}
	}
	if v.lvs != nil {
		pools, drained, err := v.lvs.Status(ctx)
		if err != nil {
			d.log.Warn("status: ipvs", "err", err)
		}
		for _, a := range drained {
			st.Drained = append(st.Drained, a.String())
		}
		type where struct{ pool, real int }
		checks := map[where][]control.Check{}
		if v.checks != nil {
			for _, c := range v.checks.Checks() {
				p, r := c.Where()
				res, at := c.Last()
				cc := control.Check{Type: c.Cfg.Type.String(), Reason: res.Reason, Latency: res.Latency, At: at, Suspended: c.Suspended()}
				if !at.IsZero() {
					cc.Result = res.Outcome.String()
				}
				checks[where{p, r}] = append(checks[where{p, r}], cc)
			}
		}
		for pi, p := range pools {
			vs := control.VirtualServer{Name: vsName(p.VS), Position: p.VS.Pos.String(), Protocol: p.VS.Protocol.String(),
				Scheduler: p.VS.Scheduler, Forwarding: p.VS.Method.Kind.String(), QuorumUp: p.QuorumUp, Digest: p.Digest, Reals: []control.Real{}}
			for ri, r := range p.Reals {
				cs := checks[where{pi, ri}]
				if cs == nil {
					cs = []control.Check{}
				}
				cr := control.Real{Addr: r.Addr.String(), Alive: r.Alive, Drained: r.Drained,
					Weight: r.Weight, EffectiveWeight: r.Effective, Checks: cs}
				if ri < len(p.VS.RealServers) {
					for _, u := range p.VS.RealServers[ri].Unchecked() {
						cr.Unchecked = append(cr.Unchecked, u.String())
					}
				}
				vs.Reals = append(vs.Reals, cr)
			}
			st.VirtualServers = append(st.VirtualServers, vs)
		}
		ops, errs, last := v.lvs.Counters()
		st.IPVS = control.IPVS{Operations: ops, Errors: errs, LastSync: last}
	}
	if b := d.bgp.Load(); b != nil {
		st.BGP = b.status(ctx)
	}
	return st
}

// vsName is a virtual server as the file names it.
func vsName(vs *config.VirtualServer) string {
	switch {
	case vs.Group != "":
		return "group " + vs.Group
	case vs.FWMark != 0:
		return fmt.Sprintf("fwmark %d", vs.FWMark)
	}
	return vs.Addr.Addr().String() + " " + fmt.Sprint(vs.Addr.Port())
}

// errNoLVS is Drain's error when this directord runs no virtual server.
var errNoLVS = errors.New("this directord runs no virtual server (-P, or none configured)")

// Drain sets a real server to weight 0, or back.
func (d *daemon) Drain(real string, on bool) error {
	addr, err := netip.ParseAddrPort(real)
	if err != nil {
		return fmt.Errorf("%q: want ADDR:PORT ([ADDR]:PORT for IPv6)", real)
	}
	v := d.view.Load()
	switch {
	case v == nil || v.closing:
		return errStopping
	case v.lvs == nil:
		return errNoLVS
	}
	lvs := v.lvs
	return lvs.Drain(context.Background(), netip.AddrPortFrom(addr.Addr().Unmap(), addr.Port()), on)
}

// Reload reads the file again, as SIGHUP does.
func (d *daemon) Reload() control.Reload {
	notifyReloading()
	defer notifyReady()
	err := d.reload()
	r := control.Reload{At: time.Now(), OK: err == nil}
	if err != nil {
		r.Error = err.Error()
	}
	return r
}
