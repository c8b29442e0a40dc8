package config

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"
)

func defaultGlobal(hostname string) Global {
	return Global{
		RouterID:    hostname,
		VRRPVersion: 2,
		Nice:        -15,
		MCastGroup4: netip.AddrFrom4([4]byte{224, 0, 0, 18}),
		MCastGroup6: netip.MustParseAddr("ff02::12"),
		Garp: GarpSettings{MasterDelay: 5 * time.Second, MasterRepeat: 5, LowerPrioDelay: -1,
			LowerPrioRepeat: -1, MasterRefreshRepeat: 1},
	}
}

// resolve applies keepalived's defaults and inheritance: global_defs into
// instances, virtual server into real servers into checkers.
func (d *decoder) resolve() {
	g := &d.cfg.Global
	if g.Garp.LowerPrioDelay < 0 {
		g.Garp.LowerPrioDelay = g.Garp.MasterDelay
	}
	if g.Garp.LowerPrioRepeat < 0 {
		g.Garp.LowerPrioRepeat = g.Garp.MasterRepeat
	}
	if _, ok := g.set["vrrp_lower_prio_no_advert"]; !ok && g.Strict {
		g.LowerPrioNoAdvert = true
	}
	for _, in := range d.cfg.Instances {
		d.resolveInstance(in)
	}
	d.resolveStatic()
	d.resolveVMACs()
	d.pruneSyncGroups()
	d.resolveTracking()
	d.resolveTrackFiles()
	d.resolveTrackProcesses()
	d.resolveFIFOs()
	d.resolvePriorityChanges()
	if sd := g.SyncDaemon; sd != nil && sd.SyncID < 0 {
		sd.SyncID = 0
		for _, in := range d.cfg.Instances {
			if in.Name == sd.Instance {
				sd.SyncID = in.VRID
			}
		}
	}
	for _, vs := range d.cfg.VirtualServers {
		d.resolveVS(vs)
	}
	d.resolveSMTPAlerts()
	d.resolveBGP()
}

// resolveSMTPAlerts applies keepalived's smtp_alert inheritance: an
// object's own smtp_alert, else global_defs' smtp_alert_vrrp (instances,
// sync groups) or smtp_alert_checker (virtual and real servers), else
// global_defs' smtp_alert, else no, but yes for a real server
// (keepalived's check_data.c calls that default inconsistent and keeps
// it). Nothing is mailed without notification_email and smtp_server.
func (d *decoder) resolveSMTPAlerts() {
	g := &d.cfg.Global
	on := g.Email.Enabled()
	pick := func(own, level *bool, def bool) bool {
		switch {
		case !on:
			return false
		case own != nil:
			return *own
		case level != nil:
			return *level
		case g.smtpAlert != nil:
			return *g.smtpAlert
		}
		return def
	}
	for _, in := range d.cfg.Instances {
		in.SMTPAlert = pick(in.smtpAlert, g.smtpAlertVRRP, false)
	}
	for _, sg := range d.cfg.SyncGroups {
		sg.SMTPAlert = pick(sg.smtpAlert, g.smtpAlertVRRP, false)
	}
	for _, vs := range d.cfg.VirtualServers {
		vs.SMTPAlert = pick(vs.smtpAlert, g.smtpAlertChecker, false)
		for _, rs := range vs.RealServers {
			rs.SMTPAlert = pick(rs.smtpAlertAsRead(), g.smtpAlertChecker, true)
		}
	}
}

// pruneSyncGroups drops the members of sync groups that name no instance,
// and groups left with none, as keepalived 2.2.7 does ("Virtual router
// VI_IPV4 specified in sync group EXAMPLE_GROUP doesn't exist - ignoring",
// "no matching virtual router found in group declaration - removing"). A
// member whose instance had an error of its own is kept: that error stops
// the configuration already.
func (d *decoder) pruneSyncGroups() {
	names := map[string]bool{}
	var list []string
	for _, in := range d.cfg.Instances {
		names[in.Name] = true
		list = append(list, in.Name)
	}
	groups := d.cfg.SyncGroups[:0]
	for _, g := range d.cfg.SyncGroups {
		var members []string
		var pos []Pos
		for i, m := range g.Members {
			if !names[m] && !d.isDeclared("vrrp_instance", m) {
				d.rep.lenient(g.memberPos[i], "vrrp_sync_group", "%s: no vrrp_instance %s is defined, ignored as keepalived does%s", g.Name, m, didYouMean(m, list))
				continue
			}
			members = append(members, m)
			pos = append(pos, g.memberPos[i])
		}
		if len(g.Members) > 0 && len(members) == 0 {
			d.rep.lenient(g.Pos, "vrrp_sync_group", "%s: none of its instances exists: the group is removed, as keepalived does", g.Name)
			continue
		}
		g.Members, g.memberPos = members, pos
		groups = append(groups, g)
	}
	d.cfg.SyncGroups = groups
}

