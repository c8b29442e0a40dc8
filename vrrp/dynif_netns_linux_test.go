package vrrp

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/directord/directord/config"
	"github.com/directord/directord/internal/nstest"
)

// TestDynamicInterfaceCreatedLater: with dynamic_interfaces, an instance
// whose interface does not exist at start is in FAULT, holds nothing,
// and runs once the interface is created: it becomes master (no peer
// answers), adds its VIP and sends its adverts on the new interface, as
// keepalived's "will use if created". Without the keyword the same
// configuration does not start.
func TestDynamicInterfaceCreatedLater(t *testing.T) {
	nstest.RequireRoot(t)
	a := nstest.New(t, "dd-dyn-a")
	b := nstest.New(t, "dd-dyn-b")
	inst := nstest.Instance("ddy", 200, 3, "1", "192.0.2.100/24", "")
	cfg := parseConf(t, a, inst)
	var err error
	a.Do(t, func() {
		var n *Node
		if n, err = NewNode(cfg, a.NL, slog.New(slog.NewTextHandler(testWriter{t, a.Name}, nil))); err == nil {
			n.Close()
		}
	})
	if err == nil {
		t.Fatal("without dynamic_interfaces, a missing interface started")
	}
	na := startNode(t, a, "global_defs {\n dynamic_interfaces\n}\n"+inst)
	nstest.HoldFor(t, 1500*time.Millisecond, "FAULT without its interface", func() bool { return na.state(t) == Fault })
	nstest.Link(t, a, b, "ddy", "ddyb", "192.0.2.1/24", "192.0.2.2/24")
	adverts := nstest.WatchVRRP(t, b, "ddyb")
	created := time.Now()
	nstest.WaitFor(t, 15*time.Second, "master with its VIP on the new interface", func() bool {
		return na.state(t) == Master && a.HasAddr(t, "ddy", "192.0.2.100")
	})
	nstest.WaitFor(t, 5*time.Second, "adverts on the new interface", func() bool {
		return adverts.Count("192.0.2.1", created) >= 2
	})
	if p := na.status(t).Primary.String(); p != "192.0.2.1" {
		t.Errorf("primary %s, want the new interface's 192.0.2.1", p)
	}
}

// TestInterfaceMadeAgain: an instance's interface deleted under a master
// puts it in FAULT; made again (a new index), the instance reopens its
// socket on it and is master again, its adverts and VIP on the new
// interface, as keepalived's cleanup_lost_interface and
// update_added_interface (with or without dynamic_interfaces).
func TestInterfaceMadeAgain(t *testing.T) {
	nstest.RequireRoot(t)
	a, b := peers(t, "dd-again")
	na := startNode(t, a, nstest.Instance("dda", 200, 3, "1", "192.0.2.100/24", ""))
	nstest.WaitFor(t, 15*time.Second, "master", func() bool {
		return na.state(t) == Master && a.HasAddr(t, "dda", "192.0.2.100")
	})
	delLink(t, a, "dda")
	nstest.WaitFor(t, 5*time.Second, "FAULT without its interface", func() bool { return na.state(t) == Fault })
	nstest.Link(t, a, b, "dda", "ddb", "192.0.2.1/24", "192.0.2.2/24")
	adverts := nstest.WatchVRRP(t, b, "ddb")
	again := time.Now()
	nstest.WaitFor(t, 15*time.Second, "master again with its VIP", func() bool {
		return na.state(t) == Master && a.HasAddr(t, "dda", "192.0.2.100")
	})
	nstest.WaitFor(t, 5*time.Second, "adverts on the interface made again", func() bool {
		return adverts.Count("192.0.2.1", again) >= 2
	})
}

