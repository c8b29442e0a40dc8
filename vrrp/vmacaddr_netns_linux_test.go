package vrrp

import (
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/directord/directord/internal/nstest"
)

// TestUseVMACAddr: with use_vmac_addr, an address on another interface
// goes on a private macvlan of that interface with the instance's
// virtual MAC (vrrp.VRID, keepalived's create_vmac_name), made at start,
// holding the address while master, and removed at the stop; the address
// on the instance's interface stays there.
func TestUseVMACAddr(t *testing.T) {
	nstest.RequireRoot(t)
	a := nstest.New(t, "dd-vmaddr-a")
	b := nstest.New(t, "dd-vmaddr-b")
	nstest.Link(t, a, b, "dda", "ddb", "192.0.2.1/24", "192.0.2.2/24")
	nstest.Link(t, a, b, "ddx", "ddxb", "198.51.100.1/24", "198.51.100.2/24")
	conf := `vrrp_instance VI_1 {
    interface dda
    virtual_router_id 51
    priority 200
    version 3
    advert_int 1
    use_vmac_addr
    virtual_ipaddress {
        192.0.2.100/24
        198.51.100.100/24 dev ddx
    }
}
`
	na := startNode(t, a, conf)
	l, err := a.NL.LinkByName("vrrp.51")
	if err != nil {
		t.Fatalf("no macvlan vrrp.51: %v", err)
	}
	mv, ok := l.(*netlink.Macvlan)
	if !ok {
		t.Fatalf("vrrp.51 is a %s, want a macvlan", l.Type())
	}
	parent, err := a.NL.LinkByIndex(mv.ParentIndex)
	if err != nil || parent.Attrs().Name != "ddx" {
		t.Errorf("vrrp.51's parent %v (%v), want ddx", parent, err)
	}
	if got := mv.HardwareAddr.String(); got != "00:00:5e:00:01:33" || mv.Mode != netlink.MACVLAN_MODE_PRIVATE {
		t.Errorf("vrrp.51: MAC %s mode %v, want 00:00:5e:00:01:33 private", got, mv.Mode)
	}
	nstest.WaitFor(t, 15*time.Second, "master with both VIPs", func() bool {
		return na.state(t) == Master && a.HasAddr(t, "dda", "192.0.2.100") && a.HasAddr(t, "vrrp.51", "198.51.100.100")
	})
	if a.HasAddr(t, "ddx", "198.51.100.100") {
		t.Error("the address went on ddx itself, not its macvlan")
	}
	na.stop()
	if _, err := a.NL.LinkByName("vrrp.51"); err == nil {
		t.Error("the macvlan outlived the stop")
	}
}

// TestUseVMACAddrMadeAgain: an address's macvlan (use_vmac_addr) is
// tracked, as keepalived adds the instance to it: set down under a
// master, the instance is in FAULT until it is up again. Deleted, it is
// made again (where keepalived 2.2.7 leaves the instance in FAULT, its
// recreate_vmac_thread making only an instance's own macvlan), and the
// instance is master again with the address on the new one.
func TestUseVMACAddrMadeAgain(t *testing.T) {
	nstest.RequireRoot(t)
	a := nstest.New(t, "dd-vmaddr2-a")
	b := nstest.New(t, "dd-vmaddr2-b")
	nstest.Link(t, a, b, "dda", "ddb", "192.0.2.1/24", "192.0.2.2/24")
	nstest.Link(t, a, b, "ddx", "ddxb", "198.51.100.1/24", "198.51.100.2/24")
	na := startNode(t, a, nstest.Instance("dda", 200, 3, "0.5", "192.0.2.100/24",
		"use_vmac_addr\n virtual_ipaddress_excluded {\n  198.51.100.100/24 dev ddx\n }"))
	master := func(what string) {
		t.Helper()
		nstest.WaitFor(t, 15*time.Second, what, func() bool {
			if _, err := a.NL.LinkByName("vrrp.51"); err != nil {
				return false
			}
			return na.state(t) == Master && a.HasAddr(t, "vrrp.51", "198.51.100.100")
		})
	}
	master("master with the address on vrrp.51")
	mv := macvlan(t, a, "vrrp.51")
	if err := a.NL.LinkSetDown(mv); err != nil {
		t.Fatal(err)
	}
	nstest.WaitFor(t, 5*time.Second, "FAULT with vrrp.51 down", func() bool { return na.state(t) == Fault })
	if err := a.NL.LinkSetUp(mv); err != nil {
		t.Fatal(err)
	}
	master("master again with vrrp.51 up")
	before := na.status(t).Transitions
	if err := a.NL.LinkDel(mv); err != nil {
		t.Fatal(err)
	}
	master("master again on vrrp.51 made again")
	if again := macvlan(t, a, "vrrp.51"); again.Index == mv.Index {
		t.Errorf("vrrp.51 has its old index %d", mv.Index)
	} else if p, err := a.NL.LinkByIndex(again.ParentIndex); err != nil || p.Attrs().Name != "ddx" ||
		again.HardwareAddr.String() != "00:00:5e:00:01:33" {
		t.Errorf("vrrp.51 made again on %v (%v) with %s, want on ddx with 00:00:5e:00:01:33", p, err, again.HardwareAddr)
	}
	if n := na.status(t).Transitions; n < before+2 {
		t.Errorf("%d transitions at the deletion, want FAULT and back (2)", n-before)
	}
	na.stop()
	if macvlan(t, a, "vrrp.51") != nil {
		t.Error("vrrp.51 is left after the stop")
	}
}

// TestUseVMACAddrDynamic: with dynamic_interfaces, the interface of an
// address's macvlan (use_vmac_addr) may be missing at start: the
// instance is in FAULT (the macvlan is tracked), and once the interface
// is created the macvlan is made on it and the instance is master with
// the address there.
func TestUseVMACAddrDynamic(t *testing.T) {
	nstest.RequireRoot(t)
	a := nstest.New(t, "dd-vmaddr3-a")
	b := nstest.New(t, "dd-vmaddr3-b")
	nstest.Link(t, a, b, "dda", "ddb", "192.0.2.1/24", "192.0.2.2/24")
	na := startNode(t, a, "global_defs {\n dynamic_interfaces\n}\n"+nstest.Instance("dda", 200, 3, "0.5", "192.0.2.100/24",
		"use_vmac_addr\n virtual_ipaddress_excluded {\n  198.51.100.100/24 dev ddx\n }"))
	nstest.HoldFor(t, 2*time.Second, "FAULT without ddx", func() bool { return na.state(t) == Fault })
	nstest.Link(t, a, b, "ddx", "ddxb", "198.51.100.1/24", "198.51.100.2/24")
	nstest.WaitFor(t, 15*time.Second, "master with the address on vrrp.51", func() bool {
		if _, err := a.NL.LinkByName("vrrp.51"); err != nil {
			return false
		}
		return na.state(t) == Master && a.HasAddr(t, "vrrp.51", "198.51.100.100")
	})
	if p, err := a.NL.LinkByIndex(macvlan(t, a, "vrrp.51").ParentIndex); err != nil || p.Attrs().Name != "ddx" {
		t.Errorf("vrrp.51 on %v (%v), want on ddx", p, err)
	}
	na.stop()
	if macvlan(t, a, "vrrp.51") != nil {
		t.Error("vrrp.51 is left after the stop")
	}
}