func (d *decoder) resolveInstance(in *Instance) {
	g := &d.cfg.Global
	// The family is the first virtual address's.
	switch {
	case len(in.VIPs) > 0:
		in.Family = family(in.VIPs[0].Prefix.Addr())
	case in.set["native_ipv6"] != Pos{}:
		in.Family = Inet6
	case in.UnicastSrcIP.IsValid():
		in.Family = family(in.UnicastSrcIP)
	case len(in.UnicastPeers) > 0:
		in.Family = family(in.UnicastPeers[0].Addr)
	default:
		in.Family = Inet
	}
	// keepalived 2.2.7 (vrrp.c, vrrp_complete_instance): "Ignoring
	// track_interface X since own interface", at any weight; the own
	// interface is tracked anyway (down is FAULT) unless
	// dont_track_primary.
	kt := in.TrackInterfaces[:0]
	for _, ti := range in.TrackInterfaces {
		if in.Interface != "" && ti.Name == in.Interface {
			d.rep.lenient(ti.pos, "track_interface", "%s is %s's own interface: ignored as keepalived does (its own interface is tracked anyway, down is FAULT, unless dont_track_primary)", ti.Name, in.Name)
			continue
		}
		kt = append(kt, ti)
	}
	in.TrackInterfaces = kt
	// keepalived 2.2.7 drops an address of another family: "(VI_1):
	// address family must match VRRP instance [2001:db8::15/64] - ignoring".
	kept := in.VIPs[:0]
	for _, v := range in.VIPs {
		if family(v.Prefix.Addr()) != in.Family {
			d.rep.lenient(v.Pos, v.Prefix.Addr().String(), "virtual_ipaddress: not of the family of %s's first address, ignored as keepalived does (put other families in virtual_ipaddress_excluded)", in.Name)
			continue
		}
		kept = append(kept, v)
	}
	in.VIPs = kept
	if in.Version < 0 {
		in.Version = g.VRRPVersion
	}
	// An advert carries at most 255 addresses, and only as many as fit in a
	// 1500-byte packet: keepalived moves the rest to the excluded list.
	maxVIPs := 255
	if in.Family == Inet6 {
		maxVIPs = 89 // what keepalived fits in a 1500-byte packet
	}
	if len(in.VIPs) > maxVIPs {
		d.rep.warnf(in.VIPs[maxVIPs].Pos, "virtual_ipaddress", "%s: an advert holds at most %d addresses: the %d from here on are handled as virtual_ipaddress_excluded, as keepalived does", in.Name, maxVIPs, len(in.VIPs)-maxVIPs)
		in.ExcludedVIPs = append(in.ExcludedVIPs, in.VIPs[maxVIPs:]...)
		in.VIPs = in.VIPs[:maxVIPs:maxVIPs]
	}
	if in.Family == Inet6 && in.Version == 2 {
		// keepalived uses version 3 for IPv6 silently; say so only when
		// the instance asked for version 2 itself.
		if pos, ok := in.set["version"]; ok {
			d.rep.warnf(pos, "version", "%s: IPv6 needs VRRPv3; version 3 is used", in.Name)
		}
		in.Version = 3
	}
	_, stateSet := in.set["state"]
	if in.Priority < 0 {
		in.Priority = 100
		if stateSet && in.State == Master {
			in.Priority = 255
			d.rep.warnf(in.Pos, "vrrp_instance", "%s: state MASTER without a priority: priority 255 (address owner), as keepalived does", in.Name)
		}
	}
	if !stateSet && in.Priority == 255 {
		in.State = Master // the address owner starts as master, as in keepalived
	}
	// advert_int: whole seconds in VRRPv2, centiseconds up to 40.95 s in v3.
	if in.Version == 2 {
		r := in.AdvertInt.Round(time.Second)
		if r < time.Second {
			r = time.Second
		}
		if r != in.AdvertInt {
			d.rep.warnf(posOf(in.set, "advert_int", in.Pos), "advert_int", "VRRPv2 counts whole seconds: %s read as %s", seconds(in.AdvertInt), seconds(r))
			in.AdvertInt = r
		}
	} else {
		r := in.AdvertInt.Round(10 * time.Millisecond)
		if r != in.AdvertInt {
			d.rep.warnf(posOf(in.set, "advert_int", in.Pos), "advert_int", "VRRPv3 counts centiseconds: %s read as %s", seconds(in.AdvertInt), seconds(r))
			in.AdvertInt = r
		}
		if in.AdvertInt > 4095*10*time.Millisecond {
			d.rep.errorf(posOf(in.set, "advert_int", in.Pos), "advert_int", "VRRPv3 allows at most 40.95 seconds, not %s", seconds(in.AdvertInt))
		}
	}
	if in.Auth != nil {
		switch {
		case in.Version == 3:
			d.rep.warnf(posOf(in.set, "authentication", in.Pos), "authentication", "VRRPv3 has no authentication: ignored, as keepalived does")
			in.Auth = nil
		case in.Auth.Type == AuthAH && in.Family == Inet6:
			d.rep.errorf(posOf(in.set, "authentication", in.Pos), "authentication", "AH is not available with IPv6")
		case in.Auth.Type == AuthAH && in.State == Master && in.Priority != 255:
			// keepalived 2.2.7: "Initial state master is incompatible
			// with AH authentication - clearing" (Neutron's L3 HA); the
			// address owner keeps it (vrrp.c, vrrp_complete_instance).
			d.rep.lenient(posOf(in.set, "state", in.Pos), "state", "%s: state MASTER does not go with AH authentication: BACKUP, as keepalived does", in.Name)
			in.State = Backup
		}
	}
	def := func(v *time.Duration, global time.Duration) {
		if *v < 0 {
			*v = global
		}
	}
	defi := func(v *int, global int) {
		if *v < 0 {
			*v = global
		}
	}
	def(&in.Garp.MasterDelay, g.Garp.MasterDelay)
	defi(&in.Garp.MasterRepeat, g.Garp.MasterRepeat)
	def(&in.Garp.LowerPrioDelay, g.Garp.LowerPrioDelay)
	defi(&in.Garp.LowerPrioRepeat, g.Garp.LowerPrioRepeat)
	if in.Garp.ExtraIf < 0 {
		in.Garp.ExtraIf, in.Garp.ExtraIfAll = g.Garp.ExtraIf, g.Garp.ExtraIfAll
	}
	def(&in.Garp.MasterRefresh, g.Garp.MasterRefresh)
	defi(&in.Garp.MasterRefreshRepeat, g.Garp.MasterRefreshRepeat)
	if _, ok := in.set["strict_mode"]; !ok {
		in.Strict = g.Strict
	}
	if _, ok := in.set["accept"]; !ok {
		in.Accept = !in.Strict || in.Priority == 255
	}
	if in.Accept && in.Priority != 255 && in.Strict && in.Version == 2 {
		d.rep.lenient(posOf(in.set, "accept", in.Pos), "accept", "%s: accept mode for VRRP version 2 does not comply with RFC 3768 under vrrp_strict: reset, as keepalived does (its VIPs are dropped while master)", in.Name)
		in.Accept = false
	}
	if _, ok := in.set["skip_check_adv_addr"]; !ok {
		in.SkipCheckAdvAddr = g.SkipCheckAdvAddr
	}
	if _, ok := in.set["lower_prio_no_advert"]; !ok {
		in.LowerPrioNoAdvert = g.LowerPrioNoAdvert || in.Strict
	}
	if _, ok := in.set["higher_prio_send_advert"]; !ok {
		in.HigherPrioSendAdvert = g.HigherPrioSendAdvert
	}
	if _, ok := in.set["check_unicast_src"]; !ok {
		in.CheckUnicastSrc = g.CheckUnicastSrc
	}
	for _, p := range in.UnicastPeers {
		if p.MinTTL > 0 || p.MaxTTL > 0 {
			in.CheckUnicastSrc = true
		}
	}
	if len(in.UnicastPeers) == 0 && !in.UnicastFaultNoPeer {
		// keepalived (vrrp_complete_instance): "A unicast keyword has
		// been specified without any unicast peers. Defaulting to
		// multicast."; unicast_ttl has its own message below.
		for _, k := range []string{"unicast_peer", "unicast_src_ip", "check_unicast_src"} {
			if pos, ok := in.set[k]; ok {
				d.rep.warnf(pos, k, "%s: no unicast_peer: the instance uses multicast, as keepalived does", in.Name)
				break
			}
		}
	}
	if pos, ok := in.set["unicast_ttl"]; ok {
		switch {
		case len(in.UnicastPeers) == 0:
			d.rep.warnf(pos, "unicast_ttl", "has no effect without unicast_peer: ignored, as keepalived does")
		case in.UnicastTTL == 0 && in.Family == Inet && (in.Auth == nil || in.Auth.Type != AuthAH):
			d.rep.errorf(pos, "unicast_ttl", "0 cannot be sent: the kernel refuses TTL 0 on directord's socket (keepalived writes it in its own IPv4 header)")
		}
	} else if in.Family == Inet6 {
		// keepalived sets no hop limit for IPv6 unicast adverts: the
		// kernel's default (net.ipv6.conf.*.hop_limit, 64) goes.
		in.UnicastTTL = -1
	}
	d.strictMode(in)
	// keepalived's rules for preemption, applied as it applies them.
	if pos, ok := in.set["nopreempt"]; ok && !in.Preempt {
		switch {
		case in.State == Master:
			d.rep.warnf(pos, "nopreempt", "needs state BACKUP: cleared, as keepalived does")
			in.Preempt = true
		case in.Priority == 255:
			d.rep.warnf(pos, "nopreempt", "the address owner always preempts: cleared, as keepalived does")
			in.Preempt = true
		}
	}
	if pos, ok := in.set["preempt_delay"]; ok && in.PreemptDelay > 0 {
		switch {
		case in.State == Master:
			d.rep.warnf(pos, "preempt_delay", "needs state BACKUP: cleared, as keepalived does")
			in.PreemptDelay = 0
		case !in.Preempt:
			d.rep.warnf(pos, "preempt_delay", "has no use with nopreempt: cleared, as keepalived does")
			in.PreemptDelay = 0
		}
	}
	for k, pos := range in.set {
		if iface, ok := strings.CutPrefix(k, "lvs_sync_daemon_interface="); ok {
			if g.SyncDaemon == nil {
				d.rep.warnf(pos, "lvs_sync_daemon_interface", "deprecated: read as global_defs lvs_sync_daemon %s %s", iface, in.Name)
				g.SyncDaemon = &SyncDaemon{Pos: pos, Interface: iface, Instance: in.Name, SyncID: -1, Port: 8848,
					Group: netip.AddrFrom4([4]byte{224, 0, 0, 81})}
			} else {
				d.rep.warnf(pos, "lvs_sync_daemon_interface", "ignored: global_defs sets lvs_sync_daemon")
			}
		}
	}
}

