package vrrp

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/directord/directord/internal/nstest"
)

func ipRules(t *testing.T, ns *nstest.NS) string {
	t.Helper()
	var b strings.Builder
	for _, f := range []string{"-4", "-6"} {
		out, err := exec.Command("ip", "-n", ns.Name, f, "rule").CombinedOutput()
		if err != nil {
			t.Fatalf("ip rule: %v: %s", err, out)
		}
		b.Write(out)
	}
	return b.String()
}

// TestVirtualRulesBesideKeepalived: an instance's virtual_rules are held
// by the master alone and move with its addresses; directord's master
// holds the very rules keepalived's master holds for the same lines
// (preference given and not, protocol keepalived, both families).
func TestVirtualRulesBesideKeepalived(t *testing.T) {
	nstest.RequireRoot(t)
	a, b := peers(t, "dd-vr")
	none := ipRules(t, a)
	rules := `virtual_rules {
        from 192.0.2.100 table 100 priority 100
        to 198.51.100.0/24 lookup 100 priority 101
        fwmark 9 table 100
        from 2001:db8::/64 table 100 priority 102 inet6
        not to 198.51.101.0/24 type nop priority 103
    }
    virtual_routes {
        198.51.100.0/24 via 192.0.2.254
    }`
	na := startNode(t, a, nstest.Instance("dda", 150, 3, "0.1", "192.0.2.100/24", rules))
	nstest.WaitFor(t, 5*time.Second, "a master with its rules", func() bool {
		return na.state(t) == Master && ipRules(t, a) != none
	})
	held := ipRules(t, a)
	for _, want := range []string{"100:\tfrom 192.0.2.100 lookup 100 proto keepalived", "16384:\tfrom all fwmark 0x9 lookup 100 proto keepalived",
		"102:\tfrom 2001:db8::/64 lookup 100 proto keepalived", "103:\tnot from all to 198.51.101.0/24 nop proto keepalived"} {
		if !strings.Contains(held, want) {
			t.Errorf("no %q in\n%s", want, held)
		}
	}
	out, err := exec.Command("ip", "-n", a.Name, "route", "show", "198.51.100.0/24").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "proto keepalived") {
		t.Errorf("virtual route %q (%v): want proto keepalived, as keepalived sets it", out, err)
	}
	ka := nstest.Keepalived(t, b, nstest.Instance("ddb", 100, 3, "0.1", "192.0.2.100/24", rules))
	defer ka.Stop(10 * time.Second)
	nstest.HoldFor(t, 500*time.Millisecond, "keepalived's backup without the rules", func() bool { return ipRules(t, b) == none })
	na.stop()
	nstest.WaitFor(t, 5*time.Second, "keepalived master with the same rules", func() bool { return ipRules(t, b) == held })
	if got := ipRules(t, a); got != none {
		t.Errorf("the stopped master left rules:\n%s", got)
	}
}

// TestNamespaceReloadChangesVirtualRules: a master's reload keeps the
// virtual rules the new file has again (on another line) without
// deleting them, adds the new one and deletes the dropped one; its stop
// deletes the rest.
func TestNamespaceReloadChangesVirtualRules(t *testing.T) {
	nstest.RequireRoot(t)
	a, _ := peers(t, "dd-rr")
	none := ipRules(t, a)
	rules := func(lead string, lines ...string) string {
		return lead + "virtual_rules {\n " + strings.Join(lines, "\n ") + "\n }"
	}
	conf := nstest.Instance("dda", 150, 3, "0.1", "192.0.2.100/24",
		rules("", "from 192.0.2.100 table 100 priority 100", "from 192.0.2.101 table 100 priority 101"))
	na := startNode(t, a, conf)
	nstest.WaitFor(t, 3*time.Second, "a master with its rules", func() bool {
		return na.state(t) == Master && strings.Contains(ipRules(t, a), "101:")
	})
	tr := na.status(t).Transitions
	dels := deletions(t, a)
	na, _ = reloadNode(t, na, parseConf(t, a, conf), nstest.Instance("dda", 150, 3, "0.1", "192.0.2.100/24",
		rules("\n\n", "from 192.0.2.102 table 100 priority 102", "from 192.0.2.100 table 100 priority 100")))
	nstest.WaitFor(t, 3*time.Second, "the new rule", func() bool { return strings.Contains(ipRules(t, a), "102:") })
	if got := dels(); !slices.Equal(got, []string{"rule 101"}) {
		t.Errorf("deleted at the reload: %q, want only rule 101", got)
	}
	if got := ipRules(t, a); !strings.Contains(got, "100:\tfrom 192.0.2.100") || strings.Contains(got, "101:") {
		t.Errorf("rules after the reload:\n%s", got)
	}
	if s := na.status(t); s.State != Master || s.Transitions != tr {
		t.Errorf("after the reload: %v with %d transitions (was %d)", s.State, s.Transitions, tr)
	}
	na.stop()
	if got := ipRules(t, a); got != none {
		t.Errorf("the stop left rules:\n%s", got)
	}
}

// TestRuleAndRouteInterfacesTracked: the interfaces an instance's virtual
// rules and routes name are tracked as keepalived tracks them: one going
// down puts the instance in FAULT, up again lets it be master; those of
// no_track lines are not tracked.
func TestRuleAndRouteInterfacesTracked(t *testing.T) {
	nstest.RequireRoot(t)
	a := nstest.New(t, "dd-rt-ta")
	b := nstest.New(t, "dd-rt-tb")
	c := nstest.New(t, "dd-rt-tc")
	nstest.Link(t, a, b, "dda", "ddb", "192.0.2.1/24", "192.0.2.2/24")
	nstest.Link(t, a, c, "ddx", "ddc", "198.51.100.1/24", "198.51.100.2/24")
	nstest.Link(t, a, c, "ddz", "ddd", "203.0.113.1/24", "203.0.113.2/24")
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", append([]string{"-n", a.Name}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", args, err, out)
		}
	}
	for _, c := range []struct{ name, extra, dev string }{
		{"rule iif", "virtual_rules {\n        iif ddx table 100 priority 5\n    }", "ddx"},
		{"route dev", "virtual_routes {\n        192.0.2.128/25 dev ddx\n    }", "ddx"},
	} {
		t.Run(c.name, func(t *testing.T) {
			extra := c.extra + "\n    virtual_rules {\n        oif ddz table 100 priority 6 no_track\n    }"
			if c.name == "route dev" {
				extra = c.extra + "\n    virtual_routes {\n        192.0.2.64/26 dev ddz no_track\n    }"
			}
			na := startNode(t, a, nstest.Instance("dda", 150, 3, "0.1", "192.0.2.100/24", extra))
			defer na.stop()
			nstest.WaitFor(t, 5*time.Second, "master", func() bool { return na.state(t) == Master })
			ip("link", "set", "ddz", "down") // no_track: nothing happens
			nstest.HoldFor(t, 300*time.Millisecond, "master with a no_track interface down", func() bool { return na.state(t) == Master })
			ip("link", "set", "ddz", "up")
			ip("link", "set", c.dev, "down")
			nstest.WaitFor(t, 2*time.Second, "fault", func() bool { return na.state(t) == Fault })
			ip("link", "set", c.dev, "up")
			nstest.WaitFor(t, 5*time.Second, "master again", func() bool { return na.state(t) == Master })
		})
	}
}
