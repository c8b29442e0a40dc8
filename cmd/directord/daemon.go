package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"

	"github.com/vishvananda/netlink"

	"github.com/directord/directord/config"
	"github.com/directord/directord/director"
	"github.com/directord/directord/healthcheck"
	"github.com/directord/directord/ipvs"
	"github.com/directord/directord/vrrp"
)

// daemon runs the configuration until SIGTERM or SIGINT: VRRP (unless
// -C), and the health checks with the IPVS data plane (unless -P).
func daemon(o *options, cfg *config.Config, stderr io.Writer) int {
	log := newLogger(o, stderr)
	runVRRP := !o.checkOnly || o.vrrpOnly
	runLVS := (!o.vrrpOnly || o.checkOnly) && (len(cfg.VirtualServers) > 0 || cfg.Global.SyncDaemon != nil)
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
	if p := cfg.Global.RTPriority; p > 0 && runVRRP {
		if err := setRealtime(p); err != nil {
			log.Warn("could not set real-time scheduling", "vrrp_rt_priority", p, "err", err)
		}
	}

	var lvs *director.LVS
	if runLVS {
		k, err := ipvs.Dial(nil)
		if err != nil {
			log.Error("ipvs: virtual servers and sync daemons cannot run", "err", err)
			return exitFailure
		}
		defer k.Close()
		lvs, err = director.NewLVS(cfg, k, log)
		if err != nil {
			log.Error("virtual servers", "err", err)
			return exitFailure
		}
	}
	var checks *healthcheck.Runner
	if lvs != nil {
		var err error
		checks, err = healthcheck.New(cfg, func(e healthcheck.Event) {
			lvs.Report(context.Background(), e.Pool, e.Real, director.RealState{Alive: e.Alive, Weight: e.Weight})
		}, log)
		if err != nil {
			log.Error("health checks", "err", err)
			return exitFailure
		}
		for _, e := range checks.Initial() {
			lvs.Seed(e.Pool, e.Real, director.RealState{Alive: e.Alive, Weight: e.Weight})
		}
	}
	var node *vrrp.Node
	if runVRRP && len(cfg.Instances) > 0 {
		h, err := netlink.NewHandle()
		if err != nil {
			log.Error("netlink", "err", err)
			return exitFailure
		}
		defer h.Close()
		node, err = vrrp.NewNode(cfg, h, log)
		if err != nil {
			log.Error("vrrp", "err", err)
			return exitFailure
		}
		if lvs != nil {
			node.Observe(lvs.Observe)
		}
	}

	// Signals stay caught until the end: a second SIGTERM during the
	// shutdown does not cut short the priority 0 adverts and the removal of
	// the addresses.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	log.Info("directord started", "version", version, "config", o.file,
		"instances", len(cfg.Instances), "virtual_servers", len(cfg.VirtualServers), "vrrp", node != nil, "ipvs", lvs != nil)
	var wg sync.WaitGroup
	var vrrpErr, lvsErr error
	if node != nil {
		wg.Add(1)
		go func() { defer wg.Done(); vrrpErr = node.Run(ctx) }()
	}
	if lvs != nil {
		wg.Add(1)
		go func() { defer wg.Done(); lvsErr = lvs.Run(ctx) }()
		// The checks stop with ctx too; their last verdicts may find the
		// data plane gone, which Report allows.
		wg.Add(1)
		go func() { defer wg.Done(); checks.Run(ctx) }()
	}
	wg.Wait()
	if err := errors.Join(vrrpErr, lvsErr); err != nil {
		log.Error("shutdown", "err", err)
		return exitFailure
	}
	log.Info("directord stopped")
	return exitOK
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
