// Package nft keeps keepalived 2.2.7's nftables table for VRRP instances
// that are not in accept mode: the virtual addresses of such an instance,
// while it is master, are in a set that the table's input chain drops
// traffic to and its output chain traffic from, as RFC 5798 wants of a
// non-owner master without accept mode (vrrp_strict, no_accept).
//
// The table is keepalived's, byte for byte in what nft shows (see
// docs/vrrp.md, "Firewall rules"):
//
//	table ip keepalived {
//		set vips { type ipv4_addr }
//		chain in { type filter hook input priority -1; policy accept; ip daddr @vips drop }
//		chain out { type filter hook output priority -1; policy accept; ip saddr @vips drop }
//	}
//
// and for IPv6 VIPs table ip6 of the same name, whose chains first
// accept neighbour solicitations and advertisements (set
// neighbor-discovery) and send link-local traffic to the chains
// in_link_local and out_link_local. A counter goes before each verdict
// under nftables_counters; global_defs' nftables and nftables_priority
// give the name and priority. Link-local VIPs are not filtered
// (keepalived's per-interface sets vips_link_local are not built).
//
// For use_vmac's macvlans (Table.VMAC) the same tables hold keepalived's
// map vmac_map (macvlan to interface, by index) and out-chain rules that
// send the IGMP (table ip) or MLD (table ip6) reports leaving a macvlan
// out of its interface instead, dropping the macvlan's copy; table ip6
// also drops its router solicitations (set vmac_set).
//
// # Network namespaces
//
// The table lives in the namespace of the process that opens it: the one
// directord runs in (net_namespace), as keepalived's.
package nft
