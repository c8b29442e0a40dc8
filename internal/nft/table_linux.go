package nft

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"sync"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// Options are global_defs' nftables settings.
type Options struct {
	Table    string // nftables NAME; keepalived's default "keepalived"
	Priority int32  // nftables_priority; keepalived's default -1
	Counters bool   // nftables_counters
}

// Table is the VRRP drop table. Its methods are safe for concurrent use.
type Table struct {
	o    Options
	mu   sync.Mutex
	made bool               // the table exists (made at the first address, as keepalived)
	vips map[netip.Addr]int // addresses in the set, and how many users each has
}

// Open prepares the table o.Table: a table of that name left by an
// earlier run (a crash) is deleted, as keepalived does at its start. The
// table itself is made with the first address.
func Open(o Options) (*Table, error) {
	t := &Table{o: o, vips: map[netip.Addr]int{}}
	if err := t.deleteTable(); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *Table) conn() (*nftables.Conn, error) {
	c, err := nftables.New()
	if err != nil {
		return nil, fmt.Errorf("nftables: %w", err)
	}
	return c, nil
}

func (t *Table) table() *nftables.Table {
	return &nftables.Table{Family: nftables.TableFamilyIPv4, Name: t.o.Table}
}

func (t *Table) set() *nftables.Set {
	return &nftables.Set{Table: t.table(), Name: "vips", KeyType: nftables.TypeIPAddr}
}

// deleteTable removes table ip NAME if it exists.
func (t *Table) deleteTable() error {
	c, err := t.conn()
	if err != nil {
		return err
	}
	if _, err := c.ListTableOfFamily(t.o.Table, nftables.TableFamilyIPv4); err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ENOENT) {
			return nil
		}
		return fmt.Errorf("nftables: list table ip %s: %w", t.o.Table, err)
	}
	c.DelTable(t.table())
	if err := c.Flush(); err != nil {
		return fmt.Errorf("nftables: delete table ip %s: %w", t.o.Table, err)
	}
	return nil
}

// rule is "ip daddr @vips [counter] drop" (saddr for the out chain):
// the payload's offset is that of the IPv4 header's field.
func (t *Table) rule(ch *nftables.Chain, set *nftables.Set, saddr bool) *nftables.Rule {
	off := uint32(16) // daddr
	if saddr {
		off = 12
	}
	exprs := []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: 4},
		&expr.Lookup{SourceRegister: 1, SetName: set.Name, SetID: set.ID},
	}
	if t.o.Counters {
		exprs = append(exprs, &expr.Counter{})
	}
	exprs = append(exprs, &expr.Verdict{Kind: expr.VerdictDrop})
	return &nftables.Rule{Table: ch.Table, Chain: ch, Exprs: exprs}
}

// make adds the table, its chains, set and rules, in one batch, as
// keepalived's nft_setup_ipv4 and nft_setup_ipv4_vips.
func (t *Table) make(c *nftables.Conn) error {
	tb := c.AddTable(t.table())
	prio := nftables.ChainPriority(t.o.Priority)
	accept := nftables.ChainPolicyAccept
	out := c.AddChain(&nftables.Chain{Name: "out", Table: tb, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookOutput, Priority: &prio, Policy: &accept})
	in := c.AddChain(&nftables.Chain{Name: "in", Table: tb, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookInput, Priority: &prio, Policy: &accept})
	set := t.set()
	if err := c.AddSet(set, nil); err != nil {
		return fmt.Errorf("nftables: set vips: %w", err)
	}
	c.AddRule(t.rule(in, set, false))
	c.AddRule(t.rule(out, set, true))
	return nil
}

func elements(addrs []netip.Addr) []nftables.SetElement {
	var es []nftables.SetElement
	for _, a := range addrs {
		b := a.As4()
		es = append(es, nftables.SetElement{Key: b[:]})
	}
	return es
}

// Drop starts (on) or stops dropping the traffic to and from addrs:
// an instance's IPv4 virtual addresses, as it becomes master or leaves
// it. An address two instances drop stays until both stop. Other than
// IPv4 addresses are skipped.
func (t *Table) Drop(addrs []netip.Addr, on bool) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var change []netip.Addr
	for _, a := range addrs {
		a = a.Unmap()
		if !a.Is4() {
			continue
		}
		switch {
		case on:
			if t.vips[a]++; t.vips[a] == 1 {
				change = append(change, a)
			}
		case t.vips[a] > 0:
			if t.vips[a]--; t.vips[a] == 0 {
				delete(t.vips, a)
				change = append(change, a)
			}
		}
	}
	if len(change) == 0 {
		return nil
	}
	slices.SortFunc(change, netip.Addr.Compare)
	c, err := t.conn()
	if err != nil {
		return err
	}
	if on && !t.made {
		if err := t.make(c); err != nil {
			return err
		}
	}
	if on {
		err = c.SetAddElements(t.set(), elements(change))
	} else {
		err = c.SetDeleteElements(t.set(), elements(change))
	}
	if err == nil {
		err = c.Flush()
	}
	if err != nil {
		return fmt.Errorf("nftables: table ip %s: %s %v: %w", t.o.Table, map[bool]string{true: "add", false: "remove"}[on], change, err)
	}
	if on {
		t.made = true
	}
	return nil
}

// Close deletes the table, as keepalived does at its stop.
func (t *Table) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.made {
		return nil
	}
	t.made = false
	clear(t.vips)
	return t.deleteTable()
}
