package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/vishvananda/netlink"

	"github.com/directord/directord/config"
	"github.com/directord/directord/vrrp"
)

// daemon runs the configuration until SIGTERM or SIGINT. This build runs
// VRRP; virtual servers and health checks come with the IPVS and
// health-check work, and are reported as not run.
func daemon(o *options, cfg *config.Config, stderr io.Writer) int {
	log := newLogger(o, stderr)
	if o.checkOnly {
		log.Error("-C (health checks and IPVS only) is not available yet in this build")
		return exitFailure
	}
	if len(cfg.VirtualServers) > 0 {
		log.Warn("virtual_server blocks are read but not yet run by this build: IPVS and health checks are not programmed",
			"virtual_servers", len(cfg.VirtualServers))
	}
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
	if p := cfg.Global.RTPriority; p > 0 {
		if err := setRealtime(p); err != nil {
			log.Warn("could not set real-time scheduling", "vrrp_rt_priority", p, "err", err)
		}
	}
	h, err := netlink.NewHandle()
	if err != nil {
		log.Error("netlink", "err", err)
		return exitFailure
	}
	defer h.Close()
	node, err := vrrp.NewNode(cfg, h, log)
	if err != nil {
		log.Error("vrrp", "err", err)
		return exitFailure
	}
	// Signals stay caught until the end: a second SIGTERM during the
	// shutdown does not cut short the priority 0 adverts and the removal of
	// the addresses.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	log.Info("directord started", "version", version, "config", o.file, "instances", len(cfg.Instances))
	if err := node.Run(ctx); err != nil {
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