// strictMode applies vrrp_strict / strict_mode as keepalived does: RFC
// behaviour only.
func (d *decoder) strictMode(in *Instance) {
	if !in.Strict {
		return
	}
	if in.State == Master && in.Priority != 255 {
		d.rep.warnf(posOf(in.set, "state", in.Pos), "state", "%s: strict mode allows state MASTER only for the address owner (priority 255): BACKUP, as keepalived does", in.Name)
		in.State = Backup
	}
	if in.State != Master && in.Priority == 255 {
		// keepalived: "State MASTER must match being address owner",
		// both ways (vrrp_complete_instance).
		d.rep.warnf(posOf(in.set, "state", in.Pos), "state", "%s: strict mode starts the address owner (priority 255) in state MASTER, as keepalived does", in.Name)
		in.State = Master
	}
	if in.Auth != nil {
		d.rep.warnf(posOf(in.set, "authentication", in.Pos), "authentication", "strict mode has no authentication: ignored, as keepalived does")
		in.Auth = nil
	}
	if in.PreemptDelay > 0 {
		d.rep.warnf(posOf(in.set, "preempt_delay", in.Pos), "preempt_delay", "strict mode has no preempt_delay: cleared, as keepalived does")
		in.PreemptDelay = 0
	}
	in.Garp.LowerPrioRepeat, in.Garp.LowerPrioDelay = 0, 0
	if len(in.UnicastPeers) > 0 {
		d.rep.errorf(in.Pos, "unicast_peer", "%s: strict mode does not allow unicast", in.Name)
	}
	if len(in.VIPs) == 0 {
		d.rep.errorf(in.Pos, "vrrp_instance", "%s: strict mode needs at least one virtual_ipaddress", in.Name)
	}
}

