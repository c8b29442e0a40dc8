package main

import (
	"fmt"

	"github.com/vishvananda/netlink"

	"github.com/directord/directord/config"
	"github.com/directord/directord/vrrp"
)

// applyStatics holds cfg's static_ipaddress, static_routes and
// static_rules, from the first configuration that has any to the stop,
// as keepalived's VRRP process holds them (it runs for them alone too).
// With -C (no VRRP) there are none, as keepalived's checker has none.
func (d *daemon) applyStatics(cfg *config.Config) error {
	if !d.runVRRP() {
		return nil
	}
	if err := d.checkInterfaces(cfg); err != nil {
		return err
	}
	if d.statics == nil {
		if len(cfg.StaticAddresses)+len(cfg.StaticRoutes)+len(cfg.StaticRules) == 0 {
			return nil
		}
		h, err := netlink.NewHandle()
		if err != nil {
			return fmt.Errorf("static entries: netlink: %w", err)
		}
		s, err := vrrp.NewStatics(h, d.log)
		if err != nil {
			h.Close()
			return err
		}
		d.statics, d.staticsNL = s, h
	}
	d.statics.Apply(cfg)
	return nil
}

// checkInterfaces refuses a configuration whose static entries or
// virtual rules name an interface this host lacks, as keepalived refuses
// it; with -C there is nothing to check.
func (d *daemon) checkInterfaces(cfg *config.Config) error {
	if !d.runVRRP() {
		return nil
	}
	h, err := netlink.NewHandle()
	if err != nil {
		return fmt.Errorf("netlink: %w", err)
	}
	defer h.Close()
	return vrrp.CheckInterfaces(h, cfg)
}

// closeStatics removes the static entries directord added.
func (d *daemon) closeStatics() error {
	if d.statics == nil {
		return nil
	}
	err := d.statics.Close()
	d.staticsNL.Close()
	d.statics, d.staticsNL = nil, nil
	return err
}
