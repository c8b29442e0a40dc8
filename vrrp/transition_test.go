package vrrp

import (
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/directord/directord/config"
)

// TestTransitionPlan checks what an instance does on each transition, in
// which order (as root, TestVirtualRoutes, TestNamespaceElectionAndHandOver
// and the firewall and rule tests see the result in the kernel).
func TestTransitionPlan(t *testing.T) {
	const (
		head = "record observe "
		tail = "group-notify notify"
		up   = "firewall-on addrs-add routes-add rules-add bequeath "
		down = "rules-remove routes-remove addrs-remove firewall-off bequeath "
	)
	tests := []struct {
		name     string
		from, to State
		traits   transitionTraits
		want     string
	}{
		{"start as backup", Initialize, Backup, transitionTraits{}, head + tail},
		{"backup to master", Backup, Master, transitionTraits{}, head + up + tail},
		{"master to backup", Master, Backup, transitionTraits{}, head + down + tail},
		{"master to fault", Master, Fault, transitionTraits{}, head + down + tail},
		{"master stops", Master, Initialize, transitionTraits{}, head + down + tail},
		{"backup to fault: nothing to remove", Backup, Fault, transitionTraits{}, head + tail},
		{"fault to backup", Fault, Backup, transitionTraits{}, head + tail},
		{"a sync group member follows first", Backup, Master, transitionTraits{sync: true},
			head + "follow " + up + tail},
		{"a member leaving", Master, Backup, transitionTraits{sync: true}, head + "follow " + down + tail},
		{"AH and garp_extra_if on becoming master", Backup, Master, transitionTraits{sync: true, ah: true, extraIf: true},
			head + "follow ah-master extra-if-due " + up + tail},
		{"AH and garp_extra_if leaving: nothing of theirs", Master, Backup, transitionTraits{ah: true, extraIf: true},
			head + down + tail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, s := range transitionPlan(tt.from, tt.to, tt.traits) {
				got = append(got, s.String())
			}
			if d := cmp.Diff(strings.Fields(tt.want), got); d != "" {
				t.Errorf("transitionPlan(%v, %v, %+v) (-want +got):\n%s", tt.from, tt.to, tt.traits, d)
			}
		})
	}
}

func TestTraitsOf(t *testing.T) {
	cfg := planConf(t, inst("VI_1", "eth0", 51, 100, ""))
	cfg.Instances[0].Garp.ExtraIf = 10 * time.Second
	if got, want := traitsOf(cfg.Instances[0], true, true), (transitionTraits{sync: true, ah: true, extraIf: true}); got != want {
		t.Errorf("traitsOf = %+v, want %+v", got, want)
	}
	cfg.Instances[0].Garp.ExtraIf = -1 // not set
	if got := traitsOf(cfg.Instances[0], false, false); got != (transitionTraits{}) {
		t.Errorf("traitsOf without garp_extra_if = %+v", got)
	}
}

// fakeClaims is what an old Node installed, for planHandOver.
type fakeClaims struct {
	addrs  map[addrKey]bool
	routes map[string]bool // routeKey
	rules  map[string]bool // ruleKey
}

func (c fakeClaims) hasAddr(dev string, p netip.Prefix) bool { return c.addrs[addrKey{dev, p}] }
func (c fakeClaims) hasRoute(r config.Route) bool            { return c.routes[routeKey(r)] }
func (c fakeClaims) hasRule(r config.Rule) bool              { return c.rules[ruleKey(r)] }

