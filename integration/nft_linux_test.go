package integration

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"

	"github.com/directord/directord/internal/nstest"
)

// nftView is what nft list table ip NAME would show, in words: each
// chain's hook, priority and policy with its rules' expression types,
// and the set's elements.
func nftView(t *testing.T, ns *nstest.NS, fam nftables.TableFamily, table string) (chains string, vips []netip.Addr, ok bool) {
	t.Helper()
	ns.Do(t, func() {
		c, err := nftables.New()
		if err != nil {
			t.Fatal(err)
		}
		tb, err := c.ListTableOfFamily(table, fam)
		if err != nil {
			return
		}
		ok = true
		chs, err := c.ListChainsOfTableFamily(fam)
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		for _, ch := range chs {
			if ch.Table.Name != tb.Name {
				continue
			}
			line := "chain " + ch.Name
			if ch.Hooknum != nil {
				line += fmt.Sprintf(" type %s hook %d priority %d policy %d", ch.Type, *ch.Hooknum, *ch.Priority, *ch.Policy)
			}
			line += ":"
			rules, err := c.GetRules(tb, ch)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rules {
				for _, e := range r.Exprs {
					if _, ok := e.(*expr.Counter); ok {
						line += " counter" // its values are the traffic's
						continue
					}
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
			a, _ := netip.AddrFromSlice(e.Key)
			vips = append(vips, a)
		}
		if nd, err := c.GetSetByName(tb, "neighbor-discovery"); err == nil {
			els, err := c.GetSetElements(nd)
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			for _, e := range els {
				keys = append(keys, fmt.Sprint(e.Key))
			}
			sort.Strings(keys)
			chains += fmt.Sprintf("\nset neighbor-discovery constant %v: %v", nd.Constant, keys)
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
	for i, tc := range []struct {
		name   string
		fam    nftables.TableFamily
		vip    string
		global string // in global_defs, beside vrrp_strict
		table  string
	}{
		{"IPv4", nftables.TableFamilyIPv4, "192.0.2.100/24", "nftables_counters", "keepalived"},
		{"IPv6", nftables.TableFamilyIPv6, "2001:db8::100/64", "nftables_counters", "keepalived"},
		{"named, with priority", nftables.TableFamilyIPv4, "192.0.2.100/24", "nftables lb\n    nftables_priority -5", "lb"},
		{"vrrp_iptables", nftables.TableFamilyIPv4, "192.0.2.100/24", "vrrp_iptables IN OUT", "keepalived"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := nstest.New(t, fmt.Sprintf("dd-nft-a%d", i))
			b := nstest.New(t, fmt.Sprintf("dd-nft-b%d", i))
			nstest.Link(t, a, b, "dfa", "dfb", "192.0.2.1/24 2001:db8::1/64", "192.0.2.2/24 2001:db8::2/64")
			vip := netip.MustParsePrefix(tc.vip).Addr()
			global := "global_defs {\n    vrrp_strict\n    " + tc.global + "\n}\n"
			d := startDirectord(t, a, global+nstest.Instance("dfa", 150, 3, "0.1", tc.vip, ""))
			nstest.Keepalived(t, b, global+nstest.Instance("dfb", 100, 3, "0.1", tc.vip, ""))
			nstest.WaitFor(t, 5*time.Second, "directord master", func() bool { return a.HasAddr(t, "dfa", vip.String()) })
			var ours string
			nstest.WaitFor(t, 2*time.Second, "directord's table with the VIP", func() bool {
				chains, vips, ok := nftView(t, a, tc.fam, tc.table)
				ours = chains
				return ok && len(vips) == 1 && vips[0] == vip
			})
			// keepalived may have been master for a moment at its start,
			// until directord's adverts: it then leaves (its table stays,
			// empty).
			nstest.WaitFor(t, 3*time.Second, "keepalived backup, dropping nothing", func() bool {
				_, vips, _ := nftView(t, b, tc.fam, tc.table)
				return len(vips) == 0 && !b.HasAddr(t, "dfb", vip.String())
			})
			d.Signal(syscall.SIGTERM)
			nstest.WaitFor(t, 3*time.Second, "keepalived master", func() bool { return b.HasAddr(t, "dfb", vip.String()) })
			var theirs string
			nstest.WaitFor(t, 2*time.Second, "keepalived's table with the VIP", func() bool {
				chains, vips, ok := nftView(t, b, tc.fam, tc.table)
				theirs = chains
				return ok && len(vips) == 1 && vips[0] == vip
			})
			if ours != theirs {
				t.Errorf("directord's table:\n%s\nkeepalived's:\n%s", ours, theirs)
			}
			if !d.Wait(5 * time.Second) {
				t.Fatal("directord did not exit")
			}
			if _, _, ok := nftView(t, a, tc.fam, tc.table); ok {
				t.Error("directord left its table at stop")
			}
			t.Logf("both:\n%s", ours)
		})
	}
}

// TestReloadMovesDrops: a reload that gives a master accept mode ends
// its drops, and one that takes it back drops again, the VIP held
// throughout (the reload's takeover moves the rules with it).
func TestReloadMovesDrops(t *testing.T) {
	nstest.RequireRoot(t)
	a := nstest.New(t, "dd-nft-r")
	b := nstest.New(t, "dd-nft-rb")
	nstest.Link(t, a, b, "dra", "drb", "192.0.2.1/24", "192.0.2.2/24")
	file := filepath.Join(t.TempDir(), "keepalived.conf")
	write := func(extra string) {
		if err := os.WriteFile(file, []byte(nstest.Instance("dra", 150, 3, "0.1", "192.0.2.100/24", extra)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("no_accept")
	d := nstest.Start(t, a, binary, "-n", "-l", "-f", file, "--control-socket", "none")
	vip := netip.MustParseAddr("192.0.2.100")
	drops := func(want bool) func() bool {
		return func() bool {
			_, vips, _ := nftView(t, a, nftables.TableFamilyIPv4, "keepalived")
			return (len(vips) == 1 && vips[0] == vip) == want
		}
	}
	nstest.WaitFor(t, 5*time.Second, "master dropping its VIP", func() bool { return a.HasAddr(t, "dra", "192.0.2.100") && drops(true)() })
	removals := vipGone(t, a, "192.0.2.100")
	write("accept")
	d.Signal(syscall.SIGHUP)
	nstest.WaitFor(t, 5*time.Second, "accept mode: no drop", drops(false))
	write("no_accept")
	d.Signal(syscall.SIGHUP)
	nstest.WaitFor(t, 5*time.Second, "no accept mode again: the VIP dropped", drops(true))
	if !a.HasAddr(t, "dra", "192.0.2.100") || !removals().IsZero() {
		t.Error("the reloads took the VIP away")
	}
}
