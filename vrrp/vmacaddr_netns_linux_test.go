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
