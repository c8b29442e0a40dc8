package nft

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"sync"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
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
	o     Options
	mu    sync.Mutex
	made4 bool               // table ip NAME exists (made at its first address, as keepalived)
	made6 bool               // table ip6 NAME exists
	vmac  [2]bool            // table ip NAME, ip6 NAME has its vmac_map and rules (VMAC)
	vips  map[netip.Addr]int // addresses in the sets, and how many users each has
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

func family(v6 bool) nftables.TableFamily {
	if v6 {
		return nftables.TableFamilyIPv6
	}
	return nftables.TableFamilyIPv4
}

func (t *Table) table(v6 bool) *nftables.Table {
	return &nftables.Table{Family: family(v6), Name: t.o.Table}
}

func (t *Table) set(v6 bool) *nftables.Set {
	if v6 {
		return &nftables.Set{Table: t.table(true), Name: "vips", KeyType: nftables.TypeIP6Addr}
	}
	return &nftables.Set{Table: t.table(false), Name: "vips", KeyType: nftables.TypeIPAddr}
}

// deleteTable removes table ip NAME and table ip6 NAME where they exist.
func (t *Table) deleteTable() error {
	c, err := t.conn()
	if err != nil {
		return err
	}
	del := false
	for _, v6 := range []bool{false, true} {
		if _, err := c.ListTableOfFamily(t.o.Table, family(v6)); err != nil {
			if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ENOENT) {
				continue
			}
			return fmt.Errorf("nftables: list table %s: %w", t.o.Table, err)
		}
		c.DelTable(t.table(v6))
		del = true
	}
	if !del {
		return nil
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("nftables: delete table %s: %w", t.o.Table, err)
	}
	return nil
}

// counter is keepalived's add_counter: a counter under nftables_counters.
func (t *Table) counter(exprs []expr.Any) []expr.Any {
	if t.o.Counters {
		exprs = append(exprs, &expr.Counter{})
	}
	return exprs
}

// rule is "ip daddr @vips [counter] drop" (saddr for the out chain; ip6
// for the ip6 table): the payload is the header's address field.
func (t *Table) rule(ch *nftables.Chain, set *nftables.Set, v6, saddr bool) *nftables.Rule {
	off, n := uint32(16), uint32(4) // IPv4 daddr
	switch {
	case v6 && saddr:
		off, n = 8, 16
	case v6:
		off, n = 24, 16
	case saddr:
		off = 12
	}
	exprs := t.counter([]expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: n},
		&expr.Lookup{SourceRegister: 1, SetName: set.Name, SetID: set.ID},
	})
	exprs = append(exprs, &expr.Verdict{Kind: expr.VerdictDrop})
	return &nftables.Rule{Table: ch.Table, Chain: ch, Exprs: exprs}
}

// ndRule is keepalived's setup_rule_icmpv6: "icmpv6 type
// @neighbor-discovery [counter] accept", so that a master's VIPs still
// answer neighbour solicitations.
func (t *Table) ndRule(ch *nftables.Chain, nd *nftables.Set) *nftables.Rule {
	exprs := t.counter([]expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 6, Len: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_ICMPV6}},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 0, Len: 1},
		&expr.Lookup{SourceRegister: 1, SetName: nd.Name, SetID: nd.ID},
	})
	exprs = append(exprs, &expr.Verdict{Kind: expr.VerdictAccept})
	return &nftables.Rule{Table: ch.Table, Chain: ch, Exprs: exprs}
}

// linkLocalGoto is keepalived's setup_rule_range_goto: "ip6 daddr
// fe80::/10 [counter] goto in_link_local" (saddr, out_link_local).
func (t *Table) linkLocalGoto(ch *nftables.Chain, to string, saddr bool) *nftables.Rule {
	off := uint32(24)
	if saddr {
		off = 8
	}
	mask := make([]byte, 16)
	mask[0], mask[1] = 0xff, 0xc0
	ll := make([]byte, 16)
	ll[0], ll[1] = 0xfe, 0x80
	exprs := t.counter([]expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: 16},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 16, Mask: mask, Xor: make([]byte, 16)},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: ll},
	})
	exprs = append(exprs, &expr.Verdict{Kind: expr.VerdictGoto, Chain: to})
	return &nftables.Rule{Table: ch.Table, Chain: ch, Exprs: exprs}
}

