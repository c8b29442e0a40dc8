package vrrp

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPlanStatics checks what a reload of the static entries removes and
// keeps (TestStaticEntriesReload sees it as root, beside keepalived).
func TestPlanStatics(t *testing.T) {
	set := func(text string) staticSet {
		cfg := planConf(t, text)
		return staticSet{addrs: cfg.StaticAddresses, routes: cfg.StaticRoutes, rules: cfg.StaticRules}
	}
	cur := set("static_ipaddress {\n 192.0.2.10/24 dev eth0\n 192.0.2.11/32 dev eth0\n}\n" +
		"static_routes {\n 198.51.100.0/24 via 192.0.2.254 dev eth0\n blackhole 203.0.113.0/24\n}\n" +
		"static_rules {\n from 192.0.2.10 table 100 priority 100\n to 198.51.100.0/24 lookup 100 priority 101\n}\n")
	// Lines moved, one of each kind dropped, one rule's priority changed.
	next := set("\n\nstatic_rules {\n to 198.51.100.0/24 lookup 100 priority 102\n from 192.0.2.10 table 100 priority 100\n}\n" +
		"static_routes {\n blackhole 203.0.113.0/24\n}\n" +
		"static_ipaddress {\n 192.0.2.11/32 dev eth0\n}\n")
	p := planStatics(cur, next)
	var rules, routes, addrs []string
	for _, r := range p.removeRules {
		rules = append(rules, ruleString(r))
	}
	for _, r := range p.routes {
		s := "remove " + r.old.Dst.String()
		if r.moved {
			s = "move " + r.old.Dst.String() + " line " + itoa(r.old.Pos.Line) + ">" + itoa(r.cur.Pos.Line)
		}
		routes = append(routes, s)
	}
	for _, v := range p.removeAddrs {
		addrs = append(addrs, v.Prefix.String())
	}
	if d := cmp.Diff([]string{"101: from all to 198.51.100.0/24 table"}, rules); d != "" {
		t.Errorf("rules removed (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"remove 198.51.100.0/24", "move 203.0.113.0/24 line 7>8"}, routes); d != "" {
		t.Errorf("routes (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"192.0.2.10/24"}, addrs); d != "" {
		t.Errorf("addresses removed (-want +got):\n%s", d)
	}
	if p := planStatics(cur, cur); len(p.removeRules)+len(p.removeAddrs) != 0 {
		t.Errorf("the same set: removes %+v", p)
	}
}
