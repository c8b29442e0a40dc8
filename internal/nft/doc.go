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
// with a counter before each drop under nftables_counters, and the name
// and priority of global_defs' nftables and nftables_priority. IPv6
// virtual addresses are not filtered yet (keepalived's ip6 table, with
// its neighbour discovery and link-local exemptions, is not built).
//
// # Network namespaces
//
// The table lives in the namespace of the process that opens it: the one
// directord runs in (net_namespace), as keepalived's.
package nft
