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

// vmacTableView is table ip6 NAME in words, as nft would list it: each
// chain with its hook, priority, policy and rules' expressions, and each
// set or map with its key and data types and how many elements it has
// (their interface indexes differ between namespaces).
func vmacTableView(t *testing.T, ns *nstest.NS, table string) (view string, ok bool) {
	t.Helper()
	ns.Do(t, func() {
		c, err := nftables.New()
		if err != nil {
			t.Fatal(err)
		}
		tb, err := c.ListTableOfFamily(table, nftables.TableFamilyIPv6)
		if err != nil {
			return
		}
		ok = true
		chs, err := c.ListChainsOfTableFamily(nftables.TableFamilyIPv6)
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

// TestVMACTableLikeKeepalived: the directord binary with an IPv6
// use_vmac instance keeps keepalived 2.2.7's table ip6 keepalived for
// its macvlan, unasked, as keepalived does beside it (chains, rules
// expression for expression, the map and set with one element each),
// from before the macvlan comes up; the table is gone after the stop.
func TestVMACTableLikeKeepalived(t *testing.T) {
	nstest.RequireRoot(t)
	a := nstest.New(t, "dd-vnft-a")
	b := nstest.New(t, "dd-vnft-b")
	nstest.Link(t, a, b, "dfa", "dfb", "2001:db8::1/64", "2001:db8::2/64")
	d := startDirectord(t, a, nstest.Instance("dfa", 150, 3, "0.1", "2001:db8::100/64", "use_vmac"))
	nstest.Keepalived(t, b, nstest.Instance("dfb", 100, 3, "0.1", "2001:db8::100/64", "use_vmac"))
	var ours, theirs string
	nstest.WaitFor(t, 10*time.Second, "both tables with the macvlan", func() bool {
		var ok1, ok2 bool
		ours, ok1 = vmacTableView(t, a, "keepalived")
		theirs, ok2 = vmacTableView(t, b, "keepalived")
		return ok1 && ok2 && strings.Contains(ours, "1 elements") && strings.Contains(theirs, "1 elements")
	})
	if ours != theirs {
		t.Errorf("directord's table:\n%s\nkeepalived's:\n%s", ours, theirs)
	}
	d.Signal(syscall.SIGTERM)
	if !d.Wait(5 * time.Second) {
		t.Fatal("directord did not exit")
	}
	if _, ok := vmacTableView(t, a, "keepalived"); ok {
		t.Error("directord left its table at stop")
	}
	t.Logf("both:\n%s", ours)
}