func posOf(set map[string]Pos, kw string, def Pos) Pos {
	if p, ok := set[kw]; ok {
		return p
	}
	return def
}

// resolveTracking fills track_script weights from the scripts, records sync
// group membership, and zeroes members' tracking weights as keepalived does
// unless the group keeps them.
func (d *decoder) resolveTracking() {
	scripts := map[string]*VRRPScript{}
	for _, s := range d.cfg.Scripts {
		scripts[s.Name] = s
	}
	fill := func(ts []TrackScript) {
		for i := range ts {
			if s, ok := scripts[ts[i].Name]; ok && ts[i].Weight == noWeight {
				ts[i].Weight = s.Weight
				ts[i].Reverse = ts[i].Reverse || s.Reverse
			}
		}
	}
	for _, in := range d.cfg.Instances {
		fill(in.TrackScripts)
	}
	for _, g := range d.cfg.SyncGroups {
		fill(g.TrackScripts)
	}
	byName := map[string]*Instance{}
	for _, in := range d.cfg.Instances {
		byName[in.Name] = in
	}
	for _, g := range d.cfg.SyncGroups {
		for _, m := range g.Members {
			in, ok := byName[m]
			if !ok || in.SyncGroup != "" {
				continue // reported by validate
			}
			in.SyncGroup = g.Name
			if g.TrackingWeight {
				continue
			}
			zeroed := false
			for i := range in.TrackScripts {
				if in.TrackScripts[i].Weight != 0 && in.TrackScripts[i].Weight != noWeight {
					in.TrackScripts[i].Weight = 0
					zeroed = true
				}
			}
			for i := range in.TrackInterfaces {
				if in.TrackInterfaces[i].Weight != 0 {
					in.TrackInterfaces[i].Weight = 0
					zeroed = true
				}
			}
			if zeroed {
				d.rep.warnf(in.Pos, "vrrp_instance", "%s is in sync group %s: its tracking weights are set to 0, as keepalived does (set sync_group_tracking_weight to keep them)", in.Name, g.Name)
			}
		}
	}
}