// TestVMACMadeAgain: a use_vmac master's macvlan deleted under directord
// puts it in FAULT; directord makes the macvlan again, as keepalived's
// recreate_vmac_thread, and the instance is master again on it, its VIP
// there and its adverts heard; the same when its interface is deleted
// (the kernel deletes the macvlan with it) and made again. With
// dynamic_interfaces the interface may be missing at start: the macvlan
// is made when it is created.
func TestVMACMadeAgain(t *testing.T) {
	nstest.RequireRoot(t)
	a := nstest.New(t, "dd-vmagain-a")
	b := nstest.New(t, "dd-vmagain-b")
	inst := nstest.Instance("dda", 200, 3, "0.5", "192.0.2.100/24", "use_vmac")
	na := startNode(t, a, "global_defs {\n dynamic_interfaces\n}\n"+inst)
	nstest.HoldFor(t, time.Second, "FAULT without its interface", func() bool { return na.state(t) == Fault })
	nstest.Link(t, a, b, "dda", "ddb", "192.0.2.1/24", "192.0.2.2/24")
	master := func(what string) {
		t.Helper()
		adverts := nstest.WatchVRRP(t, b, "ddb")
		since := time.Now()
		nstest.WaitFor(t, 15*time.Second, what, func() bool {
			// The macvlan may be gone a moment more (HasAddr wants it).
			if _, err := a.NL.LinkByName("vrrp.51"); err != nil {
				return false
			}
			return na.state(t) == Master && a.HasAddr(t, "vrrp.51", "192.0.2.100") && adverts.Count("192.0.2.1", since) >= 2
		})
	}
	master("master on the macvlan made with its interface")
	if err := a.NL.LinkDel(macvlan(t, a, "vrrp.51")); err != nil {
		t.Fatal(err)
	}
	master("master again on the macvlan made again")
	delLink(t, a, "dda")
	nstest.WaitFor(t, 5*time.Second, "FAULT without its interface", func() bool { return na.state(t) == Fault })
	nstest.Link(t, a, b, "dda", "ddb", "192.0.2.1/24", "192.0.2.2/24")
	master("master again on the interface made again")
	// The new interface answers no ARP for the macvlan's addresses, and
	// has its own values back after the stop.
	wantARPSysctls(t, a, "dda", "1", "the interface made again")
	na.stop()
	wantARPSysctls(t, a, "dda", "0", "after the stop (its own values back)")
}

// TestVMACMadeAgainTwoInstances: two use_vmac instances (VRIDs 51 and
// 52) on one interface deleted and made again: both macvlans are made
// again, the new interface gets arp_ignore and arp_filter 1, and at the
// stop has its own values (0) back. The second instance must not take
// the first one's saved values for stale ones (forgetBaseSysctls is
// keyed on the interface, once per interface made again).
func TestVMACMadeAgainTwoInstances(t *testing.T) {
	nstest.RequireRoot(t)
	a, b := peers(t, "dd-vm2")
	i51 := nstest.Instance("dda", 200, 3, "0.5", "192.0.2.100/24", "use_vmac")
	i52 := strings.NewReplacer("VI_1", "VI_2", "virtual_router_id 51", "virtual_router_id 52",
		"192.0.2.100", "192.0.2.101").Replace(i51)
	na := startNode(t, a, i51+i52)
	all := func(want State) bool {
		st, err := na.n.Status(context.Background())
		if err != nil {
			t.Fatalf("status: %v", err)
		}
		return len(st) == 2 && st[0].State == want && st[1].State == want
	}
	masters := func(what string) {
		t.Helper()
		nstest.WaitFor(t, 15*time.Second, what, func() bool {
			return all(Master) && macvlan(t, a, "vrrp.51") != nil && macvlan(t, a, "vrrp.52") != nil &&
				a.HasAddr(t, "vrrp.51", "192.0.2.100") && a.HasAddr(t, "vrrp.52", "192.0.2.101")
		})
	}
	masters("both masters on their macvlans")
	delLink(t, a, "dda")
	nstest.WaitFor(t, 5*time.Second, "FAULT without their interface", func() bool { return all(Fault) })
	nstest.Link(t, a, b, "dda", "ddb", "192.0.2.1/24", "192.0.2.2/24")
	masters("both masters again on the interface made again")
	wantARPSysctls(t, a, "dda", "1", "the interface made again")
	na.stop()
	wantARPSysctls(t, a, "dda", "0", "after the stop (its own values back)")
}

