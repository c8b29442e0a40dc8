package vrrp

import (
	"fmt"

	"github.com/directord/directord/config"
)

// staticSet is the static entries of a configuration (static_ipaddress,
// static_routes, static_rules).
type staticSet struct {
	addrs  []config.VIP
	routes []config.Route
	rules  []config.Rule
}

// staticPlan is what a reload of the static entries from one set to the
// next removes, in that order: rules first, then routes, then
// addresses; what both sets have stays in the kernel untouched, a route
// that only moved (another line) changes its key.
type staticPlan struct {
	removeRules []config.Rule
	routes      []staticRoute // each of the old set's routes
	removeAddrs []config.VIP
}

// staticRoute is an old route kept under the new one's key (moved) or
// removed.
type staticRoute struct {
	old, cur config.Route
	moved    bool
}

// planStatics compares the static entries of cur, held, with those of
// next; addAll then adds next's (those already there are left alone).
func planStatics(cur, next staticSet) staticPlan {
	var p staticPlan
	keep := map[string]bool{}
	for _, r := range next.rules {
		keep[ruleKey(r)] = true
	}
	for _, r := range cur.rules {
		if !keep[ruleKey(r)] {
			p.removeRules = append(p.removeRules, r)
		}
	}
	for _, old := range cur.routes {
		sr := staticRoute{old: old}
		for _, r := range next.routes {
			if config.Canonical(old) == config.Canonical(r) {
				sr.cur, sr.moved = r, true
				break
			}
		}
		p.routes = append(p.routes, sr)
	}
	keep = map[string]bool{}
	for _, v := range next.addrs {
		keep[config.Canonical(v)] = true
	}
	for _, v := range cur.addrs {
		if !keep[config.Canonical(v)] {
			p.removeAddrs = append(p.removeAddrs, v)
		}
	}
	return p
}

// ruleKey names a rule by what makes it itself: its line, canonical.
func ruleKey(cr config.Rule) string {
	cr.Pos, cr.PriorityAuto = config.Pos{}, false
	return config.Canonical(cr)
}

// routeKey names a route by its destination, table and line.
func routeKey(cr config.Route) string { return fmt.Sprintf("%s %d %s", cr.Dst, cr.Table, cr.Pos) }
