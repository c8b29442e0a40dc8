package config

import (
	"strings"
	"testing"
)

// TestDynamicInterfaces: dynamic_interfaces and its allow_if_changes as
// keepalived 2.2.7's dynamic_interfaces_handler reads them; another word
// is reported and ignored, the keyword still on.
func TestDynamicInterfaces(t *testing.T) {
	tests := []struct {
		name, line     string
		dynamic, allow bool
		diags          string
	}{
		{"absent", "", false, false, ""},
		{"alone", " dynamic_interfaces", true, false, ""},
		{"allow_if_changes", " dynamic_interfaces allow_if_changes", true, true, ""},
		{"unknown option", " dynamic_interfaces sometimes", true, false,
			`/k.conf:2: warning: dynamic_interfaces: unknown dynamic_interfaces option "sometimes", ignored as keepalived does`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, diags := Parse("/k.conf", "global_defs {\n"+tt.line+"\n}\n"+vi(""), nil, Options{})
			var got []string
			for _, d := range diags {
				if d.Keyword == "dynamic_interfaces" {
					got = append(got, d.String())
				}
			}
			if strings.Join(got, "\n") != tt.diags {
				t.Errorf("diagnostics:\n%s\nwant:\n%s", strings.Join(got, "\n"), tt.diags)
			}
			if g := cfg.Global; g.DynamicInterfaces != tt.dynamic || g.AllowIfChanges != tt.allow {
				t.Errorf("dynamic %v allow %v; want %v %v", g.DynamicInterfaces, g.AllowIfChanges, tt.dynamic, tt.allow)
			}
		})
	}
}

// TestDisableLocalIGMP: disable_local_igmp takes no argument; keepalived
// turns it on whatever follows.
func TestDisableLocalIGMP(t *testing.T) {
	for _, tt := range []struct {
		name, line string
		on         bool
		diags      string
	}{
		{"absent", "", false, ""},
		{"alone", " disable_local_igmp", true, ""},
		{"with a word", " disable_local_igmp off", true,
			`/k.conf:2: warning: disable_local_igmp: takes no argument: "off" ignored, the keyword on, as keepalived does`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, diags := Parse("/k.conf", "global_defs {\n"+tt.line+"\n}\n"+vi(""), nil, Options{})
			var got []string
			for _, d := range diags {
				if d.Keyword == "disable_local_igmp" {
					got = append(got, d.String())
				}
			}
			if strings.Join(got, "\n") != tt.diags {
				t.Errorf("diagnostics:\n%s\nwant:\n%s", strings.Join(got, "\n"), tt.diags)
			}
			if cfg.Global.DisableLocalIGMP != tt.on {
				t.Errorf("DisableLocalIGMP %v, want %v", cfg.Global.DisableLocalIGMP, tt.on)
			}
		})
	}
}
