package vrrp

import (
	"fmt"
	"testing"
	"time"

	"github.com/directord/directord/internal/nstest"
)

// TestVMACRenamed: a use_vmac master's macvlan renamed under it (ip link
// set vrrp.51 name ...) is the loss of vrrp.51, as keepalived's "Interface
// name has changed": the instance is in FAULT and its VIP leaves the
// renamed link. The renamed link keeps the VMAC, and the kernel lets one
// macvlan of dda up with it: no vrrp.51 is made while the renamed one is
// up; once it is deleted, or set down, vrrp.51 is made again and the
// instance is master on it, its VIP there and its adverts heard; renamed
// back, it is taken again. With
// vmac_xmit_base too, where the socket is on dda and only the tracking of
// the macvlan sees the rename.
func TestVMACRenamed(t *testing.T) {
	nstest.RequireRoot(t)
	for i, extra := range []string{"use_vmac", "use_vmac\n vmac_xmit_base"} {
		t.Run(fmt.Sprintf("%q", extra), func(t *testing.T) {
			a := nstest.New(t, fmt.Sprintf("dd-vmren-a%d", i))
			b := nstest.New(t, fmt.Sprintf("dd-vmren-b%d", i))
			nstest.Link(t, a, b, "dda", "ddb", "192.0.2.1/24", "192.0.2.2/24")
			na := startNode(t, a, nstest.Instance("dda", 200, 3, "0.5", "192.0.2.100/24", extra))
			master := func(what string) {
				t.Helper()
				adverts := nstest.WatchVRRP(t, b, "ddb")
				since := time.Now()
				nstest.WaitFor(t, 15*time.Second, what, func() bool {
					if _, err := a.NL.LinkByName("vrrp.51"); err != nil {
						return false
					}
					return na.state(t) == Master && a.HasAddr(t, "vrrp.51", "192.0.2.100") && adverts.Count("192.0.2.1", since) >= 2
				})
			}
			rename := func(to string) {
				t.Helper()
				mv := macvlan(t, a, "vrrp.51")
				if err := a.NL.LinkSetName(mv, to); err != nil {
					t.Fatal(err)
				}
				nstest.WaitFor(t, 5*time.Second, "FAULT, the VIP off "+to, func() bool {
					return na.state(t) == Fault && !a.HasAddr(t, to, "192.0.2.100")
				})
				nstest.HoldFor(t, time.Second, "FAULT without vrrp.51 while "+to+" holds the VMAC", func() bool {
					return na.state(t) == Fault && macvlan(t, a, "vrrp.51") == nil
				})
			}
			master("master on its macvlan")

			rename("ddren")
			if err := a.NL.LinkDel(macvlan(t, a, "ddren")); err != nil {
				t.Fatal(err)
			}
			master("master again on vrrp.51 made again after the renamed one's deletion")

			rename("ddren2")
			if err := a.NL.LinkSetDown(macvlan(t, a, "ddren2")); err != nil {
				t.Fatal(err)
			}
			master("master again on vrrp.51 made again after the renamed one went down")

			index := macvlan(t, a, "vrrp.51").Index
			rename("ddren3")
			if err := a.NL.LinkSetName(macvlan(t, a, "ddren3"), "vrrp.51"); err != nil {
				t.Fatal(err)
			}
			master("master again on vrrp.51 renamed back")
			if mv := macvlan(t, a, "vrrp.51"); mv.Index != index {
				t.Errorf("vrrp.51 renamed back is index %d, want the same link (%d)", mv.Index, index)
			}
			na.stop()
			if macvlan(t, a, "vrrp.51") != nil {
				t.Error("vrrp.51 is left after the stop")
			}
		})
	}
}
