package config

// Differences are the keywords directord reads but runs differently from
// keepalived 2.2.7, by block (as docs/keywords.md names blocks), with what
// differs. The language-wide differences are in docs/configuration.md.
// DifferingValues narrows an entry of Differences to one value of the
// keyword (its first word, in any case): a file that uses the keyword
// with another value runs as keepalived runs it.
var DifferingValues = map[string]map[string]string{
	"authentication": {"auth_type": "AH"},
}

var Differences = map[string]map[string]string{
	"virtual_server": {
		"sorry_server": "the words after the port (lvs_method ...) are read as the sorry server's method; keepalived ignores them",
		"real_server":  "a real server listed twice in a virtual server is an error; keepalived drops it with a warning",
		"ha_suspend":   "on a virtual_server group, the checks run while any address of the group's ranges is on this host; keepalived 2.2.7's addr_matches does not match a group, so its checks there stay suspended",
	},
	"HTTP_GET/SSL_GET": {
		"url":           "a checker without url is an error; keepalived drops the checker silently, so the real server is never checked",
		"fast_recovery": "read, no effect: every URL is fetched at each probe",
	},
	"vrrp_instance": {
		"no_accept":         "read, no effect: keepalived carries no_accept out only through nftables or iptables rules that drop traffic to a non-owner's VIPs; directord writes no firewall rules, so the VIPs take traffic as with accept (vrrp_strict's no_accept likewise)",
		"accept":            "the default either way: directord drops no traffic to the VIPs (see no_accept)",
		"track_src_ip":      "read, no effect, as in keepalived 2.2.7: there, removing the configured unicast_src_ip from the interface (its only address, or a secondary one) leaves the instance in its state with or without the keyword, and one missing at start keeps it in FAULT with or without it, as in directord (checked in namespaces)",
		"virtual_ipaddress": "an address already on the interface when directord adds it is left alone: not claimed, and not removed on leaving MASTER or at shutdown; keepalived removes every VIP of its instances at start (vrrp_restore_interfaces_startup, so a VIP left by a killed keepalived goes) and all of an instance's VIPs on leaving MASTER, whoever added them. directord also sets promote_secondaries on every interface that takes IPv4 VIPs, where keepalived sets it only for instances that say promote_secondaries",
		"unicast_ttl":       "0 is refused over IPv4 without AH: the kernel does not send TTL 0 from directord's socket, where keepalived writes it in its own IPv4 header",
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
