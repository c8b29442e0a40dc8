package config

import (
	"fmt"
	"net/netip"
)

// validate checks what only the whole configuration can tell: names that
// must be unique, references that must resolve, addresses and VRIDs that
// must not collide.
func (d *decoder) validate() {
	d.validateVRRP()
	d.validateLVS()
}

// unique reports each name given a second time.
func unique[T any](d *decoder, what string, items []T, key func(T) (string, Pos)) map[string]T {
	seen := map[string]T{}
	for _, it := range items {
		k, pos := key(it)
		if prev, ok := seen[k]; ok {
			_, ppos := key(prev)
			d.rep.errorf(pos, what, "%s is already defined at %s", k, ppos)
			continue
		}
		seen[k] = it
	}
	return seen
}

func (d *decoder) validateVRRP() {
	cfg := d.cfg
	scripts := unique(d, "vrrp_script", cfg.Scripts, func(s *VRRPScript) (string, Pos) { return s.Name, s.Pos })
	instances := unique(d, "vrrp_instance", cfg.Instances, func(in *Instance) (string, Pos) { return in.Name, in.Pos })
	unique(d, "vrrp_sync_group", cfg.SyncGroups, func(g *SyncGroup) (string, Pos) { return g.Name, g.Pos })

	checkScripts := func(ts []TrackScript) {
		for _, t := range ts {
			if _, ok := scripts[t.Name]; !ok && !d.isDeclared("vrrp_script", t.Name) {
				d.rep.errorf(t.pos, t.Name, "track_script: no vrrp_script %s is defined%s", t.Name, didYouMean(t.Name, keys(scripts)))
			}
		}
	}

	type vridKey struct {
		iface  string
		family Family
		vrid   int
		mcast  netip.Addr
	}
	vrids := map[vridKey]*Instance{}
	vips := map[vipKey]vipOwner{}
	for _, in := range cfg.Instances {
		if _, given := in.set["virtual_router_id"]; !given {
			d.rep.errorf(in.Pos, "vrrp_instance", "%s has no virtual_router_id", in.Name)
		}
		unicast := len(in.UnicastPeers) > 0
		if in.Interface == "" && !unicast {
			d.rep.errorf(in.Pos, "vrrp_instance", "%s has no interface (only a unicast instance may omit it)", in.Name)
		}
		in.VIPs = d.uniqueVIPs(in, in.VIPs, vips)
		in.ExcludedVIPs = d.uniqueVIPs(in, in.ExcludedVIPs, vips)
		if in.UnicastSrcIP.IsValid() && family(in.UnicastSrcIP) != in.Family {
			d.rep.errorf(posOf(in.set, "unicast_src_ip", in.Pos), "unicast_src_ip", "%s is not an %s address like %s's virtual addresses", in.UnicastSrcIP, in.Family, in.Name)
		}
		for _, p := range in.UnicastPeers {
			if family(p.Addr) != in.Family {
				d.rep.errorf(p.pos, "unicast_peer", "%s is not an %s address like %s's virtual addresses", p.Addr, in.Family, in.Name)
			}
		}
		if in.Version == 3 && len(in.VIPs) == 0 && !in.Strict {
			d.rep.errorf(in.Pos, "vrrp_instance", "%s: VRRPv3 needs at least one virtual_ipaddress (keepalived refuses it too)", in.Name)
		}
		if in.Priority == 255 && in.State != Master {
			d.rep.warnf(in.Pos, "priority", "%s: priority 255 means this router owns the addresses; it should be state MASTER", in.Name)
		}
		checkScripts(in.TrackScripts)
		if in.VRID != 0 && in.Interface != "" {
			k := vridKey{iface: in.Interface, family: in.Family, vrid: in.VRID, mcast: in.MCastDstIP}
			if unicast {
				// Unicast instances may share a VRID when their peers differ.
				k.mcast = in.UnicastPeers[0].Addr
			}
			if prev, ok := vrids[k]; ok {
				d.rep.errorf(in.Pos, "virtual_router_id", "%s uses VRID %d on %s, as %s does at %s", in.Name, in.VRID, in.Interface, prev.Name, prev.Pos)
			} else {
				vrids[k] = in
			}
		}
	}
	member := map[string]*SyncGroup{}
	for _, g := range cfg.SyncGroups {
		checkScripts(g.TrackScripts)
		if len(g.Members) == 0 {
			d.rep.errorf(g.Pos, "vrrp_sync_group", "%s has no group { } of instances", g.Name)
		} else if len(g.Members) == 1 {
			d.rep.warnf(g.Pos, "vrrp_sync_group", "%s has only one instance", g.Name)
		}
		for i, m := range g.Members {
			if _, ok := instances[m]; !ok {
				continue // pruneSyncGroups kept it: its instance had an error
			}
			if prev, ok := member[m]; ok {
				d.rep.errorf(g.memberPos[i], "vrrp_sync_group", "%s: instance %s is already in sync group %s", g.Name, m, prev.Name)
				continue
			}
			member[m] = g
		}
	}
	if sd := cfg.Global.SyncDaemon; sd != nil && sd.Instance != "" {
		if _, ok := instances[sd.Instance]; !ok {
			d.rep.errorf(sd.Pos, "lvs_sync_daemon", "no vrrp_instance %s is defined%s", sd.Instance, didYouMean(sd.Instance, keys(instances)))
		}
	}
}

// vipKey is an address as the kernel knows it: on one device. The same
// address on two devices is two addresses (Neutron's L3 HA routers list one
// subnet's address on the device of each router).
type vipKey struct {
	addr netip.Addr
	dev  string
}

