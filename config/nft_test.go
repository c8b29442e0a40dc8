package config

import (
	"testing"
)

// TestStrictV2Accept: under vrrp_strict, keepalived 2.2.7's
// vrrp_complete_instance resets accept for a VRRPv2 non-owner ("does not
// comply with RFC3768 - resetting"): its VIPs are then dropped.
func TestStrictV2Accept(t *testing.T) {
	tests := []struct {
		name, conf string
		accept     bool
		diags      string
	}{
		{"v2 strict accept: reset", "global_defs {\n vrrp_strict\n}\n" + vi(" accept"), false,
			"/k.conf:7: warning: accept: VI_1: accept mode for VRRP version 2 does not comply with RFC 3768 under vrrp_strict: reset, as keepalived does (its VIPs are dropped while master)"},
		{"v3 strict accept: kept", "global_defs {\n vrrp_strict\n}\n" + vi(" accept\n version 3\n virtual_ipaddress {\n  10.0.0.1\n }"), true, ""},
		{"v2 strict owner", "global_defs {\n vrrp_strict\n}\n" + vi(" accept\n priority 255"), true, ""},
		{"v2 without strict", vi(" accept"), true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, _ := parseKeywordDiags(t, tt.conf, "accept", tt.diags)
			if in := cfg.Instances[0]; in.Accept != tt.accept || in.DropsVIPs() == tt.accept {
				t.Errorf("accept %v, drops %v; want accept %v", in.Accept, in.DropsVIPs(), tt.accept)
			}
		})
	}
}

// TestNFTablesKeywords: global_defs' nftables keywords as keepalived
// 2.2.7's global_parser reads them, and the table directord keeps.
func TestNFTablesKeywords(t *testing.T) {
	strict := vi(" priority 100\n virtual_ipaddress {\n  10.0.0.1\n }")
	tests := []struct {
		name, conf string
		table      string // Config.NFTableName
		prio       int32
		diags      string
	}{
		{"nothing asks for one", vi(""), "", -1, ""},
		{"vrrp_strict: keepalived's table unasked", "global_defs {\n vrrp_strict\n}\n" + strict, "keepalived", -1, ""},
		{"an IPv6 use_vmac: keepalived's table unasked", vi(" use_vmac\n virtual_ipaddress {\n  2001:db8::1\n }"), "keepalived", -1, ""},
		{"an IPv4 use_vmac: keepalived's table unasked", vi(" use_vmac\n virtual_ipaddress {\n  10.0.0.1\n }"), "keepalived", -1, ""},
		{"an IPv4 use_vmac under disable_local_igmp: none", "global_defs {\n disable_local_igmp\n}\n" +
			vi(" use_vmac\n virtual_ipaddress {\n  10.0.0.1\n }"), "", -1, ""},
		{"disable_local_igmp: none for the IPv6 excluded addresses either", "global_defs {\n disable_local_igmp\n}\n" +
			vi(" use_vmac\n virtual_ipaddress {\n  10.0.0.1\n }\n virtual_ipaddress_excluded {\n  2001:db8::1\n }"), "", -1, ""},
		{"an IPv6 use_vmac under disable_local_igmp: keepalived's", "global_defs {\n disable_local_igmp\n}\n" +
			vi(" use_vmac\n virtual_ipaddress {\n  2001:db8::1\n }"), "keepalived", -1, ""},
		{"use_vmac_addr for an IPv4 address", vi(" use_vmac_addr\n virtual_ipaddress {\n  10.0.0.1\n  10.1.0.1 dev eth1\n }"), "keepalived", -1, ""},
		{"use_vmac_addr for an IPv4 address under disable_local_igmp: none", "global_defs {\n disable_local_igmp\n}\n" +
			vi(" use_vmac_addr\n virtual_ipaddress {\n  10.0.0.1\n  10.1.0.1 dev eth1\n }"), "", -1, ""},
		{"use_vmac_addr for an IPv6 address", vi(" use_vmac_addr\n virtual_ipaddress {\n  10.0.0.1\n }\n virtual_ipaddress_excluded {\n  2001:db8::1\n }"), "keepalived", -1, ""},
		{"named, with priority", "global_defs {\n nftables lb\n nftables_priority -5\n}\n" + vi(""), "lb", -5, ""},
		{"nftables resets an earlier priority", "global_defs {\n nftables_priority -5\n nftables\n}\n" + vi(""), "keepalived", -1, ""},
		{"second nftables ignored", "global_defs {\n nftables a\n nftables b\n}\n" + vi(""), "a", -1,
			"/k.conf:3: warning: nftables: nftables already specified, ignored as keepalived does (table a)"},
		{"vrrp_iptables read as nftables", "global_defs {\n vrrp_iptables IN OUT\n}\n" + vi(""), "keepalived", -1,
			"/k.conf:2: warning: vrrp_iptables: iptables not supported, using nftables instead (table keepalived), as keepalived 2.2.7 built without iptables does: replace vrrp_iptables with nftables"},
		{"bad priority ignored", "global_defs {\n nftables_priority x\n}\n" + vi(""), "", -1,
			"/k.conf:2: warning: nftables_priority: invalid nftables chain priority \"x\", ignored as keepalived does"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := parseDiags(t, tt.conf, tt.diags)
			if got, prio := cfg.NFTableName(), cfg.Global.NFTPriorityOrDefault(); got != tt.table || prio != tt.prio {
				t.Errorf("table %q priority %d, want %q %d", got, prio, tt.table, tt.prio)
			}
		})
	}
}
