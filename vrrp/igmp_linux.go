package vrrp

import "github.com/directord/directord/config"

// igmpLinkLocal is the sysctl that makes the kernel report the link-local
// groups (224.0.0.0/24) it joins: VRRP's 224.0.0.18 on every interface an
// instance listens on, its macvlan included.
const igmpLinkLocal = "/proc/sys/net/ipv4/igmp_link_local_mcast_reports"

// disableLocalIGMP is keepalived 2.2.7's set_disable_local_igmp, for
// disable_local_igmp: while the Node runs, no IGMP report leaves for a
// link-local group, so a switch does not learn a macvlan's virtual MAC
// from them (keepalived offers it as the alternative to its nftables
// rules for IGMP from VMACs). The value it had comes back when the Node
// ends (keepalived's reset_disable_local_igmp); a reload hands it over.
func (n *Node) disableLocalIGMP(g *config.Global) {
	if g.DisableLocalIGMP {
		n.setSysctl(igmpLinkLocal, "0")
	}
}