// uniqueVIPs drops an address listed twice on one device in one instance
// (keepalived's own sample does this) with a warning, and reports an
// address that another instance also moves on the same device: keepalived
// runs both, and the first instance to leave master removes the address
// from under the other; directord does the same, with a warning (an error
// under --strict).
func (d *decoder) uniqueVIPs(in *Instance, list []VIP, owners map[vipKey]vipOwner) []VIP {
	out := list[:0]
	for _, v := range list {
		a := v.Prefix.Addr()
		k := vipKey{a, v.Dev}
		if k.dev == "" {
			k.dev = in.Interface
		}
		if prev, ok := owners[k]; ok {
			if prev.instance == in {
				d.rep.warnf(v.Pos, a.String(), "virtual address %s is already listed at %s: this line is ignored", a, prev.pos)
				continue
			}
			d.rep.lenient(v.Pos, a.String(), "virtual address %s on %s is also moved by %s at %s: whichever leaves master first removes it from the other, as in keepalived", a, k.dev, prev.instance.Name, prev.pos)
		} else {
			owners[k] = vipOwner{in, v.Pos}
		}
		out = append(out, v)
	}
	return out
}

type vipOwner struct {
	instance *Instance
	pos      Pos
}

func keys[T any](m map[string]T) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// overlappingServices reports two virtual servers that make the same IPVS
// service, through a group's address, range or fwmark: one service cannot
// have two sets of real servers.
func (d *decoder) overlappingServices(groups map[string]*VirtualServerGroup) {
	owner := map[string]*VirtualServer{}
	claim := func(vs *VirtualServer, key string) bool {
		if prev, ok := owner[key]; ok && prev != vs {
			d.rep.errorf(vs.Pos, "virtual_server", "%s is also a service of the virtual_server at %s", key, prev.Pos)
			return false
		}
		owner[key] = vs
		return true
	}
	for _, vs := range d.cfg.VirtualServers {
		if vs.Group == "" {
			// Two plain virtual servers of one key: unique said so.
			if prev, taken := owner[vsKey(vs)]; !taken || prev.Group != "" {
				claim(vs, vsKey(vs))
			}
			continue
		}
		g, ok := groups[vs.Group]
		if !ok {
			continue
		}
		n := 0
	entries:
		for _, e := range g.Entries {
			if e.FWMark != 0 {
				f := vs.Family
				if e.Family != FamilyUnset {
					f = e.Family
				}
				if !claim(vs, fmt.Sprintf("fwmark %d (%s)", e.FWMark, f)) {
					break
				}
				continue
			}
			last := e.Last
			if !last.IsValid() {
				last = e.First
			}
			for a := e.First; a.IsValid() && a.Compare(last) <= 0; a = a.Next() {
				if n++; n > 1<<16 || !claim(vs, fmt.Sprintf("%s %s", vs.Protocol, netip.AddrPortFrom(a, e.Port))) {
					break entries
				}
			}
		}
	}
}

// vsKey names a virtual server as IPVS identifies it.
func vsKey(vs *VirtualServer) string {
	switch {
	case vs.FWMark != 0:
		return fmt.Sprintf("fwmark %d (%s)", vs.FWMark, vs.Family)
	case vs.Group != "":
		return fmt.Sprintf("group %s (%s)", vs.Group, vs.Protocol)
	}
	return fmt.Sprintf("%s %s", vs.Protocol, vs.Addr)
}

func (d *decoder) validateLVS() {
	cfg := d.cfg
	groups := unique(d, "virtual_server_group", cfg.VirtualServerGroups, func(g *VirtualServerGroup) (string, Pos) { return g.Name, g.Pos })
	for _, g := range cfg.VirtualServerGroups {
		if g.written == 0 {
			d.rep.errorf(g.Pos, "virtual_server_group", "%s is empty", g.Name)
		}
	}
	unique(d, "virtual_server", cfg.VirtualServers, func(vs *VirtualServer) (string, Pos) { return vsKey(vs), vs.Pos })
	d.overlappingServices(groups)
	for _, vs := range cfg.VirtualServers {
		if vs.Group != "" {
			if _, ok := groups[vs.Group]; !ok && !d.isDeclared("virtual_server_group", vs.Group) {
				d.rep.errorf(vs.Pos, "virtual_server", "no virtual_server_group %s is defined%s", vs.Group, didYouMean(vs.Group, keys(groups)))
			}
		}
		seen := map[netip.AddrPort]Pos{}
		for _, rs := range vs.RealServers {
			if prev, ok := seen[rs.Addr]; ok {
				d.rep.errorf(rs.Pos, "real_server", "%s is already a real server of this virtual server at %s", rs.Addr, prev)
				continue
			}
			seen[rs.Addr] = rs.Pos
			if lt, ut := rs.LThreshold(), rs.UThreshold(); lt > 0 && (ut == 0 || lt > ut) {
				d.rep.errorf(rs.Pos, "lthreshold", "%d needs a uthreshold at least as high: the kernel refuses it", lt)
			}
			if rs.Method.Kind != TUN && family(rs.Addr.Addr()) != vs.Family {
				d.rep.errorf(rs.Pos, "real_server", "%s is not an %s address; only tunnelled real servers may differ in family from the virtual server", rs.Addr.Addr(), vs.Family)
			}
		}
		if s := vs.SorryServer; s != nil && s.Method.Kind != TUN && family(s.Addr.Addr()) != vs.Family {
			d.rep.errorf(vs.Pos, "sorry_server", "%s is not an %s address", s.Addr.Addr(), vs.Family)
		}
	}
}
