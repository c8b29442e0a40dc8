package vrrp

import "github.com/directord/directord/config"

// trackView is what the tracking last saw of the things instances track,
// as an instance's priority and fault are computed from it (tracking in
// tracking_linux.go is the one that watches them).
type trackView interface {
	// script reports a vrrp_script's result; ok is false for one not
	// tracked (disabled, or unknown).
	script(name string) (good, ok bool)
	// link reports whether the interface is up (and running).
	link(name string) bool
	// file reports a track_file's value; ok is false for one not read.
	file(name string) (value int64, ok bool)
	// process reports a vrrp_track_process's quorum; ok is false for one
	// not watched.
	process(name string) (up, ok bool)
}

// trackedOf lists what ci tracks, with what its sync group g (nil if
// none) tracks for it, as v sees it: Effective turns the list into its
// priority and fault. srcMissing: its configured source address is on no
// interface of this host (a FAULT, as keepalived's). Sync group members'
// own tracking weights are already 0 in the configuration unless the
// group has sync_group_tracking_weight (config's resolve).
func trackedOf(ci *config.Instance, g *config.SyncGroup, srcMissing bool, v trackView) []Tracked {
	var list []Tracked
	addScripts := func(ts []config.TrackScript) {
		for _, s := range ts {
			if good, ok := v.script(s.Name); ok {
				list = append(list, Tracked{Weight: s.Weight, Reverse: s.Reverse, Good: good})
			}
		}
	}
	addLinks := func(ti []config.TrackInterface) {
		for _, l := range ti {
			list = append(list, Tracked{Weight: l.Weight, Reverse: l.Reverse, Good: v.link(l.Name)})
		}
	}
	addScripts(ci.TrackScripts)
	addLinks(ci.TrackInterfaces)
	if g != nil {
		addScripts(g.TrackScripts)
		addLinks(g.TrackInterfaces)
	}
	for _, u := range FileUses(ci, g) {
		if val, ok := v.file(u.Name); ok {
			list = append(list, fileTracked(val, u.Weight, u.Reverse))
		}
	}
	list = append(list, routingLinks(ci, v.link)...)
	for _, u := range ProcessUses(ci, g) {
		if up, ok := v.process(u.Name); ok {
			list = append(list, processTracked(u, up))
		}
	}
	if !ci.DontTrackPrimary && ci.Interface != "" {
		list = append(list, Tracked{Good: v.link(ci.Interface)})
	}
	if !ci.DontTrackPrimary && ci.VMAC != nil {
		// Its macvlan too, as keepalived adds the instance to it: down or
		// deleted under directord, the instance is in FAULT.
		list = append(list, Tracked{Good: v.link(ci.VMAC.Name)})
	}
	// The macvlans of its addresses (use_vmac_addr, an address's
	// use_vmac), as keepalived adds the instance to each (TRACK_ADDR)
	// unless the address is no_track, dont_track_primary or not.
	seen := map[string]bool{}
	for _, vs := range [][]config.VIP{ci.VIPs, ci.ExcludedVIPs} {
		for _, a := range vs {
			if a.VMACDev != "" && !a.NoTrack && !seen[a.VMACDev] {
				seen[a.VMACDev] = true
				list = append(list, Tracked{Good: v.link(a.VMACDev)})
			}
		}
	}
	// The other interfaces its addresses name (dev), as keepalived adds
	// the instance to each address's interface (TRACK_ADDR, weight 0:
	// down is FAULT) unless the address is no_track. Its own interface
	// (and its macvlan's) is tracked above, or spared by
	// dont_track_primary, which keepalived's rule spares too.
	for _, vs := range [][]config.VIP{ci.VIPs, ci.ExcludedVIPs} {
		for _, a := range vs {
			dev := a.Dev
			if a.VMACDev != "" || a.NoTrack || dev == "" || dev == ci.Interface ||
				(ci.VMAC != nil && dev == ci.VMAC.Name) || seen[dev] {
				continue
			}
			seen[dev] = true
			list = append(list, Tracked{Good: v.link(dev)})
		}
	}
	return append(list, Tracked{Good: !srcMissing})
}

// routingLinks are the interfaces ci's virtual rules (iif, oif) and
// routes (dev) name, tracked as keepalived tracks them
// (add_vrrp_to_interface, TRACK_RULE and TRACK_ROUTE): weight 0, so one
// down puts the instance in FAULT; no_track ones are not.
func routingLinks(ci *config.Instance, up func(string) bool) []Tracked {
	var out []Tracked
	seen := map[string]bool{}
	add := func(dev string) {
		if dev != "" && !seen[dev] {
			seen[dev] = true
			out = append(out, Tracked{Good: up(dev)})
		}
	}
	for _, r := range ci.Rules {
		if !r.NoTrack {
			add(r.IIf)
			add(r.OIf)
		}
	}
	for _, r := range ci.Routes {
		if !r.NoTrack {
			add(r.Dev)
		}
	}
	return out
}

// disabledScript is a vrrp_script that some instance tracks but that
// cannot run, and why.
type disabledScript struct {
	Name   string
	Reason error
}

// scriptsTracked are the vrrp_scripts of cfg that some instance or sync
// group tracks, in the order first tracked; disabled says why one cannot
// run (insecure, not found). As keepalived, such a script is tracked by
// no one, rather than failing: it is in off, once.
func scriptsTracked(cfg *config.Config, disabled func(*config.VRRPScript) error) (on []*config.VRRPScript, off []disabledScript) {
	byName := map[string]*config.VRRPScript{}
	for _, s := range cfg.Scripts {
		byName[s.Name] = s
	}
	seen := map[string]bool{}
	use := func(ts []config.TrackScript) {
		for _, s := range ts {
			c, ok := byName[s.Name]
			if !ok || seen[s.Name] {
				continue
			}
			seen[s.Name] = true
			if err := disabled(c); err != nil {
				off = append(off, disabledScript{Name: s.Name, Reason: err})
				continue
			}
			on = append(on, c)
		}
	}
	for _, in := range cfg.Instances {
		use(in.TrackScripts)
	}
	for _, g := range cfg.SyncGroups {
		use(g.TrackScripts)
	}
	return on, off
}