// TestPlanHandOver checks what a master resumed by a reload takes over
// and adds (TestNamespaceReload* see it as root).
func TestPlanHandOver(t *testing.T) {
	old := planConf(t, "vrrp_instance VI_1 {\n interface eth0\n virtual_router_id 51\n priority 100\n"+
		" virtual_ipaddress {\n 192.0.2.1/24\n 192.0.2.2/24 dev eth1\n 192.0.2.3/24\n }\n"+
		" virtual_ipaddress_excluded {\n 2001:db8::1/64\n }\n"+
		" virtual_routes {\n 198.51.100.0/24 via 192.0.2.254\n blackhole 203.0.113.0/24\n }\n"+
		" virtual_rules {\n from 192.0.2.1 table 100 priority 100\n to 198.51.100.0/24 table 100 priority 101\n }\n}\n").Instances[0]
	// Lines moved; 192.0.2.2 on another device, 192.0.2.3 the old Node
	// did not install (it was there before), 192.0.2.4 new; one route
	// dropped and one new, one rule's priority changed; a route twice
	// (the first takes it over, the second is added).
	cur := planConf(t, "\n\nvrrp_instance VI_1 {\n interface eth0\n virtual_router_id 51\n priority 100\n"+
		" virtual_ipaddress {\n 192.0.2.1/24\n 192.0.2.2/24\n 192.0.2.3/24\n 192.0.2.4/24\n }\n"+
		" virtual_ipaddress_excluded {\n 2001:db8::1/64\n }\n"+
		" virtual_routes {\n blackhole 203.0.113.0/24\n blackhole 203.0.113.0/24\n 192.0.2.128/25 dev eth0\n }\n"+
		" virtual_rules {\n from 192.0.2.1 table 100 priority 100\n to 198.51.100.0/24 table 100 priority 102\n }\n}\n").Instances[0]
	// The configuration has each address once; were one twice, only the
	// first would take it over.
	cur.VIPs = append(cur.VIPs, cur.VIPs[0])
	held := fakeClaims{addrs: map[addrKey]bool{}, routes: map[string]bool{}, rules: map[string]bool{}}
	for _, a := range instanceAddrs(old) {
		if a.VIP.Prefix.Addr() != netip.MustParseAddr("192.0.2.3") {
			held.addrs[addrKey{a.Dev, a.VIP.Prefix}] = true
		}
	}
	for _, r := range old.Routes {
		held.routes[routeKey(r)] = true
	}
	for _, r := range old.Rules {
		held.rules[ruleKey(r)] = true
	}
	h := planHandOver(old, cur, held)
	addrs := func(list []devAddr) []string {
		var out []string
		for _, a := range list {
			out = append(out, a.VIP.Prefix.String()+" "+a.Dev)
		}
		return out
	}
	if d := cmp.Diff([]string{"192.0.2.1/24 eth0", "2001:db8::1/64 eth0"}, addrs(h.takeAddrs)); d != "" {
		t.Errorf("addresses taken over (-want +got):\n%s", d)
	}
	want := []string{"192.0.2.2/24 eth0", "192.0.2.3/24 eth0", "192.0.2.4/24 eth0", "192.0.2.1/24 eth0"}
	if d := cmp.Diff(want, addrs(h.addAddrs)); d != "" {
		t.Errorf("addresses added (-want +got):\n%s", d)
	}
	if !h.announce {
		t.Error("addresses added, not announced")
	}
	var routes []string
	for _, m := range h.takeRoutes {
		routes = append(routes, "move "+m.old.Dst.String()+" line "+itoa(m.old.Pos.Line)+">"+itoa(m.cur.Pos.Line))
	}
	for _, r := range h.addRoutes {
		routes = append(routes, "add "+r.Dst.String()+" line "+itoa(r.Pos.Line))
	}
	want = []string{"move 203.0.113.0/24 line 15>17", "add 203.0.113.0/24 line 18", "add 192.0.2.128/25 line 19"}
	if d := cmp.Diff(want, routes); d != "" {
		t.Errorf("routes (-want +got):\n%s", d)
	}
	var rules []string
	for _, r := range h.takeRules {
		rules = append(rules, "take "+ruleString(r))
	}
	for _, r := range h.addRules {
		rules = append(rules, "add "+ruleString(r))
	}
	want = []string{"take 100: from 192.0.2.1/32 table", "add 102: from all to 198.51.100.0/24 table"}
	if d := cmp.Diff(want, rules); d != "" {
		t.Errorf("rules (-want +got):\n%s", d)
	}

	// The same configuration, all of it installed: nothing added, nothing
	// announced.
	for _, a := range instanceAddrs(old) {
		held.addrs[addrKey{a.Dev, a.VIP.Prefix}] = true
	}
	h = planHandOver(old, old, held)
	if len(h.addAddrs)+len(h.addRoutes)+len(h.addRules) != 0 || h.announce {
		t.Errorf("the same instance: adds %+v", h)
	}
	if len(h.takeAddrs) != 4 || len(h.takeRoutes) != 2 || len(h.takeRules) != 2 {
		t.Errorf("the same instance: takes %d addresses, %d routes, %d rules; want 4, 2, 2",
			len(h.takeAddrs), len(h.takeRoutes), len(h.takeRules))
	}
}