// Default check timings by checker type, as keepalived has them.
func checkerDefaults(typ CheckerType) (retry int, delayBeforeRetry time.Duration) {
	switch typ {
	case CheckHTTPGet, CheckSSLGet:
		return 1, 3 * time.Second
	case CheckMisc:
		return 0, time.Second
	case CheckDNS:
		return 3, time.Second
	}
	return 1, time.Second
}

func (d *decoder) resolveVS(vs *VirtualServer) {
	if vs.Scheduler == "" {
		vs.Scheduler = "wlc"
	}
	if vs.Method.Kind == MethodUnset {
		vs.Method = Method{Kind: NAT}
	}
	if vs.FWMark != 0 {
		if pos, ok := vs.set["protocol"]; ok {
			d.rep.warnf(pos, "protocol", "ignored for a fwmark virtual server")
			vs.Protocol = ProtocolUnset
		}
	} else if vs.Protocol == ProtocolUnset {
		vs.Protocol = UDP
		d.rep.warnf(vs.Pos, "virtual_server", "no protocol set: UDP, as keepalived defaults (write protocol TCP for a TCP service)")
	}
	if vs.OPS && vs.Protocol != UDP && vs.FWMark == 0 {
		d.rep.warnf(vs.Pos, "ops", "one-packet scheduling needs protocol UDP: ignored")
		vs.OPS = false
	}
	var kept []string
	for _, f := range vs.SchedFlags {
		if (strings.HasPrefix(f, "sh-") && vs.Scheduler != "sh") || (strings.HasPrefix(f, "mh-") && vs.Scheduler != "mh") {
			d.rep.warnf(vs.set[f], f, "applies only to the %s scheduler, not %s: ignored", f[:2], vs.Scheduler)
			continue
		}
		kept = append(kept, f)
	}
	vs.SchedFlags = kept
	d.maglevWithoutFallback(vs)
	if vs.Addr.IsValid() && vs.Addr.Port() == 0 && vs.Persistence == nil {
		d.rep.warnf(vs.Pos, "virtual_server", "a virtual server without a port must be persistent: persistence_timeout 360, as keepalived sets")
		vs.persistence()
	}
	if vs.HASuspend && vs.FWMark != 0 {
		d.rep.warnf(vs.set["ha_suspend"], "ha_suspend", "a fwmark virtual server has no address to wait for: ignored, as keepalived clears it")
		vs.HASuspend = false
	}
	switch {
	case vs.engine == "":
	case vs.Persistence != nil:
		vs.Persistence.Engine = vs.engine
	default:
		d.rep.warnf(vs.set["persistence_engine"], "persistence_engine", "has no effect without persistence_timeout (or persistence_granularity): the service is not persistent, as in keepalived")
	}
	if vs.Persistence != nil && vs.Persistence.Granularity != "" {
		g := vs.Persistence.Granularity
		if fam := vs.familyGuess(); (fam == Inet && !strings.Contains(g, ".")) || (fam == Inet6 && strings.Contains(g, ".")) {
			d.rep.errorf(vs.Pos, "persistence_granularity", "%s does not suit an %s service", g, fam)
		}
	}
	t := *vs.timing
	vs.DelayLoop = pick(t.delayLoop, 60*time.Second)
	vs.ConnectTimeout = pick(t.connectTimeout, 5*time.Second)
	if vs.SorryServer != nil && vs.SorryServer.Method.Kind == MethodUnset {
		vs.SorryServer.Method = vs.Method
	}
	var total int64
	for _, rs := range vs.RealServers {
		d.resolveRS(vs, rs)
		rs.timing = nil
		total += int64(rs.Weight)
	}
	vs.timing = nil
	if vs.Family == FamilyUnset {
		vs.Family = vs.familyGuess()
	}
	if vs.Hysteresis >= vs.Quorum {
		d.rep.warnf(vs.Pos, "hysteresis", "%d is not less than quorum %d: %d used, as keepalived does", vs.Hysteresis, vs.Quorum, vs.Quorum-1)
		vs.Hysteresis = vs.Quorum - 1
	}
	if len(vs.RealServers) > 0 && int64(vs.Quorum) > total {
		if total >= 1 {
			d.rep.warnf(vs.Pos, "quorum", "%d is more than the real servers' total weight %d: %d used, as keepalived does", vs.Quorum, total, total)
			vs.Quorum = uint32(total)
			if vs.Hysteresis >= vs.Quorum {
				vs.Hysteresis = vs.Quorum - 1
			}
		} else {
			d.rep.warnf(vs.Pos, "quorum", "the real servers' total weight is 0: quorum %d can never be reached", vs.Quorum)
		}
	}
}

