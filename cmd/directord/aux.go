package main

import (
	"context"
	"fmt"
	"sync"

	"github.com/directord/directord/healthcheck"

	"github.com/directord/directord/internal/control"
	"github.com/directord/directord/internal/metrics"
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
			}()
		}
	}
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
		d.metrics.ObserveCheck(c.Cfg.Type, r.Outcome.String(), r.Latency)
	}
}

func notifyReady()     {}
func notifyReloading() {}
func notifyStopping()  {}