// delLink deletes the link name in ns.
func delLink(t *testing.T, ns *nstest.NS, name string) {
	t.Helper()
	l, err := ns.NL.LinkByName(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := ns.NL.LinkDel(l); err != nil {
		t.Fatal(err)
	}
}

// wantARPSysctls checks that dev's arp_ignore and arp_filter in ns are
// both want (1 while a use_vmac macvlan is on it, as keepalived sets
// them).
func wantARPSysctls(t *testing.T, ns *nstest.NS, dev, want, when string) {
	t.Helper()
	if ai, af := confSysctl(t, ns, dev, "arp_ignore"), confSysctl(t, ns, dev, "arp_filter"); ai != want || af != want {
		t.Errorf("%s: %s arp_ignore %s arp_filter %s, want %s %s", when, dev, ai, af, want, want)
	}
}

// TestInterfaceMadeAgainUnseen: an instance's interface deleted and made
// again while the Node's link updates are lost (the kernel's ENOBUFS:
// the Node reads every link afresh) is seen only as a new index. The
// master's VIP went with the old interface: the instance goes through
// FAULT, as when the deletion is seen, and is master again with its VIP
// on the new interface (reopened without FAULT, it stayed master without
// it).
func TestInterfaceMadeAgainUnseen(t *testing.T) {
	nstest.RequireRoot(t)
	a := nstest.New(t, "dd-unseen-a")
	b := nstest.New(t, "dd-unseen-b")
	nstest.Link(t, a, b, "dda", "ddb", "192.0.2.1/24", "192.0.2.2/24")
	var fake *linkWatch
	var mu sync.Mutex
	var states []State
	na := startNodeWith(t, a, nstest.Instance("dda", 200, 3, "0.5", "192.0.2.100/24", ""), func(n *Node, _ *config.Config) {
		// The Node hears of no link change but the loss the test says.
		real := n.track.watch
		fake = &linkWatch{sock: real.sock, updates: make(chan netlink.LinkUpdate), lost: make(chan struct{}, 1),
			stop: real.stop, done: real.done}
		n.track.watch = fake
		n.Observe(func(e Event) { mu.Lock(); states = append(states, e.To); mu.Unlock() })
	})
	nstest.WaitFor(t, 15*time.Second, "master with its VIP", func() bool {
		return na.state(t) == Master && a.HasAddr(t, "dda", "192.0.2.100")
	})
	l, err := a.NL.LinkByName("dda")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.NL.LinkDel(l); err != nil {
		t.Fatal(err)
	}
	nstest.Link(t, a, b, "dda", "ddb", "192.0.2.1/24", "192.0.2.2/24")
	mu.Lock()
	states = nil
	mu.Unlock()
	fake.lost <- struct{}{}
	nstest.WaitFor(t, 15*time.Second, "master again with its VIP on the new dda", func() bool {
		return na.state(t) == Master && a.HasAddr(t, "dda", "192.0.2.100")
	})
	mu.Lock()
	defer mu.Unlock()
	if len(states) == 0 || states[0] != Fault {
		t.Errorf("transitions after the loss %v, want FAULT first", states)
	}
}

// TestPromoteSecondariesMadeAgain: an interface whose promote_secondaries
// the Node sets (here, for an IPv4 VIP on it, also beside a use_vmac
// whose macvlan is made again on it) and that is deleted and
// made again, seen or while link updates are lost (relist), gets it set
// again, so that the VIP leaving takes no other address of the subnet
// with it; an operator's 0 on that same interface stays; the stop puts
// the new interface's own value back.
func TestPromoteSecondariesMadeAgain(t *testing.T) {
	nstest.RequireRoot(t)
	for _, c := range []struct {
		name, ns               string
		vmac, unseen, operator bool
	}{
		{"vip", "dd-prom", false, false, true},
		{"use_vmac", "dd-prov", true, false, true},
		// Straight to the stop: the value saved for the new dda must
		// outlive its macvlan made again.
		{"use_vmac stop", "dd-pros", true, false, false},
		{"vip unseen", "dd-proa", false, true, true},
		{"use_vmac unseen", "dd-prou", true, true, true},
	} {
		t.Run(c.name, func(t *testing.T) { promoteMadeAgain(t, c.ns, c.vmac, c.unseen, c.operator) })
	}
}

func promoteMadeAgain(t *testing.T, ns string, vmac, unseen, operator bool) {
	a := nstest.New(t, ns+"-a")
	b := nstest.New(t, ns+"-b")
	nstest.Link(t, a, b, "dda", "ddb", "192.0.2.1/24", "192.0.2.2/24")
	const path = "/proc/sys/net/ipv4/conf/dda/promote_secondaries"
	conf := nstest.Instance("dda", 200, 3, "0.5", "192.0.2.100/24", "")
	if vmac {
		// A second instance on dda's macvlan, made again with dda.
		conf += strings.NewReplacer("VI_1", "VI_2", "virtual_router_id 51", "virtual_router_id 52").
			Replace(nstest.Instance("dda", 200, 3, "0.5", "192.0.2.101/24", "use_vmac"))
	}
	macvlanThere := func() bool {
		if !vmac {
			return true
		}
		_, err := a.NL.LinkByName("vrrp.52")
		return err == nil
	}
	var fake *linkWatch
	na := startNodeWith(t, a, conf, func(n *Node, _ *config.Config) {
		if !unseen {
			return
		}
		real := n.track.watch
		fake = &linkWatch{sock: real.sock, updates: make(chan netlink.LinkUpdate), lost: make(chan struct{}, 1),
			stop: real.stop, done: real.done}
		n.track.watch = fake
	})
	// relisted: every link read afresh, and done (the loop takes the
	// third loss only once the first one's reading has ended).
	relisted := func() {
		for range 3 {
			fake.lost <- struct{}{}
		}
	}
	nstest.WaitFor(t, 15*time.Second, "master", func() bool { return na.state(t) == Master })
	if v := sysctl(t, a, path); v != "1" {
		t.Fatalf("promote_secondaries %s on dda, want 1", v)
	}
	l, err := a.NL.LinkByName("dda")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.NL.LinkDel(l); err != nil {
		t.Fatal(err)
	}
	if !unseen {
		nstest.WaitFor(t, 5*time.Second, "FAULT without dda", func() bool { return na.state(t) == Fault })
	}
	// A new interface takes the namespace's default, which a host's
	// sysctl.d may have set to 1 (systemd's 50-default.conf does): 0 here,
	// so that only directord can set it on the new dda.
	var werr error
	a.Do(t, func() {
		werr = os.WriteFile("/proc/sys/net/ipv4/conf/default/promote_secondaries", []byte("0"), 0o644)
	})
	if werr != nil {
		t.Fatal(werr)
	}
	nstest.Link(t, a, b, "dda", "ddb", "192.0.2.1/24", "192.0.2.2/24")
	if unseen {
		relisted()
	}
	nstest.WaitFor(t, 15*time.Second, "master again, promote_secondaries 1 on the new dda", func() bool {
		return na.state(t) == Master && sysctl(t, a, path) == "1" && macvlanThere()
	})
	if operator {
		promoteOperator(t, a, na, unseen, relisted)
	}
	na.stop()
	if v := sysctl(t, a, path); v != "0" {
		t.Errorf("promote_secondaries %s on dda after the stop, want its own 0 back", v)
	}
}

// promoteOperator sets dda's promote_secondaries to 0 as an operator
// would, checks that the Node leaves it so through link updates (or a
// relist), and sets it to 1 again.
func promoteOperator(t *testing.T, a *nstest.NS, na *node, unseen bool, relisted func()) {
	const path = "/proc/sys/net/ipv4/conf/dda/promote_secondaries"
	var err error
	a.Do(t, func() { err = os.WriteFile(path, []byte("0"), 0) })
	if err != nil {
		t.Fatal(err)
	}
	if unseen {
		relisted()
	} else {
		l, err := a.NL.LinkByName("dda")
		if err != nil {
			t.Fatal(err)
		}
		if err := a.NL.LinkSetDown(l); err != nil {
			t.Fatal(err)
		}
		nstest.WaitFor(t, 5*time.Second, "FAULT with dda down", func() bool { return na.state(t) == Fault })
		if err := a.NL.LinkSetUp(l); err != nil {
			t.Fatal(err)
		}
		nstest.WaitFor(t, 15*time.Second, "master with dda up", func() bool { return na.state(t) == Master })
	}
	if v := sysctl(t, a, path); v != "0" {
		t.Errorf("promote_secondaries %s on the same dda after the operator's 0, want 0 left", v)
	}
	a.Do(t, func() { err = os.WriteFile(path, []byte("1"), 0) })
	if err != nil {
		t.Fatal(err)
	}
}

// TestTrackedInterfaceGoneUnseen: a tracked interface deleted while the
// Node's link updates are lost (ENOBUFS: every link read afresh) counts
// as down, as if the deletion had been seen: its instance is in FAULT.
func TestTrackedInterfaceGoneUnseen(t *testing.T) {
	nstest.RequireRoot(t)
	a := nstest.New(t, "dd-trgone-a")
	b := nstest.New(t, "dd-trgone-b")
	nstest.Link(t, a, b, "dda", "ddb", "192.0.2.1/24", "192.0.2.2/24")
	nstest.Link(t, a, b, "ddt", "ddtb", "198.51.100.1/24", "198.51.100.2/24")
	var fake *linkWatch
	na := startNodeWith(t, a, nstest.Instance("dda", 200, 3, "0.5", "192.0.2.100/24", "track_interface {\n  ddt\n }"),
		func(n *Node, _ *config.Config) {
			real := n.track.watch
			fake = &linkWatch{sock: real.sock, updates: make(chan netlink.LinkUpdate), lost: make(chan struct{}, 1),
				stop: real.stop, done: real.done}
			n.track.watch = fake
		})
	nstest.WaitFor(t, 15*time.Second, "master", func() bool { return na.state(t) == Master })
	l, err := a.NL.LinkByName("ddt")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.NL.LinkDel(l); err != nil {
		t.Fatal(err)
	}
	fake.lost <- struct{}{}
	nstest.WaitFor(t, 5*time.Second, "FAULT with the tracked ddt gone", func() bool { return na.state(t) == Fault })
}
