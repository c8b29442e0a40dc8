package vrrp

import (
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"slices"
	"testing"

	"github.com/directord/directord/internal/nstest"
)

// fakeVMACFirewall records the firewall's macvlan elements: index,
// interface index, family (0 table ip, 1 table ip6).
type fakeVMACFirewall struct{ elems map[[3]int]bool }

func (f *fakeVMACFirewall) Drop([]netip.Addr, bool) error { return nil }

func (f *fakeVMACFirewall) VMAC(index, base int, v6, on bool) error {
	fam := 0
	if v6 {
		fam = 1
	}
	if on {
		f.elems[[3]int{index, base, fam}] = true
	} else {
		delete(f.elems, [3]int{index, base, fam})
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
	fw := &fakeVMACFirewall{elems: map[[3]int]bool{{41, 7, 0}: true, {41, 7, 1}: true, {42, 7, 1}: true}}
	n := &Node{h: a.NL, fw: fw, log: slog.New(slog.DiscardHandler), vmacs: []*vmacLink{
		{name: "vrrp.51", base: "ddx", baseIndex: 7, fwIndex: 41, fw: [2]bool{true, true}, created: true}, // gone
		{name: "dda", base: "ddx", baseIndex: 7, fwIndex: 42, fw: [2]bool{false, true}, created: true},    // a veth now
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

// TestFwVMACFamilies: a macvlan's elements go in the tables of the
// families asked for (an IPv4 instance with IPv6 excluded addresses:
// both), move to its new index when it is made again, and leave a table
// no longer asked for; a reload that adds disable_local_igmp (the new
// Node wants table ip6 only) takes the element out of table ip at the
// handover, and keeps the one both want.
func TestFwVMACFamilies(t *testing.T) {
	fw := &fakeVMACFirewall{elems: map[[3]int]bool{}}
	log := slog.New(slog.DiscardHandler)
	n := &Node{fw: fw, log: log, vmacs: []*vmacLink{{name: "vrrp.51", base: "eth0", baseIndex: 7}}}
	want := func(when string, elems ...[3]int) {
		t.Helper()
		got := slices.SortedFunc(maps.Keys(fw.elems), func(a, b [3]int) int { return slices.Compare(a[:], b[:]) })
		if fmt.Sprint(got) != fmt.Sprint(elems) {
			t.Errorf("%s: elements %v, want %v", when, got, elems)
		}
	}
	n.fwVMAC("vrrp.51", 41, 7, [2]bool{true, true})
	want("made", [3]int{41, 7, 0}, [3]int{41, 7, 1})
	n.fwVMAC("vrrp.51", 43, 7, [2]bool{true, true})
	want("made again", [3]int{43, 7, 0}, [3]int{43, 7, 1})
	n.fwVMAC("vrrp.51", 43, 7, [2]bool{true, false})
	want("table ip6 not asked for", [3]int{43, 7, 0})
	n.fwVMAC("vrrp.51", 43, 7, [2]bool{true, true})

	// The reload: the new Node takes the macvlan and wants table ip6 only.
	nn := &Node{fw: fw, log: log, vmacs: []*vmacLink{{name: "vrrp.51", base: "eth0", baseIndex: 7}}}
	nn.fwVMAC("vrrp.51", 43, 7, [2]bool{false, true})
	nn.takeVMACs(n)
	want("after the handover", [3]int{43, 7, 1})
	if len(n.vmacs) != 0 {
		t.Errorf("the old Node keeps %d macvlans, want none", len(n.vmacs))
	}
	nn.unfwVMAC(nn.vmacs[0])
	want("removed")
}
