package vrrp

import (
	"net/netip"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/directord/directord/config"
)

// What an instance does on a transition, and what a reload hands over
// from an instance to its successor, as plans without sockets:
// node_linux.go carries them out on netlink and the Node's instances.

// step is one thing an instance does in a transition.
type step uint8

const (
	stepRecord       step = iota // count it, note when, log it, store the new state
	stepObserve                  // tell Observe's function
	stepFollow                   // the rest of its sync group follows (syncMember.follow)
	stepAHMaster                 // a new master's AH sequence (AHState.BecomeMaster)
	stepExtraIfDue               // garp_extra_if: the first extra burst is a period away
	stepFirewallOn               // drop the VIPs' traffic (no accept mode)
	stepFirewallOff              // stop dropping it
	stepAddrsAdd                 // the virtual addresses, excluded ones too
	stepAddrsRemove              //
	stepRoutesAdd                // virtual_routes
	stepRoutesRemove             //
	stepRulesAdd                 // virtual_rules
	stepRulesRemove              //
	stepBequeath                 // a new testament: the masters' addresses changed
	stepGroupNotify              // the sync group's notify, once all its members are there
	stepNotify                   // the instance's notify scripts, FIFO and alerts
)

var stepNames = [...]string{
	stepRecord: "record", stepObserve: "observe", stepFollow: "follow", stepAHMaster: "ah-master",
	stepExtraIfDue: "extra-if-due", stepFirewallOn: "firewall-on", stepFirewallOff: "firewall-off",
	stepAddrsAdd: "addrs-add", stepAddrsRemove: "addrs-remove", stepRoutesAdd: "routes-add",
	stepRoutesRemove: "routes-remove", stepRulesAdd: "rules-add", stepRulesRemove: "rules-remove",
	stepBequeath: "bequeath", stepGroupNotify: "group-notify", stepNotify: "notify",
}

func (s step) String() string {
	if int(s) < len(stepNames) {
		return stepNames[s]
	}
	return "step(" + strconv.Itoa(int(s)) + ")"
}

// transitionTraits are what of an instance's configuration changes its
// transitions' plan.
type transitionTraits struct {
	sync    bool // it is in a sync group
	ah      bool // auth_type AH
	extraIf bool // garp_extra_if
}

func traitsOf(in *config.Instance, inSync, ah bool) transitionTraits {
	return transitionTraits{sync: inSync, ah: ah, extraIf: in.Garp.ExtraIf > 0}
}

// transitionPlan is what an instance with traits t does, in order, on
// its transition from to. A master holds the addresses, any other state
// none. Becoming master, the firewall's rule comes before the addresses
// and the addresses before the routes and rules that may use them as
// their source; leaving, rules and routes go first, then the addresses,
// then the rule, as keepalived's vrrp_state_become_master and
// vrrp_restore_interface order them. The notify scripts come last, the
// group's before the instance's, once the kernel holds the new state.
// The announcements (gratuitous ARP) are the machine's, not the plan's.
func transitionPlan(from, to State, t transitionTraits) []step {
	plan := []step{stepRecord, stepObserve}
	if t.sync {
		plan = append(plan, stepFollow)
	}
	if to == Master && t.ah {
		plan = append(plan, stepAHMaster)
	}
	if to == Master && t.extraIf {
		plan = append(plan, stepExtraIfDue)
	}
	switch {
	case to == Master:
		plan = append(plan, stepFirewallOn, stepAddrsAdd, stepRoutesAdd, stepRulesAdd, stepBequeath)
	case from == Master:
		plan = append(plan, stepRulesRemove, stepRoutesRemove, stepAddrsRemove, stepFirewallOff, stepBequeath)
	}
	return append(plan, stepGroupNotify, stepNotify)
}

// claims tells which kernel entries an old Node claimed (installed.has):
// those are taken over on a reload, the rest added.
type claims interface {
	hasAddr(dev string, p netip.Prefix) bool
	hasRoute(r config.Route) bool
	hasRule(r config.Rule) bool
}

// routeMove is a route taken over: the old instance's route old, now the
// new instance's cur (the same route, perhaps on another line).
type routeMove struct{ old, cur config.Route }

// handOver is what a master resumed by a reload does with its
// predecessor's kernel entries, in this order: the new settings'
// firewall rule on, the old's off (an address in both stays dropped
// throughout: the Firewall counts its users); then each address, route
// and rule the new configuration has is taken over where the old Node
// claimed it, else added. What only the old configuration has stays with
// the old Node, which removes it when it stops.
type handOver struct {
	takeAddrs, addAddrs []devAddr
	takeRoutes          []routeMove
	addRoutes           []config.Route
	takeRules, addRules []config.Rule
	announce            bool // addresses were added: the new master announces them
}