// make adds a family's table, its chains, sets and rules, in one batch,
// as keepalived's nft_setup_ipv4 and nft_setup_ipv4_vips, or
// nft_setup_ipv6 and nft_setup_ipv6_vips.
func (t *Table) make(c *nftables.Conn, v6 bool) error {
	tb := c.AddTable(t.table(v6))
	prio := nftables.ChainPriority(t.o.Priority)
	accept := nftables.ChainPolicyAccept
	out := c.AddChain(&nftables.Chain{Name: "out", Table: tb, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookOutput, Priority: &prio, Policy: &accept})
	in := c.AddChain(&nftables.Chain{Name: "in", Table: tb, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookInput, Priority: &prio, Policy: &accept})
	set := t.set(v6)
	if err := c.AddSet(set, nil); err != nil {
		return fmt.Errorf("nftables: set vips: %w", err)
	}
	if v6 {
		c.AddChain(&nftables.Chain{Name: "in_link_local", Table: tb})
		c.AddChain(&nftables.Chain{Name: "out_link_local", Table: tb})
		nd := &nftables.Set{Table: tb, Name: "neighbor-discovery", KeyType: nftables.TypeICMP6Type, Constant: true}
		if err := c.AddSet(nd, []nftables.SetElement{{Key: []byte{135}}, {Key: []byte{136}}}); err != nil {
			return fmt.Errorf("nftables: set neighbor-discovery: %w", err)
		}
		c.AddRule(t.ndRule(in, nd))
		c.AddRule(t.linkLocalGoto(in, "in_link_local", false))
		c.AddRule(t.ndRule(out, nd))
		c.AddRule(t.linkLocalGoto(out, "out_link_local", true))
	}
	c.AddRule(t.rule(in, set, v6, false))
	c.AddRule(t.rule(out, set, v6, true))
	return nil
}

// metaOIFKind is NFT_META_OIFKIND (linux/netfilter/nf_tables.h), which
// the nftables package does not name.
const metaOIFKind expr.MetaKey = 27

// ifKind is an interface kind as meta oifkind compares it: IFNAMSIZ
// bytes.
func ifKind(k string) []byte {
	b := make([]byte, unix.IFNAMSIZ)
	copy(b, k)
	return b
}

// vmacRules are keepalived's setup_rule_move_igmp, and for IPv6
// setup_rule_drop_router_solicit (with nft's dup statement):
//
//	ip protocol igmp meta oifkind "macvlan" dup to ip daddr device oif map @vmac_map [counter] drop
//	icmpv6 type mld2-listener-report meta oifkind "macvlan" dup to ip6 daddr device oif map @vmac_map [counter] drop
//	icmpv6 type nd-router-solicit meta oifkind "macvlan" oif @vmac_set [counter] drop
func (t *Table) vmacRules(ch *nftables.Chain, m, set *nftables.Set, v6 bool) []*nftables.Rule {
	macvlan := []expr.Any{
		&expr.Meta{Key: metaOIFKind, Register: 2},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 2, Data: ifKind("macvlan")},
		&expr.Meta{Key: expr.MetaKeyOIF, Register: 2},
	}
	dup := func(match []expr.Any, daddr, n uint32) *nftables.Rule {
		e := append(match, &expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: daddr, Len: n})
		e = append(e, macvlan...)
		e = append(e, &expr.Lookup{SourceRegister: 2, DestRegister: 2, IsDestRegSet: true, SetName: m.Name, SetID: m.ID},
			&expr.Dup{RegAddr: 1, RegDev: 2, IsRegDevSet: true})
		e = append(t.counter(e), &expr.Verdict{Kind: expr.VerdictDrop})
		return &nftables.Rule{Table: ch.Table, Chain: ch, Exprs: e}
	}
	if !v6 {
		igmp := []expr.Any{ // the protocol field of the IPv4 header
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 9, Len: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_IGMP}},
		}
		return []*nftables.Rule{dup(igmp, 16, 4)}
	}
	icmp6 := func(typ byte) []expr.Any {
		return []expr.Any{
			&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_ICMPV6}},
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 0, Len: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{typ}},
		}
	}
	mld := dup(icmp6(143), 24, 16)       // ICMPV6_MLD2_REPORT
	rs := append(icmp6(133), macvlan...) // ND_ROUTER_SOLICIT
	rs = append(rs, &expr.Lookup{SourceRegister: 2, SetName: set.Name, SetID: set.ID})
	rs = append(t.counter(rs), &expr.Verdict{Kind: expr.VerdictDrop})
	return []*nftables.Rule{mld, {Table: ch.Table, Chain: ch, Exprs: rs}}
}

// vmacSets are a family's vmac_map and, for IPv6 only (its router
// solicitation rule), vmac_set; nil for IPv4's.
func (t *Table) vmacSets(v6 bool) (m, set *nftables.Set) {
	tb := t.table(v6)
	m = &nftables.Set{Table: tb, Name: "vmac_map", IsMap: true, KeyType: nftables.TypeIFIndex, DataType: nftables.TypeIFIndex,
		KeyByteOrder: binaryutil.NativeEndian}
	if v6 {
		set = &nftables.Set{Table: tb, Name: "vmac_set", KeyType: nftables.TypeIFIndex, KeyByteOrder: binaryutil.NativeEndian}
	}
	return m, set
}

