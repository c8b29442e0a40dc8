package vrrp

import (
	"log/slog"
	"maps"
	"net/netip"
	"slices"
	"testing"

	"github.com/directord/directord/internal/nstest"
)

// fakeVMACFirewall records the firewall's macvlan elements.
type fakeVMACFirewall struct{ elems map[[2]int]bool }

func (f *fakeVMACFirewall) Drop([]netip.Addr, bool) error { return nil }

func (f *fakeVMACFirewall) VMAC(index, base int, v6, on bool) error {
	if on {
		f.elems[[2]int{index, base}] = true
	} else {
		delete(f.elems, [2]int{index, base})
	}
	return nil
}

// TestRemoveVMACsFirewall: the stop takes every macvlan's element out of
// the firewall's table (vmac_map, vmac_set), the macvlan already gone
// (deleted under directord) or not a macvlan any more included, so that
// no stale index stays there.
func TestRemoveVMACsFirewall(t *testing.T) {
	nstest.RequireRoot(t)
	a := nstest.New(t, "dd-vmfw-a")
	b := nstest.New(t, "dd-vmfw-b")
	nstest.Link(t, a, b, "dda", "ddb", "192.0.2.1/24", "192.0.2.2/24")
	fw := &fakeVMACFirewall{elems: map[[2]int]bool{{41, 7}: true, {42, 7}: true}}
	n := &Node{h: a.NL, fw: fw, log: slog.New(slog.DiscardHandler), vmacs: []*vmacLink{
		{name: "vrrp.51", base: "ddx", baseIndex: 7, fwIndex: 41, created: true}, // gone
		{name: "dda", base: "ddx", baseIndex: 7, fwIndex: 42, created: true},     // a veth now
	}}
	if err := n.removeVMACs(true); err != nil {
		t.Fatal(err)
	}
	if len(fw.elems) != 0 {
		t.Errorf("elements left in the firewall's table %v, want none", slices.Collect(maps.Keys(fw.elems)))
	}
	if _, err := a.NL.LinkByName("dda"); err != nil {
		t.Errorf("dda, not a macvlan, was removed: %v", err)
	}
}