// familyGuess is the virtual server's family, or for fwmark and group
// services that of its first non-tunnelled real server, else inet.
func (vs *VirtualServer) familyGuess() Family {
	if vs.Family != FamilyUnset {
		return vs.Family
	}
	for _, rs := range vs.RealServers {
		if rs.Method.Kind != TUN {
			return family(rs.Addr.Addr())
		}
	}
	return Inet
}

func pick(v, def time.Duration) time.Duration {
	if v >= 0 {
		return v
	}
	return def
}

func pickInt(vals ...int) int {
	for _, v := range vals {
		if v >= 0 {
			return v
		}
	}
	return 0
}

func (d *decoder) resolveRS(vs *VirtualServer, rs *RealServer) {
	if rs.Weight < 0 {
		rs.Weight = vs.weight
	}
	if rs.Method.Kind == MethodUnset {
		rs.Method = vs.Method
	}
	if rs.given&givenInhibit == 0 {
		rs.InhibitOnFailure = vs.InhibitOnFailure
	}
	if rs.given&givenAlpha == 0 {
		rs.Alpha = vs.Alpha
	}
	if rs.Addr.Port() == 0 && vs.Addr.Port() != 0 {
		rs.Addr = netip.AddrPortFrom(rs.Addr.Addr(), vs.Addr.Port())
	}
	if rs.Method.Kind != NAT && vs.FWMark != 0 && rs.Addr.Port() != 0 {
		// keepalived 2.2.7: "fwmark virtual server FWM 111, real server
		// [192.0.2.31]:none:53 has port specified - clearing". Its checkers
		// were made from the address before, so they keep the port.
		d.rep.warnf(rs.Pos, "real_server", "%s of a fwmark virtual server has no port: %d cleared, as keepalived does (its checkers keep it)", rs.Method.Kind, rs.Addr.Port())
		for _, c := range rs.Checkers {
			if c.ConnectPort == 0 {
				// c's spec may be shared (intern.go): changed as a copy.
				sp := *c.CheckerSpec
				sp.ConnectPort = rs.Addr.Port()
				c.CheckerSpec = d.checks.spec(sp)
			}
		}
		rs.Addr = netip.AddrPortFrom(rs.Addr.Addr(), 0)
	}
	if rs.Method.Kind != NAT && vs.Addr.IsValid() && rs.Addr.Port() != vs.Addr.Port() {
		d.rep.warnf(rs.Pos, "real_server", "%s cannot change the port: port %d used, not %d, as keepalived does", rs.Method.Kind, vs.Addr.Port(), rs.Addr.Port())
		rs.Addr = netip.AddrPortFrom(rs.Addr.Addr(), vs.Addr.Port())
	}
	vt, rt := *vs.timing, *rs.timing
	for _, c := range rs.Checkers {
		// c's spec may be shared (intern.go): resolved as a copy, shared
		// in turn.
		sp := *c.CheckerSpec
		ct := sp.timing
		retry, dbr := checkerDefaults(sp.Type)
		sp.DelayLoop = pick(ct.delayLoop, pick(rt.delayLoop, vs.DelayLoop))
		sp.ConnectTimeout = pick(ct.connectTimeout, pick(rt.connectTimeout, vs.ConnectTimeout))
		sp.Retry = pickInt(ct.retry, rt.retry, vt.retry, retry)
		sp.DelayBeforeRetry = pick(ct.delayBeforeRetry, pick(rt.delayBeforeRetry, pick(vt.delayBeforeRetry, dbr)))
		sp.Warmup = pick(ct.warmup, pick(rt.warmup, pick(vt.warmup, sp.DelayLoop)))
		sp.Alpha = rs.Alpha
		if sp.alphaSet {
			sp.Alpha = sp.alphaGiven
		}
		sp.timing, sp.alphaSet, sp.alphaGiven = timing{}, false, false
		if sp.HTTP != nil {
			// sp.HTTP may be shared too.
			h := *sp.HTTP
			h.SNIVirtualHost = pickStr(h.VirtualHost, vs.VirtualHost)
			h.VirtualHost = pickStr(h.VirtualHost, pickStr(rs.VirtualHost(), vs.VirtualHost))
			sp.HTTP = d.checks.http(h)
		}
		if sp.Misc != nil && sp.Misc.Timeout == 0 {
			m := *sp.Misc
			m.Timeout = vs.DelayLoop
			sp.Misc = &m
		}
		c.CheckerSpec = d.checks.spec(sp)
	}
}

