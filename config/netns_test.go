package config

import "testing"

// TestNetNamespaceKeywords: net_namespace and net_namespace_ipvs as
// keepalived 2.2.7's global_parser reads them (top-level keywords; inside
// global_defs keepalived does not know them).
func TestNetNamespaceKeywords(t *testing.T) {
	tests := []struct {
		name  string
		conf  string
		netns string
		ipvs  string // "-" for nil
		diags string
	}{
		{"none", "", "", "-", ""},
		{"named", "net_namespace lb\n", "lb", "-", ""},
		{"ipvs in another", "net_namespace lb\nnet_namespace_ipvs ipvs\n", "lb", "ipvs", ""},
		{"ipvs without a name: the host's", "net_namespace lb\nnet_namespace_ipvs\n", "lb", "", ""},
		{"second net_namespace ignored", "net_namespace lb\nnet_namespace other\n", "lb", "-",
			"/k.conf:2: warning: net_namespace: duplicate net_namespace other, ignored as keepalived does (lb is used, from /k.conf:1)"},
		{"second net_namespace_ipvs ignored", "net_namespace_ipvs a\nnet_namespace_ipvs b\n", "", "a",
			"/k.conf:2: warning: net_namespace_ipvs: duplicate net_namespace_ipvs definition, ignored as keepalived does (the one at /k.conf:1 is used)"},
		{"no name", "net_namespace\n", "", "-",
			"/k.conf:1: warning: net_namespace: net_namespace name missing, ignored as keepalived does"},
		{"a path is no name", "net_namespace ../../proc/1/ns/net\n", "", "-",
			"/k.conf:1: error: net_namespace: \"../../proc/1/ns/net\" is not a network namespace name (an entry of /run/netns, as ip netns names them)"},
		{"in global_defs: unknown, as keepalived", "global_defs {\n net_namespace lb\n}\n", "", "-",
			"/k.conf:2: warning: net_namespace: unknown keyword in global_defs, ignored as keepalived does; it belongs in the top level"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := parseDiags(t, tt.conf, tt.diags)
			ipvs := "-"
			if p := cfg.Global.NetNamespaceIPVS; p != nil {
				ipvs = *p
			}
			if cfg.Global.NetNamespace != tt.netns || ipvs != tt.ipvs {
				t.Errorf("net_namespace %q, net_namespace_ipvs %q; want %q, %q", cfg.Global.NetNamespace, ipvs, tt.netns, tt.ipvs)
			}
		})
	}
}
