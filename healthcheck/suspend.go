package healthcheck

import (
	"net/netip"

	"github.com/directord/directord/config"
)

// ha_suspend, as keepalived's (check_api.c update_checker_activity): the
// checkers of a virtual server with ha_suspend run only while one of its
// addresses is on this host, so that a backup director, without the
// virtual addresses, neither probes its real servers, nor runs their
// MISC_CHECK scripts, nor fires their notify_up and notify_down. While
// suspended a checker keeps its state (up or down, its failures in a
// row, its misc_dynamic weight), and its real server stays as it was; a
// suspended check is due again each delay_loop and probes at the first
// of those after its virtual server's address comes back.

// haMatcher tells whether an address is one of a virtual server's, for
// ha_suspend: its address, or any address of its group's ranges (as
// keepalived's addr_matches). A fwmark has no address: config clears
// ha_suspend there, as keepalived.
func haMatcher(cfg *config.Config, vs *config.VirtualServer) func(netip.Addr) bool {
	if !vs.HASuspend {
		return nil
	}
	if vs.Addr.IsValid() {
		own := vs.Addr.Addr().Unmap()
		return func(a netip.Addr) bool { return a.Unmap() == own }
	}
	var ranges [][2]netip.Addr
	for _, g := range cfg.VirtualServerGroups {
		if g.Name != vs.Group {
			continue
		}
		for _, e := range g.Entries {
			if !e.First.IsValid() {
				continue // a fwmark entry
			}
			last := e.Last
			if !last.IsValid() {
				last = e.First
			}
			ranges = append(ranges, [2]netip.Addr{e.First.Unmap(), last.Unmap()})
		}
	}
	if len(ranges) == 0 {
		return nil
	}
	return func(a netip.Addr) bool {
		a = a.Unmap()
		for _, r := range ranges {
			if a.BitLen() == r[0].BitLen() && a.Compare(r[0]) >= 0 && a.Compare(r[1]) <= 0 {
				return true
			}
		}
		return false
	}
}

// SetLocal takes the addresses this host has now (all of them, on any
// interface) and suspends the checks of each virtual server with
// ha_suspend that has none of its addresses among them, or resumes
// them. Until it is first called, no check is suspended. It may be
// called at any time, before or during Run.
func (r *Runner) SetLocal(addrs []netip.Addr) {
	for _, p := range r.pools {
		if p.ha == nil {
			continue
		}
		present := false
		for _, a := range addrs {
			if p.ha(a) {
				present = true
				break
			}
		}
		if was := p.suspended.Swap(!present); was != !present {
			if present {
				p.log.Info("activating the health checks of the virtual server: its address is on this host (ha_suspend)")
			} else {
				p.log.Info("suspending the health checks of the virtual server: its address is not on this host (ha_suspend)")
			}
		}
	}
}

// UsesHASuspend tells whether any virtual server has ha_suspend, and so
// whether SetLocal needs to be fed.
func (r *Runner) UsesHASuspend() bool {
	for _, p := range r.pools {
		if p.ha != nil {
			return true
		}
	}
	return false
}

// Suspended tells whether the check is suspended by ha_suspend.
func (c *Check) Suspended() bool { return c.srv.pool.suspended.Load() }
