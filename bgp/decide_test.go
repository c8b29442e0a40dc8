package bgp

import (
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var (
	vip1 = netip.MustParsePrefix("10.1.0.100/32")
	vip2 = netip.MustParsePrefix("10.1.0.101/32")
	vip6 = netip.MustParsePrefix("2001:db8::100/128")
)

func svc(name string, p netip.Prefix, programmed, quorum bool) Service {
	return Service{Name: name, Prefix: p, Dev: "lo", Programmed: programmed, Quorum: quorum}
}

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Inputs
		want []Decision
	}{
		{"nothing", Inputs{}, []Decision{}},
		{"serving", Inputs{Services: []Service{svc("TCP 10.1.0.100:443", vip1, true, true)}},
			[]Decision{{Prefix: vip1, Announce: true, Reason: ReasonServing, Dev: "lo"}}},
		{"no quorum", Inputs{Services: []Service{svc("TCP 10.1.0.100:443", vip1, true, false)}},
			[]Decision{{Prefix: vip1, Reason: ReasonNoQuorum, Service: "TCP 10.1.0.100:443", Dev: "lo"}}},
		{"not programmed", Inputs{Services: []Service{svc("TCP 10.1.0.100:443", vip1, false, true)}},
			[]Decision{{Prefix: vip1, Reason: ReasonNotProgrammed, Service: "TCP 10.1.0.100:443", Dev: "lo"}}},
		{"every service of the address must serve", Inputs{Services: []Service{
			svc("TCP 10.1.0.100:443", vip1, true, true), svc("UDP 10.1.0.100:443", vip1, true, false)}},
			[]Decision{{Prefix: vip1, Reason: ReasonNoQuorum, Service: "UDP 10.1.0.100:443", Dev: "lo"}}},
		{"not programmed outranks no quorum", Inputs{Services: []Service{
			svc("TCP 10.1.0.100:80", vip1, true, false), svc("TCP 10.1.0.100:443", vip1, false, false)}},
			[]Decision{{Prefix: vip1, Reason: ReasonNotProgrammed, Service: "TCP 10.1.0.100:443", Dev: "lo"}}},
		{"the first at fault is named", Inputs{Services: []Service{
			svc("TCP 10.1.0.100:80", vip1, true, false), svc("TCP 10.1.0.100:443", vip1, true, false)}},
			[]Decision{{Prefix: vip1, Reason: ReasonNoQuorum, Service: "TCP 10.1.0.100:80", Dev: "lo"}}},
		{"two addresses, sorted", Inputs{Services: []Service{
			svc("b", vip6, true, true), svc("a", vip2, true, false), svc("c", vip1, true, true)}},
			[]Decision{
				{Prefix: vip1, Announce: true, Reason: ReasonServing, Dev: "lo"},
				{Prefix: vip2, Reason: ReasonNoQuorum, Service: "a", Dev: "lo"},
				{Prefix: vip6, Announce: true, Reason: ReasonServing, Dev: "lo"}}},
		{"VRRP master", Inputs{Services: []Service{svc("a", vip1, true, true)}, VRRPMaster: map[netip.Addr]bool{vip1.Addr(): true}},
			[]Decision{{Prefix: vip1, Announce: true, Reason: ReasonServing}}},
		{"VRRP backup", Inputs{Services: []Service{svc("a", vip1, true, true)}, VRRPMaster: map[netip.Addr]bool{vip1.Addr(): false}},
			[]Decision{{Prefix: vip1, Reason: ReasonVRRPBackup}}},
		{"VRRP backup without quorum says quorum", Inputs{Services: []Service{svc("a", vip1, true, false)}, VRRPMaster: map[netip.Addr]bool{vip1.Addr(): false}},
			[]Decision{{Prefix: vip1, Reason: ReasonNoQuorum, Service: "a"}}},
		{"another VIP's mastership does not count", Inputs{Services: []Service{svc("a", vip1, true, true)}, VRRPMaster: map[netip.Addr]bool{vip2.Addr(): false}},
			[]Decision{{Prefix: vip1, Announce: true, Reason: ReasonServing, Dev: "lo"}}},
		{"drained", Inputs{Services: []Service{svc("a", vip1, true, true), svc("b", vip2, true, false)}, Drained: true},
			[]Decision{{Prefix: vip1, Reason: ReasonDrained, Dev: "lo"}, {Prefix: vip2, Reason: ReasonDrained, Dev: "lo"}}},
		{"stopping outranks drained", Inputs{Services: []Service{svc("a", vip1, true, true)}, Drained: true, Stopping: true},
			[]Decision{{Prefix: vip1, Reason: ReasonStopping, Dev: "lo"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, Decide(tc.in), cmpopts.EquateComparable(netip.Prefix{})); d != "" {
				t.Errorf("Decide (-want +got):\n%s", d)
			}
		})
	}
}