// TestPlanAdoption checks which instances a reload resumes and deletes.
func TestPlanAdoption(t *testing.T) {
	olds := []string{"VI_1", "VI_2", "VI_3", "OLD"}
	curs := []string{"VI_2", "RENAMED", "VI_1", "NEW"}
	plan := []InstancePlan{
		{Change: Kept, Old: "VI_1", New: "VI_1"},
		{Change: Changed, Old: "VI_2", New: "VI_2", What: []string{"priority"}},
		{Change: Kept, Old: "VI_3", New: "RENAMED"},
		{Change: Removed, Old: "OLD"},
		{Change: Added, New: "NEW"},
		{Change: Kept, Old: "GONE", New: "VI_1"},    // no such old instance
		{Change: Removed, Old: "NEVER"},             // nor this one
		{Change: Changed, Old: "VI_1", New: "NONE"}, // no such new one
	}
	a := planAdoption(olds, curs, plan)
	if d := cmp.Diff([]int{3}, a.deleted); d != "" {
		t.Errorf("deleted (-want +got):\n%s", d)
	}
	var got []string
	for _, r := range a.resume {
		got = append(got, olds[r.old]+">"+curs[r.cur]+" "+r.plan.Change.String())
	}
	if d := cmp.Diff([]string{"VI_1>VI_1 kept", "VI_2>VI_2 changed", "VI_3>RENAMED kept"}, got); d != "" {
		t.Errorf("resumed (-want +got):\n%s", d)
	}
}

// TestCountersCarry checks that a reload carries every counter: a field
// added to counters and not to carry fails it.
func TestCountersCarry(t *testing.T) {
	// field is counters' field i, whichever atomic integer it is.
	field := func(c *counters, i int) (set func(int64), get func() int64) {
		f := reflect.ValueOf(c).Elem().Field(i)
		switch p := f.Addr().UnsafePointer(); f.Type() {
		case reflect.TypeFor[atomic.Uint64]():
			u := (*atomic.Uint64)(p)
			return func(v int64) { u.Store(uint64(v)) }, func() int64 { return int64(u.Load()) }
		case reflect.TypeFor[atomic.Int64]():
			n := (*atomic.Int64)(p)
			return n.Store, n.Load
		}
		t.Fatalf("counters.%s: a type the test does not set", reflect.TypeFor[counters]().Field(i).Name)
		return nil, nil
	}
	var from, to counters
	fields := reflect.TypeFor[counters]().NumField()
	for i := range fields {
		set, _ := field(&from, i)
		set(int64(i + 1))
		set, _ = field(&to, i)
		set(99)
	}
	to.carry(&from)
	for i := range fields {
		if _, get := field(&to, i); get() != int64(i+1) {
			t.Errorf("counters.%s = %d after carry, want %d", reflect.TypeFor[counters]().Field(i).Name, get(), i+1)
		}
	}
}

func TestCheckCarry(t *testing.T) {
	o := NewCheck(2, 2, false)
	o.Result(false) // one failure of two: still good, a run of 1
	c := NewCheck(2, 2, true)
	c.Result(true)
	c.carry(o)
	if !c.Good() || c.run != 0 {
		t.Errorf("carried: good %v run %d, want good, run 0", c.Good(), c.run)
	}
	o.Result(false) // now bad
	c.carry(o)
	if c.Good() {
		t.Error("carried a bad script as good")
	}
}

