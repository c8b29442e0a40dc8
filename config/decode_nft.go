package config

import (
	"math"
	"strconv"
)

// nftables reads "nftables [NAME]" as keepalived 2.2.7's
// vrrp_nftables_handler: the first one names the table (default
// "keepalived") and resets nftables_priority to -1; a later one is
// ignored.
func (d *decoder) nftables(n *Node, g *Global) {
	if !d.noBlock(n) {
		return
	}
	if g.NFTable != "" {
		d.rep.lenient(n.Pos, n.Keyword, "nftables already specified, ignored as keepalived does (table %s)", g.NFTable)
		return
	}
	name := "keepalived"
	if len(n.Args) > 0 {
		d.want(n, 0, 1)
		name = n.Args[0]
		if len(name) >= 256 { // NFT_TABLE_MAXNAMELEN
			d.rep.lenient(n.Pos, n.Keyword, "nftables table name too long, ignored as keepalived does")
			return
		}
	}
	g.NFTable, g.NFTPriority = name, nil
}

// vrrpIptables reads "vrrp_iptables [IN [OUT]]" as Debian's keepalived
// 2.2.7, built with nftables and without iptables: nftables with its
// default table, and a warning.
func (d *decoder) vrrpIptables(n *Node, g *Global) {
	if !d.noBlock(n) {
		return
	}
	d.rep.lenient(n.Pos, n.Keyword, "iptables not supported, using nftables instead (table keepalived), as keepalived 2.2.7 built without iptables does: replace vrrp_iptables with nftables")
	g.NFTable, g.NFTPriority = "keepalived", nil
}

// nftablesPriority reads "nftables_priority N", any int32; a bad value
// is ignored, as keepalived does.
func (d *decoder) nftablesPriority(n *Node, g *Global) {
	if !d.noBlock(n) || !d.want(n, 1, 1) {
		return
	}
	v, err := strconv.ParseInt(n.Args[0], 10, 64)
	if err != nil || v < math.MinInt32 || v > math.MaxInt32 {
		d.rep.lenient(n.Pos, n.Keyword, "invalid nftables chain priority %q, ignored as keepalived does", n.Args[0])
		return
	}
	p := int32(v)
	g.NFTPriority = &p
}

// NFTPriorityOrDefault is the chains' priority: nftables_priority, else
// keepalived's -1.
func (g *Global) NFTPriorityOrDefault() int32 {
	if g.NFTPriority != nil {
		return *g.NFTPriority
	}
	return -1
}

// DropsVIPs reports whether an instance's VIPs are dropped while it is
// master (keepalived's vrrp_handle_accept_mode): a non-owner without
// accept mode.
func (in *Instance) DropsVIPs() bool { return !in.Accept && in.Priority != 255 }

// NFTableName is the table directord keeps when some instance drops its
// VIPs or has a macvlan the table keeps (VMACTable): nftables' name,
// else keepalived's "keepalived", which keepalived uses then without
// being told ("no firewall configured - using nftables"); "" when no
// instance needs one.
func (c *Config) NFTableName() string {
	if c.Global.NFTable != "" {
		return c.Global.NFTable
	}
	for _, in := range c.Instances {
		if in.DropsVIPs() || in.VMACTable(&c.Global) {
			return "keepalived"
		}
	}
	return ""
}

// VMACTables says which of table ip NAME and table ip6 NAME keep the
// instance's own macvlan (use_vmac), as keepalived 2.2.7's
// netlink_link_add_vmac calls nft_add_vmac: its family's, and the other
// family's too when it has excluded addresses of that family; none for
// an IPv4 instance under disable_local_igmp (its macvlan then sends no
// report of a link-local group; keepalived skips the call whole, the
// IPv6 excluded addresses' table with it). A table ip keeps its IGMP
// reports, a table ip6 its MLD reports and router solicitations, from
// leaving with the VMAC.
func (in *Instance) VMACTables(g *Global) (ip, ip6 bool) {
	if in.VMAC == nil {
		return false, false
	}
	v6 := in.Family == Inet6
	if !v6 && g.DisableLocalIGMP {
		return false, false
	}
	other := false
	for _, v := range in.ExcludedVIPs {
		other = other || v.Prefix.Addr().Is6() != v6
	}
	return !v6 || other, v6 || other
}

// Tables says which table keeps an address's macvlan (use_vmac_addr, an
// address's use_vmac): its family's, as keepalived 2.2.7's, an IPv4 one's
// not under disable_local_igmp. directord keeps it there always, where
// keepalived does only when its table is in use already (an instance,
// this one or one before it, with use_vmac, without accept mode, or
// nftables in global_defs): a difference (Differences, use_vmac_addr).
func (av *AddrVMAC) Tables(g *Global) (ip, ip6 bool) {
	if av.IPv6 {
		return false, true
	}
	return !g.DisableLocalIGMP, false
}

// VMACTable reports whether the table keeps one of the instance's
// macvlans (VMACTables, AddrVMAC.Tables).
func (in *Instance) VMACTable(g *Global) bool {
	if ip, ip6 := in.VMACTables(g); ip || ip6 {
		return true
	}
	for _, av := range in.AddrVMACs {
		if ip, ip6 := av.Tables(g); ip || ip6 {
			return true
		}
	}
	return false
}
