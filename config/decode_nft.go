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
// VIPs or has a macvlan for IPv6 (IPv6VMAC): nftables' name, else keepalived's "keepalived", which keepalived
// uses then without being told ("no firewall configured - using
// nftables"); "" when no instance needs one.
func (c *Config) NFTableName() string {
	if c.Global.NFTable != "" {
		return c.Global.NFTable
	}
	for _, in := range c.Instances {
		if in.DropsVIPs() || in.IPv6VMAC() {
			return "keepalived"
		}
	}
	return ""
}

// IPv6VMAC reports whether one of the instance's macvlans carries IPv6:
// its own (use_vmac) for an IPv6 instance or one with IPv6 excluded
// addresses, or one of its addresses' (use_vmac_addr). keepalived 2.2.7
// then keeps its own macvlan in its nftables table (nft_add_vmac), so
// that its MLD reports leave from the interface, not with the VMAC.
// directord keeps an address's macvlan (use_vmac_addr) there too, where
// keepalived does only when its table is in use already (an instance,
// this one or one before it, with use_vmac, without accept mode, or
// nftables in global_defs): a difference (Differences, use_vmac_addr).
func (in *Instance) IPv6VMAC() bool {
	if in.VMAC != nil {
		if in.Family == Inet6 {
			return true
		}
		for _, v := range in.ExcludedVIPs {
			if v.Prefix.Addr().Is6() {
				return true
			}
		}
	}
	for _, av := range in.AddrVMACs {
		if av.IPv6 {
			return true
		}
	}
	return false
}
