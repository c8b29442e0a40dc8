package vrrp

import (
	"encoding/json"
	"net/netip"
	"slices"

	"github.com/directord/directord/config"
)

// Change is what a reload does to one instance.
type Change uint8

const (
	// Kept: the same settings; state, addresses and routes stay.
	Kept Change = iota
	// Changed: the same virtual router with other settings (priority,
	// addresses, routes, tracking, scripts, gratuitous ARP ...), changed in
	// place: its state stays, addresses and routes follow the new lists.
	Changed
	// Added: a virtual router the old configuration did not have; it starts
	// as a started instance does.
	Added
	// Removed: a virtual router the new configuration does not have; it
	// stops (a master with a priority 0 advert, its addresses removed) and
	// its notify scripts are told DELETED (notify_deleted) or FAULT.
	Removed
)

func (c Change) String() string {
	switch c {
	case Kept:
		return "kept"
	case Changed:
		return "changed"
	case Added:
		return "added"
	case Removed:
		return "removed"
	}
	return "?"
}

// InstancePlan is what a reload does to one instance: Old and New are
// its names before and after (Old is "" when Added, New "" when Removed).
// What lists the keywords that differ, for Changed.
type InstancePlan struct {
	Change Change
	Old    string
	New    string
	What   []string
}

// PlanReload decides, as keepalived 2.2.7 does at a reload (vrrp_exist,
// clear_diff_vrrp, restore_vrrp_state), what becomes of each instance. An
// old and a new instance are the same virtual router when they have the
// same VRID, family and interface, both multicast or both unicast, and
// for unicast the same unicast_src_ip; the name does not count (a renamed
// instance keeps its state). Such a pair is Kept when nothing else differs
// and Changed otherwise: keepalived keeps the state of both, so a master
// stays master and the protocol alone decides whether a changed priority
// hands over. A change of VRID, interface or family is a different
// virtual router: the old one is Removed, the new one Added.
//
// Global settings (router_id, notify paths, script_user, garp intervals)
// are not instances: they reach the kept instances without a change of
// state.
//
// The result lists the new instances in the new configuration's order,
// then the removed ones in the old order.
func PlanReload(old, cur *config.Config) []InstancePlan {
	used := make([]bool, len(old.Instances))
	var out []InstancePlan
	for _, ni := range cur.Instances {
		match := -1
		for i, oi := range old.Instances {
			if used[i] || !sameRouter(old, oi, cur, ni) {
				continue
			}
			if match < 0 || oi.Name == ni.Name {
				match = i
			}
		}
		if match < 0 {
			out = append(out, InstancePlan{Change: Added, New: ni.Name})
			continue
		}
		used[match] = true
		oi := old.Instances[match]
		what := instanceDiff(old, oi, cur, ni)
		c := Kept
		if len(what) > 0 {
			c = Changed
		}
		out = append(out, InstancePlan{Change: c, Old: oi.Name, New: ni.Name, What: what})
	}
	for i, oi := range old.Instances {
		if !used[i] {
			out = append(out, InstancePlan{Change: Removed, Old: oi.Name})
		}
	}
	return out
}

// sameRouter is keepalived's vrrp_exist: a multicast instance must also
// keep its group (mcast_dst_ip, else global_defs vrrp_mcast_group4/6).
func sameRouter(ac *config.Config, a *config.Instance, bc *config.Config, b *config.Instance) bool {
	if a.VRID != b.VRID || a.Family != b.Family || a.Interface != b.Interface {
		return false
	}
	// keepalived's vrrp_exist: use_vmac on one side only is another
	// router. Its macvlan's name or MAC changed too, here: the old one
	// goes with the old instance, the new one is made for the new.
	if (a.VMAC == nil) != (b.VMAC == nil) || a.VMAC != nil && (a.VMAC.Name != b.VMAC.Name || a.VMAC.MAC != b.VMAC.MAC) {
		return false
	}
	if (len(a.UnicastPeers) > 0) != (len(b.UnicastPeers) > 0) {
		return false
	}
	if len(a.UnicastPeers) > 0 {
		return a.UnicastSrcIP == b.UnicastSrcIP
	}
	return mcastGroup(ac, a) == mcastGroup(bc, b)
}

// mcastGroup is where a multicast instance sends its adverts.
func mcastGroup(c *config.Config, in *config.Instance) netip.Addr {
	switch {
	case in.MCastDstIP.IsValid():
		return in.MCastDstIP
	case in.Family == config.Inet6:
		return c.Global.MCastGroup6
	}
	return c.Global.MCastGroup4
}

// instanceDiff lists the keywords of an instance that differ, its tracked
// scripts' definitions and its sync group counted as its own ("track_script",
// "sync_group").
func instanceDiff(oc *config.Config, a *config.Instance, nc *config.Config, b *config.Instance) []string {
	fa, fb := fields(a), fields(b)
	var what []string
	for k := range fa {
		if fa[k] != fb[k] {
			what = append(what, k)
		}
	}
	for k := range fb {
		if _, ok := fa[k]; !ok {
			what = append(what, k)
		}
	}
	if !slices.Contains(what, "track_script") && config.Canonical(scriptsOf(oc, a)) != config.Canonical(scriptsOf(nc, b)) {
		what = append(what, "track_script")
	}
	if !slices.Contains(what, "sync_group") && config.Canonical(groupOf(oc, a)) != config.Canonical(groupOf(nc, b)) {
		what = append(what, "sync_group")
	}
	slices.Sort(what)
	return what
}

// fields is an instance's settings by keyword, each in its canonical form;
// its name is left out.
func fields(in *config.Instance) map[string]string {
	b, err := json.Marshal(in)
	if err != nil {
		return map[string]string{"!": err.Error()}
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return map[string]string{"!": err.Error()}
	}
	out := map[string]string{}
	for k, v := range m {
		if k == "pos" || k == "name" {
			continue
		}
		var tree any
		if err := json.Unmarshal(v, &tree); err != nil {
			out[k] = string(v)
			continue
		}
		out[k] = config.Canonical(tree)
	}
	return out
}

// scriptsOf is the vrrp_scripts an instance tracks, itself and through its
// sync group, in order.
func scriptsOf(c *config.Config, in *config.Instance) []*config.VRRPScript {
	names := map[string]bool{}
	for _, t := range in.TrackScripts {
		names[t.Name] = true
	}
	if g := groupOf(c, in); g != nil {
		for _, t := range g.TrackScripts {
			names[t.Name] = true
		}
	}
	var out []*config.VRRPScript
	for _, s := range c.Scripts {
		if names[s.Name] {
			out = append(out, s)
		}
	}
	return out
}

func groupOf(c *config.Config, in *config.Instance) *config.SyncGroup {
	for _, g := range c.SyncGroups {
		if g.Name == in.SyncGroup {
			return g
		}
	}
	return nil
}