// kinds is a plan as "kind prefix" strings, for readable comparisons.
func kinds(plan []Action) []string {
	out := []string{}
	for _, a := range plan {
		out = append(out, a.String())
	}
	return out
}

func TestPlan(t *testing.T) {
	serving := func(p netip.Prefix) Decision {
		return Decision{Prefix: p, Announce: true, Reason: ReasonServing, Dev: "lo"}
	}
	down := func(p netip.Prefix, r Reason) Decision { return Decision{Prefix: p, Reason: r, Dev: "lo"} }
	onLo := func(ps ...netip.Prefix) map[netip.Prefix]string {
		m := map[netip.Prefix]string{}
		for _, p := range ps {
			m[p] = "lo"
		}
		return m
	}
	announced := func(ps ...netip.Prefix) map[netip.Prefix]bool {
		m := map[netip.Prefix]bool{}
		for _, p := range ps {
			m[p] = true
		}
		return m
	}
	const w = 2 * time.Second
	for _, tc := range []struct {
		name string
		prev State
		next []Decision
		want []string
	}{
		{"start: the address before the route", State{}, []Decision{serving(vip1)},
			[]string{"add-address 10.1.0.100/32 dev lo", "announce 10.1.0.100/32 (serving)"}},
		{"start without quorum: the address, no route", State{}, []Decision{down(vip1, ReasonNoQuorum)},
			[]string{"add-address 10.1.0.100/32 dev lo"}},
		{"steady: nothing", State{Announced: announced(vip1), Addresses: onLo(vip1)}, []Decision{serving(vip1)}, []string{}},
		{"quorum lost: withdraw, the address stays", State{Announced: announced(vip1), Addresses: onLo(vip1)},
			[]Decision{down(vip1, ReasonNoQuorum)}, []string{"withdraw 10.1.0.100/32 (no-quorum)"}},
		{"quorum back: announce", State{Addresses: onLo(vip1)}, []Decision{serving(vip1)},
			[]string{"announce 10.1.0.100/32 (serving)"}},
		{"drained: withdraw, the address stays", State{Announced: announced(vip1, vip2), Addresses: onLo(vip1, vip2)},
			[]Decision{down(vip1, ReasonDrained), down(vip2, ReasonDrained)},
			[]string{"withdraw 10.1.0.100/32 (drained)", "withdraw 10.1.0.101/32 (drained)"}},
		{"stopping: withdraw all, wait, then the addresses", State{Announced: announced(vip1), Addresses: onLo(vip1, vip2)},
			[]Decision{down(vip1, ReasonStopping), down(vip2, ReasonStopping)},
			[]string{"withdraw 10.1.0.100/32 (stopping)", "wait 2s", "remove-address 10.1.0.100/32 dev lo", "remove-address 10.1.0.101/32 dev lo"}},
		{"stopping with nothing announced: no wait", State{Addresses: onLo(vip1)}, []Decision{down(vip1, ReasonStopping)},
			[]string{"remove-address 10.1.0.100/32 dev lo"}},
		{"reload drops an address: withdraw, wait, remove; the other is announced after its address",
			State{Announced: announced(vip1), Addresses: onLo(vip1)}, []Decision{serving(vip2)},
			[]string{"withdraw 10.1.0.100/32 (removed)", "wait 2s", "remove-address 10.1.0.100/32 dev lo",
				"add-address 10.1.0.101/32 dev lo", "announce 10.1.0.101/32 (serving)"}},
		{"becomes a VRRP address: off lo", State{Announced: announced(vip1), Addresses: onLo(vip1)},
			[]Decision{{Prefix: vip1, Announce: true, Reason: ReasonServing}}, []string{"remove-address 10.1.0.100/32 dev lo"}},
		{"dev changes", State{Announced: announced(vip1), Addresses: onLo(vip1)},
			[]Decision{{Prefix: vip1, Announce: true, Reason: ReasonServing, Dev: "eth1"}},
			[]string{"remove-address 10.1.0.100/32 dev lo", "add-address 10.1.0.100/32 dev eth1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := Plan(tc.prev, tc.next, w)
			if d := cmp.Diff(tc.want, kinds(plan)); d != "" {
				t.Fatalf("Plan (-want +got):\n%s", d)
			}
			// Applying the plan reaches a state from which nothing is left to do.
			after := tc.prev.Apply(plan)
			if again := Plan(after, tc.next, w); len(again) != 0 {
				t.Errorf("after the plan, still: %v", kinds(again))
			}
		})
	}
}

