package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/directord/directord/director"
	"github.com/directord/directord/healthcheck"
	"github.com/directord/directord/internal/control"
	"github.com/directord/directord/internal/metrics"
	"github.com/directord/directord/internal/systemd"
)

// serveAux starts what serves the operator: the control socket for
// directorctl, the metrics, the systemd watchdog. The control socket is
// not worth failing for (the log says why it is missing); the metrics
// address was asked for, so a bad one stops directord at start.
func (d *daemon) serveAux(ctx context.Context, wg *sync.WaitGroup) error {
	if path := d.o.control; path != "" && path != "none" {
		ln, err := control.Listen(path)
		if err != nil {
			d.log.Warn("no control socket: directorctl cannot reach this directord", "socket", path, "err", err)
		} else {
			srv := &control.Server{Backend: d, Log: d.log}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := srv.Serve(ctx, ln); err != nil {
					d.log.Warn("control socket", "err", err)
				}
				if !d.o.controlSet && path != control.DefaultSocket {
					// The namespace's own folder (NamespaceSocket), empty
					// once the listener is closed: removed, as keepalived
					// removes its namespace's pid folder.
					os.Remove(filepath.Dir(path))
				}
			}()
		}
	}
	d.watchdog(ctx, wg)
	if d.metrics != nil {
		if err := d.metrics.Serve(ctx, d.o.metrics, d.log); err != nil {
			return fmt.Errorf("metrics on %s: %w", d.o.metrics, err)
		}
	}
	return nil
}

// newMetrics makes the metrics when an address is set (they are off
// otherwise), before the checks, which report every result to them.
func (d *daemon) newMetrics() {
	if d.o.metrics == "" {
		return
	}
	d.metrics = metrics.New(d.Status)
	d.onResult = func(c *healthcheck.Check, r healthcheck.Result) {
		d.metrics.ObserveCheck(c.Cfg.Type.String(), r.Outcome.String(), r.Latency, r.Waited)
	}
}

// The systemd notifications (nothing without NOTIFY_SOCKET).
func notifyReady()     { systemd.Ready() }
func notifyReloading() { systemd.Reloading() }
func notifyStopping()  { systemd.Stopping() }

// watchdog pings systemd's watchdog while directord's loops turn.
func (d *daemon) watchdog(ctx context.Context, wg *sync.WaitGroup) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := systemd.Watchdog(ctx, d.healthy); err != nil {
			d.log.Warn("systemd watchdog", "err", err)
		}
	}()
}

// healthy tells whether the data plane's and VRRP's loops answer within
// a few seconds. A reload may take a while (it waits for the old checks'
// last probes) but not a minute: one stuck that long is not healthy.
func (d *daemon) healthy() bool {
	if t := d.reloading.Load(); t != 0 && time.Since(time.Unix(0, t)) > time.Minute {
		d.log.Warn("watchdog: a reload has not finished in a minute")
		return false
	}
	v := d.view.Load()
	if v == nil || v.closing {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if v.lvs != nil {
		if err := v.lvs.Ping(ctx); err != nil && !errors.Is(err, director.ErrStopped) {
			d.log.Warn("watchdog: the IPVS loop does not answer", "err", err)
			return false
		}
	}
	if v.node != nil {
		if _, err := v.node.Status(ctx); err != nil && ctx.Err() != nil {
			d.log.Warn("watchdog: VRRP does not answer", "err", err)
			return false
		}
	}
	return true
}