// planHandOver plans the hand-over from old to cur, old's Node having
// claimed what held reports. An entry is taken once: a second entry of
// cur with the same key is added (the kernel has it: it is not claimed
// again).
func planHandOver(old, cur *config.Instance, held claims) handOver {
	var h handOver
	taken := map[addrKey]bool{}
	for _, a := range instanceAddrs(cur) {
		k := addrKey{a.Dev, a.VIP.Prefix}
		if !taken[k] && held.hasAddr(a.Dev, a.VIP.Prefix) {
			taken[k] = true
			h.takeAddrs = append(h.takeAddrs, a)
			continue
		}
		h.addAddrs = append(h.addAddrs, a)
	}
	h.announce = len(h.addAddrs) > 0
	movedRoute := map[string]bool{}
	for _, r := range cur.Routes {
		moved := false
		for _, or := range old.Routes {
			if k := routeKey(or); !movedRoute[k] && config.Canonical(or) == config.Canonical(r) && held.hasRoute(or) {
				movedRoute[k] = true
				h.takeRoutes = append(h.takeRoutes, routeMove{old: or, cur: r})
				moved = true
				break
			}
		}
		if !moved {
			h.addRoutes = append(h.addRoutes, r)
		}
	}
	takenRule := map[string]bool{}
	for _, r := range cur.Rules {
		if k := ruleKey(r); !takenRule[k] && held.hasRule(r) {
			takenRule[k] = true
			h.takeRules = append(h.takeRules, r)
			continue
		}
		h.addRules = append(h.addRules, r)
	}
	return h
}

// settle is what a hand-over adds of one kind of entry: add, as planned,
// then each entry of take that the Node could not take after all (took
// false: the old Node no longer claims it), as the new instance has it
// (cur). It calls took on every entry of take, in order.
func settle[T, A any](take []T, add []A, took func(T) bool, cur func(T) A) []A {
	out := slices.Clip(add)
	for _, t := range take {
		if !took(t) {
			out = append(out, cur(t))
		}
	}
	return out
}

// itself is settle's cur for entries taken as they are.
func itself[T any](t T) T { return t }

// resumption pairs an old Node's instance with the new Node's that
// resumes it (indexes in each Node's list).
type resumption struct {
	old, cur int
	plan     InstancePlan
}

// adoption is what a reload's plan (PlanReload's) means for the two
// Nodes' instances: which of the old Node's are deleted (notify DELETED
// or FAULT at their stop), which resume in the new Node; an instance
// Added starts afresh.
type adoption struct {
	deleted []int // the old Node's
	resume  []resumption
}

// planAdoption maps plan onto the instances named olds (the old Node's,
// in order) and curs (the new Node's). A plan entry naming an instance
// a Node does not have is passed over.
func planAdoption(olds, curs []string, plan []InstancePlan) adoption {
	index := func(list []string, name string) int {
		for i, n := range list {
			if n == name {
				return i
			}
		}
		return -1
	}
	var a adoption
	for _, p := range plan {
		switch p.Change {
		case Removed:
			if i := index(olds, p.Old); i >= 0 {
				a.deleted = append(a.deleted, i)
			}
			continue
		case Added:
			continue
		}
		oi, ni := index(olds, p.Old), index(curs, p.New)
		if oi < 0 || ni < 0 {
			continue
		}
		a.resume = append(a.resume, resumption{old: oi, cur: ni, plan: p})
	}
	return a
}

// counters are an instance's figures for status and metrics that a
// reload carries to its successor.
type counters struct {
	sent        atomic.Uint64
	received    atomic.Uint64
	transitions atomic.Uint64
	since       atomic.Int64 // unix nanoseconds of the last transition
}

// carry sets c's figures to from's.
func (c *counters) carry(from *counters) {
	c.sent.Store(from.sent.Load())
	c.received.Store(from.received.Load())
	c.transitions.Store(from.transitions.Load())
	c.since.Store(from.since.Load())
}

// carry resumes c from o, its predecessor of the same name: its state,
// and a fresh run of results against it.
func (c *Check) carry(o *Check) { c.good, c.run = o.good, 0 }

// extraBurstOn reports whether garp_extra_if's periodic announcement of
// a master goes out on dev, one of the devices of ci's addresses: not on
// the instance's own (its macvlan with use_vmac) unless vmac_xmit_base
// sends its adverts from the base interface; and without "all" only on
// the macvlans of use_vmac_addr (addrVMAC: dev is one), as keepalived's
// vrrp_send_vmac_update.
func extraBurstOn(ci *config.Instance, dev string, addrVMAC bool) bool {
	own := ci.Interface
	if ci.VMAC != nil {
		own = ci.VMAC.Name
	}
	if dev == own && (ci.VMAC == nil || !ci.VMAC.XmitBase) {
		return false
	}
	return ci.Garp.ExtraIfAll || addrVMAC
}

// extraIfDue is garp_extra_if's check at each advert (period p; an
// advert of priority prio from an instance master or not): whether the
// announcement on the other interfaces is due now, due being when it
// is, and when the next one will be (unix nanoseconds). It is checked
// at a master's adverts, as keepalived's vrrp_state_master_tx checks
// its vmac_garp_timer; a priority 0 advert (the master leaving) sends
// none.
func extraIfDue(p time.Duration, prio uint8, master bool, now time.Time, due int64) (send bool, next int64) {
	if p <= 0 || prio == 0 || !master || now.UnixNano() <= due {
		return false, due
	}
	return true, now.Add(p).UnixNano()
}