// pickStr is a, else b.
func pickStr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// resolveVMACs completes each instance's use_vmac as keepalived's
// vrrp_complete_instance does: the MAC, the name (given ones first, then
// vmac_prefix.VRID in the instances' order, another when that is taken),
// and what goes with a macvlan.
func (d *decoder) resolveVMACs() {
	taken := map[string]bool{}
	for _, in := range d.cfg.Instances {
		if in.VMAC != nil && in.VMAC.named {
			if taken[in.VMAC.Name] {
				d.rep.lenient(in.VMAC.Pos, "use_vmac", "%s: another instance already uses %s: a name of its own is given instead, as keepalived does", in.Name, in.VMAC.Name)
				in.VMAC.Name, in.VMAC.named = "", false
				continue
			}
			taken[in.VMAC.Name] = true
		}
	}
	prefix := d.cfg.Global.VMACPrefix
	if prefix == "" {
		prefix = "vrrp"
	}
	for _, in := range d.cfg.Instances {
		v := in.VMAC
		if pos, ok := in.set["vmac_xmit_base"]; ok {
			switch {
			case v == nil:
				d.rep.lenient(pos, "vmac_xmit_base", "%s: only valid with use_vmac: ignored, as keepalived does", in.Name)
			case in.Strict:
				d.rep.lenient(pos, "vmac_xmit_base", "%s: does not go with strict mode: ignored, as keepalived does", in.Name)
			default:
				v.XmitBase = true
			}
		}
		if v == nil {
			continue
		}
		if in.Interface == "" {
			// keepalived: "Cannot use VMAC/ipvlan with unicast and no
			// interface - clearing use_vmac"; a multicast instance needs
			// an interface anyway.
			d.rep.lenient(v.Pos, "use_vmac", "%s: an instance without interface has no macvlan: use_vmac ignored, as keepalived does", in.Name)
			in.VMAC = nil
			continue
		}
		if len(in.UnicastPeers) > 0 && !v.XmitBase {
			d.rep.lenient(v.Pos, "use_vmac", "%s: unicast with use_vmac needs vmac_xmit_base: set, as keepalived does", in.Name)
			v.XmitBase = true
		}
		if v.hwGiven && in.Strict {
			d.rep.lenient(v.Pos, "use_vmac", "%s: strict mode has no MAC address of its own: the RFC's is used, as keepalived does", in.Name)
			v.hwGiven = false
		}
		hw := [6]byte{0, 0, 0x5e, 0, 1, byte(in.VRID)}
		if in.Family == Inet6 {
			hw[4] = 2
		}
		if v.hwGiven {
			hw = v.hw
			if v.hwVRID {
				hw[5] = byte(in.VRID)
			}
		}
		v.MAC = net.HardwareAddr(hw[:]).String()
		if pos, ok := in.set["promote_secondaries"]; ok && in.PromoteSecondaries {
			d.rep.lenient(pos, "promote_secondaries", "%s: a macvlan always promotes secondaries: ignored, as keepalived does", in.Name)
			in.PromoteSecondaries = false
		}
		if !v.named {
			v.Name = vmacName(prefix, in.VRID, in.Family == Inet6, taken)
			taken[v.Name] = true
		}
	}
	d.resolveAddrVMACs(taken) // resolve_vmacaddr.go
	for _, in := range d.cfg.Instances {
		// keepalived: "If there are no extra interfaces, disable
		// vmac_garp_intvl"; without "all" only the macvlans of
		// use_vmac_addr (or of an address's use_vmac) count.
		extraIf, extraVMAC := false, false
		own := in.Interface
		if in.VMAC != nil {
			own = in.VMAC.Name
		}
		for _, v := range append(append([]VIP{}, in.VIPs...), in.ExcludedVIPs...) {
			if dev := in.AddrDev(v); dev != own {
				extraVMAC = extraVMAC || v.VMACDev != ""
				extraIf = extraIf || v.VMACDev == ""
			}
		}
		if (!extraIf && !extraVMAC) || (!extraVMAC && !in.Garp.ExtraIfAll) {
			in.Garp.ExtraIf, in.Garp.ExtraIfAll = 0, false
		}
	}
}

