package nft

import (
	"errors"
	"net"
	"net/netip"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/google/nftables"
	"github.com/vishvananda/netlink"

	"github.com/directord/directord/internal/ipvstest"
	"github.com/directord/directord/internal/nstest"
)

// TestTableDrops: in a namespace of its own, a VIP on lo takes traffic;
// once dropped, a datagram from it is refused by the out chain (EPERM);
// the table is keepalived's (in and out chains at priority -1, set vips);
// after Drop(off) traffic flows again, and Close removes the table. A
// table left by an earlier run is deleted by Open.
func TestTableDrops(t *testing.T) {
	nstest.RequireRoot(t)
	ns := nstest.New(t, "dd-nft")
	lo, err := ns.NL.LinkByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	a, _ := netlink.ParseAddr("192.0.2.100/32")
	if err := ns.NL.AddrAdd(lo, a); err != nil {
		t.Fatal(err)
	}
	vip := netip.MustParseAddr("192.0.2.100")
	send := func() error {
		c, err := net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.IP(vip.AsSlice()), Port: 9})
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Write([]byte("x"))
		return err
	}
	ns.Do(t, func() {
		// A leftover of a killed run, deleted by Open.
		c, _ := nftables.New()
		c.AddTable(&nftables.Table{Family: nftables.TableFamilyIPv4, Name: "keepalived"})
		if err := c.Flush(); err != nil {
			t.Fatal(err)
		}
		tb, err := Open(Options{Table: "keepalived", Priority: -1, Counters: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.ListTableOfFamily("keepalived", nftables.TableFamilyIPv4); err == nil {
			t.Error("Open left the old table")
		}
		if err := send(); err != nil {
			t.Fatalf("before Drop: %v", err)
		}
		if err := tb.Drop([]netip.Addr{vip, netip.MustParseAddr("2001:db8::1")}, true); err != nil {
			t.Fatal(err)
		}
		if err := send(); !errors.Is(err, syscall.EPERM) {
			t.Errorf("sent from a dropped VIP: %v, want EPERM", err)
		}
		table := &nftables.Table{Family: nftables.TableFamilyIPv4, Name: "keepalived"}
		for _, name := range []string{"in", "out"} {
			ch, err := c.ListChain(table, name)
			if err != nil {
				t.Fatalf("chain %s: %v", name, err)
			}
			if ch.Type != nftables.ChainTypeFilter || ch.Priority == nil || *ch.Priority != -1 || ch.Policy == nil || *ch.Policy != nftables.ChainPolicyAccept {
				t.Errorf("chain %s: type %v priority %v policy %v", name, ch.Type, ch.Priority, ch.Policy)
			}
			rules, err := c.GetRules(table, ch)
			if err != nil || len(rules) != 1 || len(rules[0].Exprs) != 4 {
				t.Errorf("chain %s: rules %v, %v; want one of 4 expressions (payload, lookup, counter, drop)", name, rules, err)
			}
		}
		set, err := c.GetSetByName(table, "vips")
		if err != nil {
			t.Fatal(err)
		}
		els, err := c.GetSetElements(set)
		if err != nil || len(els) != 1 || netip.AddrFrom4([4]byte(els[0].Key)) != vip {
			t.Errorf("set vips: %v, %v; want only %s", els, err, vip)
		}
		// A second user of the address: it stays until both stop.
		tb.Drop([]netip.Addr{vip}, true)
		tb.Drop([]netip.Addr{vip}, false)
		if err := send(); !errors.Is(err, syscall.EPERM) {
			t.Errorf("one of two users stopped: %v, want EPERM", err)
		}
		tb.Drop([]netip.Addr{vip}, false)
		if err := send(); err != nil {
			t.Errorf("after Drop(off): %v", err)
		}
		if err := tb.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := c.ListTableOfFamily("keepalived", nftables.TableFamilyIPv4); err == nil {
			t.Error("Close left the table")
		}
	})
}

// TestTableVMAC: VMAC makes keepalived 2.2.7's table for a macvlan of
// either family, as nft lists keepalived's own (taken in a namespace with
// keepalived and use_vmac, IPv4 and IPv6 instances): for IPv6 the out
// chain at the priority given, the macvlan and its interface in vmac_map
// and vmac_set, the MLD report rule that sends them from the interface and
// the router solicitation rule (TestVMACNoMLD sends through it); for IPv4
// table ip with vmac_map only and the IGMP report rule (TestVMACNoIGMP),
// here under nftables_counters and another priority, the other family's
// table not made. The IPv4 VIPs' drop rules (no accept mode) go after the
// IGMP rule in the same out chain, as keepalived's. Removed, the elements
// go; Close removes both tables.
func TestTableVMAC(t *testing.T) {
	nstest.RequireRoot(t)
	ipvstest.RequireCommand(t, "nft")
	ns := nstest.New(t, "dd-nftv")
	if err := ns.NL.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "d0"}, PeerName: "d1"}); err != nil {
		t.Fatal(err)
	}
	d0, err := ns.NL.LinkByName("d0")
	if err != nil {
		t.Fatal(err)
	}
	if err := ns.NL.LinkAdd(&netlink.Macvlan{LinkAttrs: netlink.LinkAttrs{Name: "vrrp.51", ParentIndex: d0.Attrs().Index},
		Mode: netlink.MACVLAN_MODE_PRIVATE}); err != nil {
		t.Fatal(err)
	}
	mv, err := ns.NL.LinkByName("vrrp.51")
	if err != nil {
		t.Fatal(err)
	}
	list := func(fam string) string {
		out, _ := exec.Command("ip", "netns", "exec", ns.Name, "nft", "list", "table", fam, "keepalived").CombinedOutput()
		return string(out)
	}
	wants := func(got string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("nft lists no %q in:\n%s", w, got)
			}
		}
	}
	// keepalived's lists "d0" for the data: the nftables package writes
	// no data byte order for nft to show it by, and nft shows the number
	// (the kernel reads it in host order alike).
	const elem = `elements = { "vrrp.51" : `
	for _, tt := range []struct {
		fam  string
		o    Options
		want []string
	}{
		{"ip6", Options{Table: "keepalived", Priority: -1}, []string{
			"type filter hook output priority filter - 1; policy accept;",
			elem, `elements = { "vrrp.51" }`,
			`icmpv6 type mld2-listener-report meta oifkind "macvlan" dup to ip6 daddr device oif map @vmac_map drop`,
			`icmpv6 type nd-router-solicit meta oifkind "macvlan" oif @vmac_set drop`,
		}},
		{"ip", Options{Table: "keepalived", Priority: -5, Counters: true}, []string{
			"type filter hook output priority filter - 5; policy accept;",
			elem,
			`ip protocol igmp meta oifkind "macvlan" dup to ip daddr device oif map @vmac_map counter packets 0 bytes 0 drop`,
		}},
	} {
		t.Run(tt.fam, func(t *testing.T) {
			v6 := tt.fam == "ip6"
			other := map[bool]string{true: "ip", false: "ip6"}[v6]
			var tb *Table
			ns.Do(t, func() {
				if tb, err = Open(tt.o); err == nil {
					err = tb.VMAC(mv.Attrs().Index, d0.Attrs().Index, v6, true)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			got := list(tt.fam)
			wants(got, tt.want...)
			if !v6 && strings.Contains(got, "vmac_set") {
				t.Errorf("table ip has a vmac_set, which keepalived's has not:\n%s", got)
			}
			if got := list(other); strings.Contains(got, "chain") {
				t.Errorf("table %s keepalived made for a macvlan of the other family:\n%s", other, got)
			}
			if !v6 {
				ns.Do(t, func() { err = tb.Drop([]netip.Addr{netip.MustParseAddr("192.0.2.100")}, true) })
				if err != nil {
					t.Fatal(err)
				}
				got := list(tt.fam)
				igmp, vips := strings.Index(got, "ip protocol igmp"), strings.Index(got, "ip saddr @vips")
				if igmp < 0 || vips < igmp {
					t.Errorf("want the IGMP rule, then the VIPs' drop, in the out chain:\n%s", got)
				}
				wants(got, "ip daddr @vips counter packets 0 bytes 0 drop", elem)
			}
			ns.Do(t, func() { err = tb.VMAC(mv.Attrs().Index, d0.Attrs().Index, v6, false) })
			if err != nil {
				t.Fatal(err)
			}
			if got := list(tt.fam); strings.Contains(got, "vrrp.51") || !strings.Contains(got, "vmac_map") {
				t.Errorf("the macvlan is left in the table, or the map gone:\n%s", got)
			}
			ns.Do(t, func() { err = tb.Close() })
			if err != nil {
				t.Fatal(err)
			}
			if got := list(tt.fam); strings.Contains(got, "chain out") {
				t.Errorf("the table is left after Close:\n%s", got)
			}
		})
	}
}
