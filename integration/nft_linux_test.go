package integration

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/nftables"

	"github.com/directord/directord/internal/nstest"
)

// nftView is what nft list table ip NAME would show, in words: each
// chain's hook, priority and policy with its rules' expression types,
// and the set's elements.
func nftView(t *testing.T, ns *nstest.NS, table string) (chains string, vips []netip.Addr, ok bool) {
	t.Helper()
	ns.Do(t, func() {
		c, err := nftables.New()
		if err != nil {
			t.Fatal(err)
		}
		tb, err := c.ListTableOfFamily(table, nftables.TableFamilyIPv4)
		if err != nil {
			return
		}
		ok = true
		chs, err := c.ListChainsOfTableFamily(nftables.TableFamilyIPv4)
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		for _, ch := range chs {
			if ch.Table.Name != tb.Name {
				continue
			}
			line := fmt.Sprintf("chain %s type %s hook %d priority %d policy %d:", ch.Name, ch.Type, *ch.Hooknum, *ch.Priority, *ch.Policy)
			rules, err := c.GetRules(tb, ch)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rules {
				for _, e := range r.Exprs {
					line += fmt.Sprintf(" %T%+v", e, e)
				}
			}
			lines = append(lines, line)
		}
		sort.Strings(lines)
		chains = strings.Join(lines, "\n")
		set, err := c.GetSetByName(tb, "vips")
		if err != nil {
			t.Fatal(err)
		}
		els, err := c.GetSetElements(set)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range els {
			vips = append(vips, netip.AddrFrom4([4]byte(e.Key)))
		}
	})
	return chains, vips, ok
}

// TestStrictDropsLikeKeepalived: with vrrp_strict (no accept mode), the
// master drops traffic to and from its VIPs through an nftables table,
// as keepalived 2.2.7 does without being told to. directord as master,
// keepalived as backup with the same global_defs; then directord stops,
// keepalived takes over and makes its table: both tables are the same
// (chains, hooks, priorities, rules, the VIP in set vips), and
// directord's is gone with it.
func TestStrictDropsLikeKeepalived(t *testing.T) {
	nstest.RequireRoot(t)
	a := nstest.New(t, "dd-nft-a")
	b := nstest.New(t, "dd-nft-b")
	nstest.Link(t, a, b, "dfa", "dfb", "192.0.2.1/24", "192.0.2.2/24")
	global := "global_defs {\n    vrrp_strict\n    nftables_counters\n}\n"
	d := startDirectord(t, a, global+nstest.Instance("dfa", 150, 3, "0.1", "192.0.2.100/24", ""))
	nstest.Keepalived(t, b, global+nstest.Instance("dfb", 100, 3, "0.1", "192.0.2.100/24", ""))
	nstest.WaitFor(t, 5*time.Second, "directord master", func() bool { return a.HasAddr(t, "dfa", "192.0.2.100") })
	var ours string
	nstest.WaitFor(t, 2*time.Second, "directord's table with the VIP", func() bool {
		chains, vips, ok := nftView(t, a, "keepalived")
		ours = chains
		return ok && len(vips) == 1 && vips[0] == netip.MustParseAddr("192.0.2.100")
	})
	if _, _, ok := nftView(t, b, "keepalived"); ok {
		t.Error("keepalived made a table as backup")
	}
	d.Signal(syscall.SIGTERM)
	nstest.WaitFor(t, 3*time.Second, "keepalived master", func() bool { return b.HasAddr(t, "dfb", "192.0.2.100") })
	var theirs string
	nstest.WaitFor(t, 2*time.Second, "keepalived's table with the VIP", func() bool {
		chains, vips, ok := nftView(t, b, "keepalived")
		theirs = chains
		return ok && len(vips) == 1 && vips[0] == netip.MustParseAddr("192.0.2.100")
	})
	if ours != theirs {
		t.Errorf("directord's table:\n%s\nkeepalived's:\n%s", ours, theirs)
	}
	if !d.Wait(5 * time.Second) {
		t.Fatal("directord did not exit")
	}
	if _, _, ok := nftView(t, a, "keepalived"); ok {
		t.Error("directord left its table at stop")
	}
	t.Logf("both:\n%s", ours)
}
