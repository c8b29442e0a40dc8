package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/directord/directord/internal/control"
	"github.com/directord/directord/vrrp"
)

// errNoVRRP is the hand-over's error when this directord runs no VRRP.
var errNoVRRP = errors.New("this directord runs no VRRP instance (-C, or none configured)")

// Handover makes an instance (every instance for "") give up mastership
// (vrrp.Machine.Yield) and waits until a peer's adverts show it has
// taken over: the instance is backup and knows a master that is not
// itself. The hand-over holds across reloads until Resume.
func (d *daemon) Handover(ctx context.Context, name string) (control.HandoverResult, error) {
	v := d.view.Load()
	if v == nil || v.closing {
		return control.HandoverResult{}, errStopping
	}
	if v.node == nil {
		return control.HandoverResult{}, errNoVRRP
	}
	start := time.Now()
	if err := v.node.Yield(name, true); err != nil {
		return control.HandoverResult{}, err
	}
	d.yieldMu.Lock()
	if name == "" {
		d.yieldAll = true
	} else {
		d.yielded[name] = true
	}
	d.yieldMu.Unlock()
	d.log.Info("hand-over: giving up mastership", "instance", name)

	// Long enough for a peer that heard nothing to notice (3 adverts and
	// more) and for a slow one; the longest advert interval decides.
	limit := 5 * time.Second
	for _, in := range v.cfg.Instances {
		limit = max(limit, 4*in.AdvertInt+time.Second)
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var res control.HandoverResult
	done := map[string]bool{}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		st, err := v.node.Status(ctx)
		if err != nil && ctx.Err() == nil {
			return res, err
		}
		pending := false
		for _, s := range st {
			if (name != "" && s.Name != name) || done[s.Name] {
				continue
			}
			if s.State == vrrp.Backup && s.MasterAddr.IsValid() && s.MasterAddr != s.Primary {
				done[s.Name] = true
				res.Instances = append(res.Instances, control.HandoverInstance{Name: s.Name, OK: true,
					Took: time.Since(start), Master: s.MasterAddr.String()})
				d.log.Info("hand-over: a peer is master", "instance", s.Name, "master", s.MasterAddr.String(), "took", time.Since(start).String())
				continue
			}
			if ctx.Err() != nil {
				done[s.Name] = true
				why := fmt.Sprintf("no peer took over within %v; this director is %s at priority %d (directorctl resume to compete again)",
					limit, s.State, s.Priority)
				res.Instances = append(res.Instances, control.HandoverInstance{Name: s.Name, Error: why})
				d.log.Warn("hand-over: no peer took over", "instance", s.Name, "state", s.State.String())
				continue
			}
			pending = true
		}
		if !pending {
			return res, nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
		}
	}
}

// Resume lets an instance (every instance for "") compete again.
func (d *daemon) Resume(name string) error {
	v := d.view.Load()
	if v == nil || v.closing {
		return errStopping
	}
	if v.node == nil {
		return errNoVRRP
	}
	if err := v.node.Yield(name, false); err != nil {
		return err
	}
	d.yieldMu.Lock()
	if name == "" {
		d.yieldAll = false
		clear(d.yielded)
	} else {
		delete(d.yielded, name)
	}
	d.yieldMu.Unlock()
	d.log.Info("hand-over ended: competing again", "instance", name)
	return nil
}

// reYield applies the hand-overs in force to a new node (a reload that
// restarted VRRP), before it runs.
func (d *daemon) reYield(node *vrrp.Node) {
	d.yieldMu.Lock()
	defer d.yieldMu.Unlock()
	if d.yieldAll {
		node.Yield("", true)
	}
	for name := range d.yielded {
		if err := node.Yield(name, true); err != nil {
			d.log.Warn("hand-over: the instance is gone from the configuration", "instance", name)
			delete(d.yielded, name)
		}
	}
}