// TestPlanNeverRemovesAnAnnouncedAddress checks the ordering invariant on
// every pair of states over two addresses: no address leaves its device
// while it is announced, and none is announced before it is on its device.
func TestPlanNeverRemovesAnAnnouncedAddress(t *testing.T) {
	reasons := []Reason{ReasonServing, ReasonNoQuorum, ReasonDrained, ReasonStopping, ReasonRemoved, ReasonVRRPBackup}
	decision := func(p netip.Prefix, r Reason) (Decision, bool) {
		switch r {
		case ReasonRemoved:
			return Decision{}, false
		case ReasonVRRPBackup:
			return Decision{Prefix: p, Reason: r}, true
		}
		return Decision{Prefix: p, Announce: r == ReasonServing, Reason: r, Dev: "lo"}, true
	}
	for _, a := range []bool{false, true} {
		for _, onLo := range []bool{false, true} {
			for _, r1 := range reasons {
				for _, r2 := range reasons {
					prev := State{Announced: map[netip.Prefix]bool{vip1: a, vip2: !a}, Addresses: map[netip.Prefix]string{}}
					if onLo {
						prev.Addresses[vip1], prev.Addresses[vip2] = "lo", "lo"
					} else {
						prev.Addresses[vip2] = "lo"
					}
					var next []Decision
					for _, x := range []struct {
						p netip.Prefix
						r Reason
					}{{vip1, r1}, {vip2, r2}} {
						if d, ok := decision(x.p, x.r); ok {
							next = append(next, d)
						}
					}
					plan := Plan(prev, next, time.Second)
					s := prev.Apply(nil)
					waited := false
					for _, act := range plan {
						switch act.Kind {
						case Wait:
							waited = true
						case RemoveAddress:
							if s.Announced[act.Prefix] {
								t.Errorf("%v -> %v: %s while announced: %v", prev, next, act, kinds(plan))
							}
							if prev.Announced[act.Prefix] && !waited {
								t.Errorf("%v -> %v: %s without waiting after its withdraw: %v", prev, next, act, kinds(plan))
							}
						case Announce:
							if _, ok := s.Addresses[act.Prefix]; !ok && act.Decision.Dev != "" {
								t.Errorf("%v -> %v: %s before its address: %v", prev, next, act, kinds(plan))
							}
						}
						s = s.Apply([]Action{act})
					}
				}
			}
		}
	}
}