// VMAC adds (on) or removes a macvlan, by its index, with the index of
// its interface (base), in table ip NAME's vmac_map (v6 false) or table
// ip6 NAME's vmac_map and vmac_set, making the table, its out chain,
// the map (and set) and their rules first, as keepalived 2.2.7's
// nft_add_vmac: the IGMP (IPv4) or MLD (IPv6) reports that would leave
// the macvlan with the VRRP MAC are sent from its interface instead (dup
// to their destination through it) and the macvlan's copy dropped, and
// for IPv6 its router solicitations dropped, so that no switch learns
// the VMAC from a backup. Call it before the macvlan comes up: it
// reports its groups then.
func (t *Table) VMAC(index, base int, v6, on bool) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	fam := 0
	if v6 {
		fam = 1
	}
	if !on && !t.vmac[fam] {
		return nil
	}
	c, err := t.conn()
	if err != nil {
		return err
	}
	m, set := t.vmacSets(v6)
	if !t.vmac[fam] {
		tb := c.AddTable(t.table(v6))
		prio := nftables.ChainPriority(t.o.Priority)
		accept := nftables.ChainPolicyAccept
		out := c.AddChain(&nftables.Chain{Name: "out", Table: tb, Type: nftables.ChainTypeFilter,
			Hooknum: nftables.ChainHookOutput, Priority: &prio, Policy: &accept})
		if err := c.AddSet(m, nil); err != nil {
			return fmt.Errorf("nftables: map vmac_map: %w", err)
		}
		if set != nil {
			if err := c.AddSet(set, nil); err != nil {
				return fmt.Errorf("nftables: set vmac_set: %w", err)
			}
		}
		for _, r := range t.vmacRules(out, m, set, v6) {
			c.AddRule(r)
		}
	}
	key := binaryutil.NativeEndian.PutUint32(uint32(index))
	if on {
		err = c.SetAddElements(m, []nftables.SetElement{{Key: key, Val: binaryutil.NativeEndian.PutUint32(uint32(base))}})
		if err == nil && set != nil {
			err = c.SetAddElements(set, []nftables.SetElement{{Key: key}})
		}
	} else {
		err = c.SetDeleteElements(m, []nftables.SetElement{{Key: key}})
		if err == nil && set != nil {
			err = c.SetDeleteElements(set, []nftables.SetElement{{Key: key}})
		}
	}
	if err == nil {
		err = c.Flush()
	}
	if err != nil {
		return fmt.Errorf("nftables: table %s %s: %s macvlan %d: %w", map[bool]string{false: "ip", true: "ip6"}[v6], t.o.Table,
			map[bool]string{true: "add", false: "remove"}[on], index, err)
	}
	t.vmac[fam] = true
	return nil
}

func elements(addrs []netip.Addr) []nftables.SetElement {
	var es []nftables.SetElement
	for _, a := range addrs {
		es = append(es, nftables.SetElement{Key: a.AsSlice()})
	}
	return es
}

// Drop starts (on) or stops dropping the traffic to and from addrs:
// an instance's virtual addresses, as it becomes master or leaves it. An
// address two instances drop stays until both stop. IPv6 link-local
// addresses are skipped (keepalived's per-interface sets are not built).
func (t *Table) Drop(addrs []netip.Addr, on bool) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var change [2][]netip.Addr // IPv4, IPv6
	for _, a := range addrs {
		a = a.Unmap()
		if !a.IsValid() || a.Is6() && a.IsLinkLocalUnicast() {
			continue
		}
		fam := 0
		if a.Is6() {
			fam = 1
		}
		switch {
		case on:
			if t.vips[a]++; t.vips[a] == 1 {
				change[fam] = append(change[fam], a)
			}
		case t.vips[a] > 0:
			if t.vips[a]--; t.vips[a] == 0 {
				delete(t.vips, a)
				change[fam] = append(change[fam], a)
			}
		}
	}
	var errs []error
	for fam, ch := range change {
		if len(ch) > 0 {
			errs = append(errs, t.update(ch, fam == 1, on))
		}
	}
	return errors.Join(errs...)
}

// update adds or removes one family's addresses, making its table first.
func (t *Table) update(addrs []netip.Addr, v6, on bool) error {
	slices.SortFunc(addrs, netip.Addr.Compare)
	c, err := t.conn()
	if err != nil {
		return err
	}
	made := &t.made4
	if v6 {
		made = &t.made6
	}
	if on && !*made {
		if err := t.make(c, v6); err != nil {
			return err
		}
	}
	if on {
		err = c.SetAddElements(t.set(v6), elements(addrs))
	} else {
		err = c.SetDeleteElements(t.set(v6), elements(addrs))
	}
	if err == nil {
		err = c.Flush()
	}
	if err != nil {
		return fmt.Errorf("nftables: table %s: %s %v: %w", t.o.Table, map[bool]string{true: "add", false: "remove"}[on], addrs, err)
	}
	if on {
		*made = true
	}
	return nil
}

// Close deletes the table, as keepalived does at its stop.
func (t *Table) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.made4 && !t.made6 && !t.vmac[0] && !t.vmac[1] {
		return nil
	}
	t.made4, t.made6, t.vmac = false, false, [2]bool{}
	clear(t.vips)
	return t.deleteTable()
}
