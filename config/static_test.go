package config

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestRuleLines reads rule lines as keepalived 2.2.7's alloc_rule reads
// them: the lines it skips, with what it says (its messages, from
// keepalived -t on the same lines, are in the comments), and the
// preferences it gives rules without one.
func TestRuleLines(t *testing.T) {
	tests := []struct {
		line string
		want string // "" when refused; else family, priority, action
		diag string // a substring of the one diagnostic, "" for none
	}{
		{"from 10.0.0.0/8 table 100 priority 10", "inet 10 table", ""},
		// No action specified for rule - ignoring
		{"from 10.0.0.0/8", "", "no action"},
		// Invalid rule - goto target 100 specified without preference
		{"goto 100", "", "without preference"},
		// Invalid rule - preference 200 >= goto target 100
		{"priority 200 goto 100", "", "not below goto target"},
		// rule specification has mixed IPv4 and IPv6
		{"from 10.0.0.1 to 2001:db8::1 table 1", "", "mixes IPv4 and IPv6"},
		// Table 0 is not valid
		{"table 0", "", "table 0"},
		// Cannot specify more than one of table/nop/goto/...
		{"table 1 nop", "", "more than one"},
		// suppressor/realm specified for non table action - skipping
		{"realms 1 nop", "", "need a table action"},
		// Invalid rule action 1: inet6 steps over "realms"
		{"inet6 realms 1 table 1", "", `"realms" after inet6 is skipped`},
		// Unknown rule option 2001:db8::/64: inet6 steps over "from"
		{"inet6 from 2001:db8::/64 table 1 priority 5", "", `"from" after inet6 is skipped`},
		{"inet6 x table 1 priority 8", "inet6 8 table", `"x" after inet6 is skipped`},
		// realms is only valid for IPv4
		{"from 2001:db8::/64 table 1 realms 1 priority 9", "", "only valid for IPv4"},
		{"from all to default table 1 priority 10", "inet 10 table", ""},
		{"from default6 table 1 priority 11", "inet6 11 table", ""},
		// Rule cannot be tracked if protocol is not RTPROT_KEEPALIVED(18)
		{"table 1 protocol 5 priority 20", "inet 20 table", "protocol is keepalived's"},
		{"table 1 protocol 5 priority 20 no_track", "inet 20 table", ""},
		// Invalid rule action unicast
		{"unicast priority 21", "", "invalid rule action unicast"},
		// Unknown rule option flurb
		{"table 1 flurb", "", `unknown rule option "flurb"`},
		// Invalid rule fwmark 0x10/-1 specified
		{"fwmark 0x10/-1 table 1 priority 22", "", "invalid rule fwmark"},
		// invalid sport range 5-x: reported, the rule kept without it
		{"sport 5-x table 1 priority 23", "inet 23 table", "invalid sport range"},
		{"type prohibit priority 24", "inet 24 prohibit", ""},
		{"lookup main priority 25", "inet 25 table", ""},
		// Every action keeps its word (config.RuleAction).
		{"priority 5 goto 100", "inet 5 goto", ""},
		{"nop priority 26", "inet 26 nop", ""},
		{"blackhole priority 27", "inet 27 blackhole", ""},
		{"type unreachable priority 28", "inet 28 unreachable", ""},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			cfg, diags := Parse("/k.conf", "static_rules {\n "+tt.line+"\n}\n", nil, Options{Hostname: "h"})
			got := ""
			if len(cfg.StaticRules) == 1 {
				r := cfg.StaticRules[0]
				got = strings.Join([]string{r.Family.String(), strconv.Itoa(int(r.Priority)), r.Action.String()}, " ")
			}
			if got != tt.want {
				t.Errorf("rule: got %q, want %q\n%s", got, tt.want, diags)
			}
			var msgs []string
			for _, d := range diags {
				msgs = append(msgs, d.String())
			}
			switch {
			case tt.diag == "" && len(msgs) > 0:
				t.Errorf("diagnostics: got %q, want none", msgs)
			case tt.diag != "" && (len(msgs) == 0 || !strings.Contains(msgs[0], tt.diag)):
				t.Errorf("diagnostics: got %q, want the first with %q", msgs, tt.diag)
			case len(msgs) > 1 && !strings.Contains(msgs[0], "after inet"):
				t.Errorf("diagnostics: got %q, want one", msgs)
			}
			if diags.HasErrors() {
				t.Errorf("errors: a refused rule is skipped, as keepalived runs on:\n%s", diags)
			}
		})
	}
}

