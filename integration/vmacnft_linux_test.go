package integration

import (
	"fmt"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"

	"github.com/directord/directord/internal/nstest"
)

// vmacTableView is table ip6 NAME (ip NAME: v4) in words, as nft would list it: each
// chain with its hook, priority, policy and rules' expressions, and each
// set or map with its key and data types and how many elements it has
// (their interface indexes differ between namespaces).
func vmacTableView(t *testing.T, ns *nstest.NS, table string, v4 bool) (view string, ok bool) {
	t.Helper()
	fam := nftables.TableFamilyIPv6
	if v4 {
		fam = nftables.TableFamilyIPv4
	}
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
			rules, err := c.GetRules(tb, ch)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rules {
				line += "\n rule:"
				for _, e := range r.Exprs {
					if _, ok := e.(*expr.Counter); ok {
						line += " counter"
						continue
					}
					line += fmt.Sprintf(" %T%+v", e, e)
				}
			}
			lines = append(lines, line)
		}
		sets, err := c.GetSets(tb)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range sets {
			els, err := c.GetSetElements(s)
			if err != nil {
				t.Fatal(err)
			}
			lines = append(lines, fmt.Sprintf("set %s map %v key %s data %s: %d elements", s.Name, s.IsMap, s.KeyType.Name, s.DataType.Name, len(els)))
		}
		sort.Strings(lines)
		view = strings.Join(lines, "\n")
	})
	return view, ok
}

// TestVMACTableLikeKeepalived: the directord binary with an IPv6 or an
// IPv4 use_vmac instance keeps keepalived 2.2.7's table ip6 keepalived
// (ip keepalived: the IGMP rule, a map and no set) for its macvlan,
// unasked, as keepalived does beside it (chains, rules expression for
// expression, the map and set with one element each), from before the
// macvlan comes up, and not the other family's; the table is gone after
// the stop.
func TestVMACTableLikeKeepalived(t *testing.T) {
	nstest.RequireRoot(t)
	for i, tt := range []struct {
		name           string
		v4             bool
		addrA, addrB   string
		vip            string
		elements, sets int
	}{
		{"IPv6", false, "2001:db8::1/64", "2001:db8::2/64", "2001:db8::100/64", 2, 2},
		{"IPv4", true, "192.0.2.1/24", "192.0.2.2/24", "192.0.2.100/24", 1, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := nstest.New(t, fmt.Sprintf("dd-vnft-a%d", i))
			b := nstest.New(t, fmt.Sprintf("dd-vnft-b%d", i))
			nstest.Link(t, a, b, "dfa", "dfb", tt.addrA, tt.addrB)
			d := startDirectord(t, a, nstest.Instance("dfa", 150, 3, "0.1", tt.vip, "use_vmac"))
			nstest.Keepalived(t, b, nstest.Instance("dfb", 100, 3, "0.1", tt.vip, "use_vmac"))
			var ours, theirs string
			nstest.WaitFor(t, 10*time.Second, "both tables with the macvlan", func() bool {
				var ok1, ok2 bool
				ours, ok1 = vmacTableView(t, a, "keepalived", tt.v4)
				theirs, ok2 = vmacTableView(t, b, "keepalived", tt.v4)
				return ok1 && ok2 && strings.Count(ours, " 1 elements") == tt.elements && strings.Count(theirs, " 1 elements") == tt.elements
			})
			if ours != theirs {
				t.Errorf("directord's table:\n%s\nkeepalived's:\n%s", ours, theirs)
			}
			if got := strings.Count("\n"+ours, "\nset "); got != tt.sets {
				t.Errorf("%d sets and maps in directord's table, want %d:\n%s", got, tt.sets, ours)
			}
			if other, ok := vmacTableView(t, a, "keepalived", !tt.v4); ok {
				t.Errorf("directord made the other family's table too:\n%s", other)
			}
			d.Signal(syscall.SIGTERM)
			if !d.Wait(5 * time.Second) {
				t.Fatal("directord did not exit")
			}
			if _, ok := vmacTableView(t, a, "keepalived", tt.v4); ok {
				t.Error("directord left its table at stop")
			}
			t.Logf("both:\n%s", ours)
		})
	}
}