// TestExtraBurstOn checks where garp_extra_if announces (TestGarpExtraIf
// sees it as root).
func TestExtraBurstOn(t *testing.T) {
	plain := planConf(t, inst("VI_1", "eth0", 51, 100, "")).Instances[0]
	vmac := planConf(t, inst("VI_1", "eth0", 51, 100, "use_vmac vrrp.51")).Instances[0]
	xmit := planConf(t, inst("VI_1", "eth0", 51, 100, "use_vmac vrrp.51\n vmac_xmit_base")).Instances[0]
	tests := []struct {
		name     string
		ci       *config.Instance
		all      bool
		dev      string
		addrVMAC bool
		want     bool
	}{
		{"its own interface: never", plain, true, "eth0", false, false},
		{"another interface with all", plain, true, "eth1", false, true},
		{"another interface without all", plain, false, "eth1", false, false},
		{"a use_vmac_addr macvlan without all", plain, false, "vrrp.52", true, true},
		{"its own macvlan: never", vmac, true, "vrrp.51", false, false},
		{"the macvlan's base interface with all", vmac, true, "eth0", false, true},
		{"its own macvlan with vmac_xmit_base", xmit, true, "vrrp.51", false, true},
		{"its own macvlan with vmac_xmit_base, without all", xmit, false, "vrrp.51", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ci := *tt.ci
			ci.Garp.ExtraIfAll = tt.all
			if got := extraBurstOn(&ci, tt.dev, tt.addrVMAC); got != tt.want {
				t.Errorf("extraBurstOn(%s) = %v, want %v", tt.dev, got, tt.want)
			}
		})
	}
}

// TestSettle checks what a hand-over adds: the planned additions, then
// the entries it could not take, in order, every take tried once.
func TestSettle(t *testing.T) {
	type move struct{ old, cur string }
	for _, tc := range []struct {
		name    string
		take    []move
		add     []string
		refused []string // the old names whose take fails
		want    []string
	}{
		{name: "nothing"},
		{name: "all taken", take: []move{{"a", "A"}, {"b", "B"}}, add: []string{"C"}, want: []string{"C"}},
		{name: "one refused", take: []move{{"a", "A"}, {"b", "B"}}, add: []string{"C"},
			refused: []string{"b"}, want: []string{"C", "B"}},
		{name: "all refused, none planned", take: []move{{"a", "A"}, {"b", "B"}},
			refused: []string{"a", "b"}, want: []string{"A", "B"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tried []string
			got := settle(tc.take, tc.add, func(m move) bool {
				tried = append(tried, m.old)
				return !slices.Contains(tc.refused, m.old)
			}, func(m move) string { return m.cur })
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("added (-want +got):\n%s", d)
			}
			var olds []string
			for _, m := range tc.take {
				olds = append(olds, m.old)
			}
			if d := cmp.Diff(olds, tried); d != "" {
				t.Errorf("takes tried (-want +got):\n%s", d)
			}
		})
	}
}

// TestExtraIfDue checks when a master's advert brings garp_extra_if's
// announcement on its other interfaces, and when the next is due.
func TestExtraIfDue(t *testing.T) {
	now := time.Unix(1000, 0)
	past, future := now.Add(-time.Second).UnixNano(), now.Add(time.Second).UnixNano()
	next := now.Add(5 * time.Second).UnixNano()
	for _, tc := range []struct {
		name   string
		p      time.Duration
		prio   uint8
		master bool
		due    int64
		send   bool
		next   int64
	}{
		{name: "due", p: 5 * time.Second, prio: 100, master: true, due: past, send: true, next: next},
		{name: "never set", p: 5 * time.Second, prio: 100, master: true, due: 0, send: true, next: next},
		{name: "not yet", p: 5 * time.Second, prio: 100, master: true, due: future, next: future},
		{name: "due this very nanosecond: not yet", p: 5 * time.Second, prio: 100, master: true,
			due: now.UnixNano(), next: now.UnixNano()},
		{name: "off", prio: 100, master: true, due: past, next: past},
		{name: "priority 0 advert", p: 5 * time.Second, master: true, due: past, next: past},
		{name: "not master", p: 5 * time.Second, prio: 100, due: past, next: past},
	} {
		t.Run(tc.name, func(t *testing.T) {
			send, next := extraIfDue(tc.p, tc.prio, tc.master, now, tc.due)
			if send != tc.send || next != tc.next {
				t.Errorf("extraIfDue: %v, %d; want %v, %d", send, next, tc.send, tc.next)
			}
		})
	}
}