// vmacName is keepalived's create_vmac_name: PREFIX.VRID, else PREFIXn.VRID
// for n = 1, 2, ... (IPv6 tries 6 first), the prefix cut to fit 15
// characters, skipping the names taken.
func vmacName(prefix string, vrid int, ipv6 bool, taken map[string]bool) string {
	name := func(num int) string {
		tail := fmt.Sprintf(".%d", vrid)
		if num > 0 {
			tail = fmt.Sprintf("%d.%d", num, vrid)
		}
		p := prefix
		if len(p)+len(tail) > 15 {
			p = p[:max(0, 15-len(tail))]
		}
		return p + tail
	}
	n := name(0)
	for num := 0; taken[n] && num < 1000; n = name(num) {
		switch {
		case ipv6 && num == 0:
			num = 6
		case ipv6 && num == 6:
			num = 1
		default:
			num++
			if ipv6 && num == 6 {
				num++
			}
		}
	}
	return n
}

// maglevWithoutFallback advises, with a warning, a virtual server of
// lvs_sched mh without mh-fallback (flag-1) whose real servers may leave
// or sit at weight 0: the file is keepalived's and runs as keepalived
// runs it (keepalived gives no such advice, so -t counts no difference),
// but its Maglev table then moves or refuses flows where mh-fallback
// would send them on. What the kernel does (ip_vs_mh.c): a destination
// at weight 0 keeps the slots of its last non-zero weight, and without
// mh-fallback a new flow that hashes to one finds no destination, which
// ip_vs_leave answers with ICMP port unreachable; a removed destination
// gives its slots to the others, and the table rebuilt without it moves
// some flows of those that stay too. Every real server may be drained
// (directorctl drain: weight 0), so any mh service with real servers is
// told; one with checks is told also what a failure does.
func (d *decoder) maglevWithoutFallback(vs *VirtualServer) {
	if vs.Scheduler != "mh" || len(vs.RealServers) == 0 {
		return
	}
	for _, f := range vs.SchedFlags {
		if f == "mh-fallback" || f == "flag-1" {
			return
		}
	}
	pos, kw := vs.set["lvs_sched"], "lvs_sched"
	if p, ok := vs.set["lb_algo"]; ok && (pos == Pos{} || p.Line > pos.Line) {
		pos, kw = p, "lb_algo"
	}
	checked := false
	for _, rs := range vs.RealServers {
		checked = checked || len(rs.Checkers) > 0
	}
	const advice = "add mh-fallback, and directord holds a failed or drained real server at weight 0 while the kernel sends its new flows on to the next server (docs/ipvs.md, Maglev services)"
	if checked {
		d.rep.warnf(pos, kw, "mh without mh-fallback: a real server that fails its checks is removed, and the Maglev table rebuilt without it moves some new flows of the other real servers too; one at weight 0 (drained by directorctl drain, or failed with inhibit_on_failure) keeps its slots in the table, and the kernel refuses the new connections that hash to them (ICMP port unreachable); %s", advice)
		return
	}
	d.rep.warnf(pos, kw, "mh without mh-fallback: a real server at weight 0 (drained by directorctl drain, or so in the file) keeps its slots in the Maglev table, and the kernel refuses the new connections that hash to them (ICMP port unreachable); %s", advice)
}