// TestRulePrioritiesCount keeps keepalived's one count per family across
// static_rules and every instance's virtual_rules, in the file's order.
func TestRulePrioritiesCount(t *testing.T) {
	conf := "static_rules {\n from 10.0.0.1 table 1\n from 2001:db8::1 table 1\n}\n" +
		vi(" virtual_rules {\n  to 10.0.0.2 table 2\n  to 10.0.0.3 table 2 priority 7\n  to 2001:db8::2 table 2\n }") +
		"static_rules {\n fwmark 1 blackhole\n}\n"
	cfg := mustParse(t, conf, Options{Hostname: "h"})
	var got []uint32
	for _, r := range cfg.StaticRules {
		got = append(got, r.Priority)
	}
	for _, r := range cfg.Instances[0].Rules {
		got = append(got, r.Priority)
	}
	want := []uint32{16384, 16384, 16382, 16383, 7, 16383}
	if !slices.Equal(got, want) {
		t.Errorf("priorities: got %v, want %v", got, want)
	}
}

// TestStaticAddressDefaultInterface puts a static address without dev on
// default_interface, eth0 when none is given, as keepalived's
// get_default_if.
func TestStaticAddressDefaultInterface(t *testing.T) {
	for _, tt := range []struct{ global, want string }{
		{"", "eth0"},
		{"global_defs {\n default_interface bond0\n}\n", "bond0"},
	} {
		cfg, diags := Parse("/k.conf", tt.global+"static_ipaddress {\n 192.0.2.1/24\n 192.0.2.2/24 dev eth5\n}\n", nil, Options{Hostname: "h"})
		if diags.HasErrors() || len(cfg.StaticAddresses) != 2 {
			t.Fatalf("%v %s", cfg.StaticAddresses, diags)
		}
		if a := cfg.StaticAddresses; a[0].Dev != tt.want || a[1].Dev != "eth5" {
			t.Errorf("%q: devs %q %q, want %q eth5", tt.global, a[0].Dev, a[1].Dev, tt.want)
		}
		if p := cfg.StaticAddresses[0].Prefix; p != netip.MustParsePrefix("192.0.2.1/24") {
			t.Errorf("prefix %s", p)
		}
	}
	_, diags := Parse("/k.conf", "static_ipaddress {\n 192.0.2.1/24 use_vmac\n}\n", nil, Options{Hostname: "h"})
	if !diags.HasErrors() {
		t.Errorf("use_vmac on a static address: no error")
	}
}

// TestMaxAutoPriority reads max_auto_priority and min_auto_priority_delay
// as keepalived's global_parser: no value is the highest SCHED_RR
// priority, -1 is off, out of range is ignored with keepalived's message.
func TestMaxAutoPriority(t *testing.T) {
	for _, tt := range []struct {
		lines    string
		max      int
		delay    time.Duration
		warnings int
	}{
		{"", 0, 0, 0},
		{"max_auto_priority", 99, time.Second, 0},
		{"max_auto_priority 5\n min_auto_priority_delay 250000", 5, 250 * time.Millisecond, 0},
		{"max_auto_priority -1", 0, 0, 0},
		{"max_auto_priority 200\n min_auto_priority_delay 0", 0, 0, 2},
	} {
		cfg, diags := Parse("/k.conf", "global_defs {\n "+tt.lines+"\n}\n", nil, Options{Hostname: "h"})
		if diags.HasErrors() || len(diags) != tt.warnings {
			t.Errorf("%q: diagnostics %s, want %d warnings", tt.lines, diags, tt.warnings)
		}
		if g := cfg.Global; g.MaxAutoPriority != tt.max || g.MinAutoPriorityDelay != tt.delay {
			t.Errorf("%q: %d %v, want %d %v", tt.lines, g.MaxAutoPriority, g.MinAutoPriorityDelay, tt.max, tt.delay)
		}
	}
}

// TestTableNames reads rule and route tables by their rt_tables names, as
// keepalived's find_rttables_table: the file's first line with the name,
// the kernel's own names unless the file names their number (here 253 is
// "mine": "default" is then no name, as in keepalived).
func TestTableNames(t *testing.T) {
	files := MapFS{rtTablesFile: "# comment\n100 vip\n101 vip\n253 mine\n  7\tseven # trailing\nbad line here\n"}
	conf := "static_rules {\n from 192.0.2.1 table vip priority 1\n from 192.0.2.2 lookup seven priority 2\n" +
		" from 192.0.2.3 table main priority 3\n from 192.0.2.4 table default priority 4\n from 192.0.2.5 table mine priority 5\n" +
		" from 192.0.2.6 table nosuch priority 6\n}\n" +
		"static_routes {\n 198.51.100.0/24 dev eth0 table vip\n}\n"
	cfg, diags := Parse("/k.conf", conf, files, Options{Hostname: "h"})
	var got []uint32
	for _, r := range cfg.StaticRules {
		got = append(got, r.Table)
	}
	if want := []uint32{100, 7, 254, 253}; !slices.Equal(got, want) {
		t.Errorf("tables %v, want %v", got, want)
	}
	if len(cfg.StaticRoutes) != 1 || cfg.StaticRoutes[0].Table != 100 {
		t.Errorf("route table: %v", cfg.StaticRoutes)
	}
	if len(diags) != 2 || !strings.Contains(diags[0].Message, `"default" not found`) || !strings.Contains(diags[1].Message, `"nosuch" not found`) {
		t.Errorf("diagnostics: %s", diags)
	}
}
