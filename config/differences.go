package config

import "strings"

// Differences are the keywords directord reads but runs differently from
// keepalived 2.2.7, by block (as docs/keywords.md names blocks), with what
// differs. The language-wide differences are in docs/configuration.md.
// DifferenceApplies narrows an entry of Differences to the uses it
// speaks of; an entry without one applies to every use of its keyword. A
// file that uses the keyword otherwise runs as keepalived runs it, and
// `-t` does not list that use. never marks a difference that only an
// error or a warning of its own can show (the file then says so there).
var DifferenceApplies = map[string]map[string]func(block, c *Node) bool{
	"authentication": {"auth_type": wordIs("AH")},
	"virtual_server": {
		"real_server":  never, // a duplicate is an error
		"lvs_sched":    wordIs("mh"),
		"lb_algo":      wordIs("mh"),
		"sorry_server": func(_, c *Node) bool { return len(c.Args) > 2 }, // words after the port
		"flag-1":       schedulerIsMH,                                    // mh-fallback's flag, by its other name
	},
	"HTTP_GET/SSL_GET": {"url": never},         // a checker without url is an error
	"vrrp_instance":    {"unicast_ttl": never}, // 0 over IPv4 without AH is an error
	"vrrp_sync_group":  {"group": never},       // members without group { }: a warning
}

func never(_, _ *Node) bool { return false }

// schedulerIsMH applies in a virtual server whose scheduler is mh.
func schedulerIsMH(block, _ *Node) bool {
	for _, c := range block.Children {
		if (c.Keyword == "lvs_sched" || c.Keyword == "lb_algo") && len(c.Args) > 0 && c.Args[0] == "mh" {
			return true
		}
	}
	return false
}

// wordIs applies to uses whose first word is v, in any case.
func wordIs(v string) func(_, c *Node) bool {
	return func(_, c *Node) bool { return len(c.Args) > 0 && strings.EqualFold(c.Args[0], v) }
}

