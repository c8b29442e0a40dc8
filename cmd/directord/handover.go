package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/directord/directord/internal/control"
	"github.com/directord/directord/vrrp"
)

// errNoVRRP is the hand-over's error when this directord runs no VRRP.
var errNoVRRP = errors.New("this directord runs no VRRP instance (-C, or none configured)")

// handoverLimit bounds the wait for a peer; the client waits a minute.
const handoverLimit = 50 * time.Second

// Handover makes an instance (with its sync group; every instance for "")
// give up mastership (vrrp.Machine.Yield) and waits until a peer's adverts
// show it has taken over: the instance is backup and knows a master that
// is not itself. The hand-over holds across reloads until Resume.
func (d *daemon) Handover(ctx context.Context, name string) (control.HandoverResult, error) {
	start := time.Now()
	// Under the reload lock: a reload that restarts VRRP comes before or
	// after, never between the yield and its record.
	d.mu.Lock()
	node, cfg := d.node, d.cfg
	if d.closing {
		d.mu.Unlock()
		return control.HandoverResult{}, errStopping
	}
	if node == nil {
		d.mu.Unlock()
		return control.HandoverResult{}, errNoVRRP
	}
	names, err := node.Yield(name, true)
	if err == nil {
		d.yieldMu.Lock()
		d.yieldAll = d.yieldAll || name == ""
		for _, n := range names {
			d.yielded[n] = true
		}
		d.yieldMu.Unlock()
	}
	d.mu.Unlock()
	if err != nil {
		return control.HandoverResult{}, err
	}
	d.log.Info("hand-over: giving up mastership", "instances", names)

	// Long enough for a peer that heard nothing to notice (3 adverts and
	// more), and for a slow one; the longest advert interval decides.
	limit := 5 * time.Second
	for _, in := range cfg.Instances {
		limit = max(limit, 4*in.AdvertInt+time.Second)
	}
	deadline := start.Add(min(limit, handoverLimit))
	var res control.HandoverResult
	var last []vrrp.InstanceStatus
	pending := slices.Clone(names)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for len(pending) > 0 {
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		st, err := node.Status(sctx)
		cancel()
		if err == nil {
			last = st
		}
		timedOut := time.Now().After(deadline) || ctx.Err() != nil
		for _, s := range last {
			if !slices.Contains(pending, s.Name) {
				continue
			}
			switch {
			case s.State == vrrp.Backup && s.MasterAddr.IsValid() && s.MasterAddr != s.Primary:
				res.Instances = append(res.Instances, control.HandoverInstance{Name: s.Name, OK: true,
					Took: time.Since(start), Master: s.MasterAddr.String()})
				d.log.Info("hand-over: a peer is master", "instance", s.Name, "master", s.MasterAddr.String(), "took", time.Since(start).String())
			case timedOut:
				why := fmt.Sprintf("no peer took over within %v; this director is %s at priority %d (directorctl resume to compete again)",
					time.Since(start).Round(time.Millisecond), s.State, s.Priority)
				res.Instances = append(res.Instances, control.HandoverInstance{Name: s.Name, Error: why})
				d.log.Warn("hand-over: no peer took over", "instance", s.Name, "state", s.State.String())
			default:
				continue
			}
			pending = slices.DeleteFunc(pending, func(n string) bool { return n == s.Name })
		}
		if timedOut {
			// Those the status never showed (VRRP restarting, say).
			for _, n := range pending {
				res.Instances = append(res.Instances, control.HandoverInstance{Name: n,
					Error: "its state could not be read; see directorctl status"})
			}
			break
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
		}
	}
	return res, nil
}

// Resume lets an instance (with its sync group; every instance for "")
// compete again.
func (d *daemon) Resume(name string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closing {
		return errStopping
	}
	if d.node == nil {
		return errNoVRRP
	}
	names, err := d.node.Yield(name, false)
	if err != nil {
		return err
	}
	d.yieldMu.Lock()
	if name == "" {
		d.yieldAll = false
		clear(d.yielded)
	}
	for _, n := range names {
		delete(d.yielded, n)
	}
	d.yieldMu.Unlock()
	d.log.Info("hand-over ended: competing again", "instances", names)
	return nil
}

// reYield applies the hand-overs in force to a new node (a reload that
// restarted VRRP) before it runs, so that its instances start handed over.
func (d *daemon) reYield(node *vrrp.Node) {
	d.yieldMu.Lock()
	defer d.yieldMu.Unlock()
	if d.yieldAll {
		if _, err := node.YieldFromStart(""); err != nil {
			d.log.Warn("hand-over: not kept over the reload", "err", err)
		}
	}
	for name := range d.yielded {
		if _, err := node.YieldFromStart(name); err != nil {
			d.log.Warn("hand-over: not kept over the reload", "instance", name, "err", err)
			delete(d.yielded, name)
		}
	}
}
