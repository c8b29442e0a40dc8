package config

import (
	"strings"
	"testing"
)

// TestMaglevWithoutFallbackWarns: a virtual server of lvs_sched mh
// without mh-fallback (or flag-1, its other name) gets one warning, at
// its scheduler's line, saying what its real servers' failures and
// drains do to new flows; with the flag, with another scheduler or
// without real servers, none. It is directord's advice: the file runs as
// keepalived runs it, so it is a plain warning, not lenient (--strict
// does not refuse it).
func TestMaglevWithoutFallbackWarns(t *testing.T) {
	const checked = "/k.conf:3: warning: lvs_sched: mh without mh-fallback: a real server that fails its checks is removed, and the Maglev table rebuilt without it moves some new flows of the other real servers too; one at weight 0 (drained by directorctl drain, or failed with inhibit_on_failure) keeps its slots in the table, and the kernel refuses the new connections that hash to them (ICMP port unreachable); add mh-fallback, and directord holds a failed or drained real server at weight 0 while the kernel sends its new flows on to the next server (docs/ipvs.md, Maglev services)"
	const unchecked = "/k.conf:3: warning: lvs_sched: mh without mh-fallback: a real server at weight 0 (drained by directorctl drain, or so in the file) keeps its slots in the Maglev table, and the kernel refuses the new connections that hash to them (ICMP port unreachable); add mh-fallback, and directord holds a failed or drained real server at weight 0 while the kernel sends its new flows on to the next server (docs/ipvs.md, Maglev services)"
	check := "        TCP_CHECK {\n            connect_timeout 2\n        }\n"
	for _, tt := range []struct {
		name, sched, flags, check, want string
	}{
		{"checked", "lvs_sched mh", "mh-port\n", check, checked},
		{"inhibit_on_failure", "lvs_sched mh", "", check + "        inhibit_on_failure\n", checked},
		{"unchecked", "lvs_sched mh", "mh-port\n", "", unchecked},
		{"lb_algo", "lb_algo mh", "", check, strings.Replace(checked, "lvs_sched:", "lb_algo:", 1)},
		{"mh-fallback", "lvs_sched mh", "mh-port\n    mh-fallback\n", check, ""},
		{"flag-1", "lvs_sched mh", "flag-1\n", check, ""},
		{"rr", "lvs_sched rr", "", check, ""},
		{"sh without sh-fallback", "lvs_sched sh", "sh-port\n", check, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			conf := "virtual_server 192.0.2.1 443 {\n" +
				"    protocol TCP\n" +
				"    " + tt.sched + "\n" +
				"    lb_kind DR\n" +
				"    " + tt.flags +
				"    real_server 10.0.0.1 443 {\n" + tt.check + "    }\n" +
				"}\n"
			parseDiags(t, conf, tt.want)
			// Not a fault keepalived runs past: --strict keeps it a warning.
			_, diags := Parse("/k.conf", conf, nil, Options{Strict: true})
			if diags.HasErrors() {
				t.Errorf("with --strict: %s", diags)
			}
		})
	}
	t.Run("no real server", func(t *testing.T) {
		parseDiags(t, "virtual_server 192.0.2.1 443 {\n    protocol TCP\n    lvs_sched mh\n}\n", "")
	})
}