var Differences = map[string]map[string]string{
	"virtual_server": {
		"lvs_sched":    "mh: the destinations are kept in an order of their addresses (the highest first), re-added on adoption and at each resync when the kernel's order differs, so that every director builds the same Maglev table; keepalived adds them in the configuration's order and leaves the kernel's order as it finds it (docs/ipvs.md, Maglev services)",
		"lb_algo":      "mh: the destinations are kept in an order of their addresses (the highest first), re-added on adoption and at each resync when the kernel's order differs, so that every director builds the same Maglev table; keepalived adds them in the configuration's order and leaves the kernel's order as it finds it (docs/ipvs.md, Maglev services)",
		"flag-1":       "with lvs_sched mh, flag-1 is mh-fallback: a real server that fails, is drained or is replaced by the sorry server stays at weight 0, as with inhibit_on_failure, so that the Maglev table does not move; keepalived removes it unless inhibit_on_failure (docs/ipvs.md, Maglev services)",
		"mh-fallback":  "a real server that fails, is drained or is replaced by the sorry server stays at weight 0, as with inhibit_on_failure, so that the Maglev table does not move; keepalived removes it unless inhibit_on_failure (docs/ipvs.md, Maglev services)",
		"sorry_server": "the words after the port (lvs_method ...) are read as the sorry server's method; keepalived ignores them",
		"real_server":  "a real server listed twice in a virtual server is an error; keepalived drops it with a warning",
		"ha_suspend":   "on a virtual_server group, the checks run while any address of the group's ranges is on this host; keepalived 2.2.7's addr_matches does not match a group, so its checks there stay suspended",
	},
	"HTTP_GET/SSL_GET": {
		"url":           "a checker without url is an error; keepalived drops the checker silently, so the real server is never checked",
		"fast_recovery": "read, no effect: every URL is fetched at each probe",
	},
	"global_defs": {
		"dynamic_interfaces": "an interface that comes back as another kind (a macvlan where there was none or the other way round, or a macvlan on another parent) keeps its instances in FAULT without allow_if_changes, also while running; keepalived 2.2.7 refuses it only at start and reload, and uses it while running (netlink_link_filter clears what it knew of the interface first). An interface deleted and made again while link updates were lost (ENOBUFS) is found by its new index and its instances go through FAULT, their VIPs added to the new one; keepalived reads nothing afresh and keeps its socket on the old interface. A use_vmac_addr macvlan whose interface is missing at start is made when the interface appears, where keepalived leaves the instance in FAULT until a reload. The interfaces of static entries and virtual rules must still exist at start (docs/vrrp.md)",
		"disable_local_igmp": "a reload that adds or removes it is applied; keepalived refuses such a reload",
	},
	"vrrp_instance": {
		"use_vmac":            "a macvlan renamed while running (ip link set vrrp.51 name ...) keeps the instance in FAULT while the renamed link is up with the VMAC, then is made again; keepalived 2.2.7 makes one that cannot come up and runs the instance on it as if it were up, until restarted; nft list shows the vmac_map values of table ip and ip6 keepalived as numbers (the interface index in host byte order, read as big-endian: index 3 lists as 50331648) where keepalived's list the interface's name, and an IPv6 instance's table ip before its table ip6: the Go nftables package writes no data byte order for nft, and the kernel reads both alike (docs/vrrp.md)",
		"use_vmac_addr":       "its macvlans' names skip the interface names of the file only, not every interface of the host; a macvlan deleted, or on an interface missing at start (dynamic_interfaces) or made again, is made when the interface is there, where keepalived 2.2.7 makes an address's macvlan only at start and reload and leaves the instance in FAULT; a macvlan always gets its family's table (table ip6 keepalived for an IPv6 address: its MLD reports sent out of its interface, its router solicitations dropped; table ip keepalived for an IPv4 one, unless disable_local_igmp: its IGMP reports sent out of its interface), where keepalived makes that table only when its nftables table is in use already, by this instance or one before it in the file with use_vmac, without accept mode (no_accept, vrrp_strict) or by nftables in global_defs, and otherwise sends the macvlan's IGMP or MLD reports from the VMAC (docs/vrrp.md)",
		"no_accept":           "a master drops traffic to and from its VIPs through keepalived's nftables tables, as keepalived; its IPv6 link-local VIPs are not filtered (keepalived's per-interface sets are not built); the same for vrrp_strict's instances, without accept mode by default",
		"track_src_ip":        "read, no effect, as in keepalived 2.2.7: there, removing the configured unicast_src_ip from the interface (its only address, or a secondary one) leaves the instance in its state with or without the keyword, and one missing at start keeps it in FAULT with or without it, as in directord (checked in namespaces)",
		"virtual_ipaddress":   "an address already on the interface when directord adds it is left alone: not claimed, and not removed on leaving MASTER or at shutdown; keepalived removes every VIP of its instances at start (vrrp_restore_interfaces_startup, so a VIP left by a killed keepalived goes) and all of an instance's VIPs on leaving MASTER, whoever added them. directord also sets promote_secondaries on every interface that takes IPv4 VIPs, where keepalived sets it only for instances that say promote_secondaries, and sets it again on such an interface made again, where keepalived sets it once, at start",
		"promote_secondaries": "set again on the interface when it is made again (deleted and created: a new index), the new interface's own value restored at the stop; keepalived 2.2.7 sets it once, at start, and leaves an interface made again as it comes (docs/vrrp.md)",
		"unicast_ttl":         "0 is refused over IPv4 without AH: the kernel does not send TTL 0 from directord's socket, where keepalived writes it in its own IPv4 header",
	},
	"url": {
		"regex":         "Go's syntax (RE2): no backreferences, lookahead or lookbehind (an error for -t); \\d, \\w, \\s are ASCII; matched against the whole answer (up to 16 MiB) at once, where keepalived matches it 4 KB at a time",
		"regex_options": "extended, ucp, allow_empty_class, alt_bsux, alt_circumflex and alt_verbnames are errors: Go's syntax has no such modes",
		"regex_stack":   "read, no effect: Go's regular expressions need no stack",
	},
	"authentication": {
		"auth_type": "AH: an instance hears only AH packets, so a plain advert of its VRID is not counted (keepalived counts it as an authentication type mismatch); a master that takes a lower priority advert sends that advert's sequence number plus 1 next, keepalived plus 2 (both are accepted)",
	},
	"vrrp_sync_group": {
		"group": "members named without group { } are read as members, with a warning; keepalived reports an unknown keyword",
	},
}
