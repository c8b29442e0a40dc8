package config

// The BGP extension: global_defs' bgp block, bgp_withdraw_wait and a
// virtual server's "announce bgp [dev NAME]". keepalived reads none of
// them.

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

func init() {
	globalBlock.keys["bgp"] = func(d *decoder, n *Node, g *Global) {
		if !d.needBlock(n) {
			return
		}
		d.want(n, 0, 0)
		if g.BGP != nil {
			d.rep.errorf(n.Pos, n.Keyword, "bgp is already given at %s", g.BGP.Pos)
			return
		}
		b := &BGP{Pos: n.Pos, ListenPort: DefaultBGPPort}
		walk(d, n, bgpBlock, b)
		if !hasChild(n, "local_as") {
			d.rep.errorf(n.Pos, n.Keyword, "needs local_as")
		}
		g.BGP = b
	}
	globalBlock.keys["bgp_withdraw_wait"] = func(d *decoder, n *Node, g *Global) {
		if v, ok := d.timer(n, 0, time.Hour); ok {
			g.bgpWithdrawWait = &v
			markSet(&g.set, n)
		}
	}
	vsBlock.keys["announce"] = func(d *decoder, n *Node, vs *VirtualServer) {
		if !d.noBlock(n) || !d.want(n, 1, -1) {
			return
		}
		if n.Args[0] != "bgp" {
			d.rep.errorf(n.Pos, n.Keyword, "%q is not bgp, the only way directord announces", n.Args[0])
			return
		}
		if a, ok := d.announce(n); ok {
			vs.Announce = a
		}
	}
	for _, kw := range []string{"bgp", "bgp_withdraw_wait", "announce"} {
		extensionKeywords[kw] = true
	}
}

// announce reads "announce bgp [dev NAME] [address ADDR...]", dev and
// address in either order.
func (d *decoder) announce(n *Node) (*Announce, bool) {
	a := &Announce{Pos: n.Pos, Dev: "lo"}
	usage := func() (*Announce, bool) {
		d.rep.errorf(n.Pos, n.Keyword, "%q: expected announce bgp [dev NAME] [address ADDR...]", strings.Join(n.Args, " "))
		return nil, false
	}
	rest := n.Args[1:]
	var dev, addrs bool
	for len(rest) > 0 {
		switch {
		case rest[0] == "dev" && !dev && len(rest) >= 2:
			if !validIfName(rest[1]) {
				d.rep.errorf(n.Pos, n.Keyword, "%q is not an interface name", rest[1])
				return nil, false
			}
			a.Dev, dev, rest = rest[1], true, rest[2:]
		case rest[0] == "address" && !addrs && len(rest) >= 2:
			addrs, rest = true, rest[1:]
			for len(rest) > 0 && rest[0] != "dev" {
				ad, err := netip.ParseAddr(rest[0])
				if err != nil || ad.Zone() != "" || !ad.Unmap().IsGlobalUnicast() {
					d.rep.errorf(n.Pos, n.Keyword, "%q is not a unicast address to announce", rest[0])
					return nil, false
				}
				a.Addresses = append(a.Addresses, ad.Unmap())
				rest = rest[1:]
			}
		default:
			return usage()
		}
	}
	return a, true
}

// MaxAnnounced is how many addresses one virtual server may announce (a
// group's ranges, announce's address list): a host route each.
const MaxAnnounced = 1024

// resolveAnnounce sets the prefixes vs announces: its own address; a
// group's addresses and ranges; for a fwmark (or a group's fwmark
// entries), the addresses announce names. It reports what cannot be
// announced and returns false then.
func (d *decoder) resolveAnnounce(vs *VirtualServer) bool {
	a := vs.Announce
	seen := map[netip.Addr]bool{}
	add := func(ad netip.Addr) bool {
		ad = ad.Unmap()
		if !seen[ad] {
			if len(seen) == MaxAnnounced {
				d.rep.errorf(a.Pos, "announce", "more than %d addresses to announce for %s", MaxAnnounced, vsKey(vs))
				return false
			}
			seen[ad] = true
		}
		return true
	}
	switch {
	case vs.FWMark != 0:
		if len(a.Addresses) == 0 {
			d.rep.errorf(a.Pos, "announce", "a fwmark virtual server has no address: name those its packets are sent to (announce bgp address ADDR...)")
			return false
		}
	case vs.Group != "":
		var g *VirtualServerGroup
		for _, x := range d.cfg.VirtualServerGroups {
			if x.Name == vs.Group {
				g = x
				break
			}
		}
		if g == nil {
			return false // validate says the group is not defined
		}
		fwmarks := 0
		for _, e := range g.Entries {
			if e.FWMark != 0 {
				fwmarks++
				continue
			}
			last := e.Last
			if !last.IsValid() {
				last = e.First
			}
			for ad := e.First; ad.IsValid() && ad.Compare(last) <= 0; ad = ad.Next() {
				if !add(ad) {
					return false
				}
			}
		}
		if fwmarks > 0 && len(a.Addresses) == 0 {
			if len(seen) == 0 {
				d.rep.errorf(a.Pos, "announce", "virtual_server_group %s has only fwmark entries, which have no address: name those their packets are sent to (announce bgp address ADDR...)", g.Name)
				return false
			}
			d.rep.warnf(a.Pos, "announce", "the fwmark entries of virtual_server_group %s are not announced: name their addresses with announce bgp address ADDR...", g.Name)
		}
	default:
		if len(a.Addresses) > 0 {
			d.rep.errorf(a.Pos, "announce", "%s announces its own address: announce bgp address is for fwmark and group virtual servers", vsKey(vs))
			return false
		}
		add(vs.Addr.Addr())
	}
	for _, ad := range a.Addresses {
		if !add(ad) {
			return false
		}
	}
	a.Prefixes = a.Prefixes[:0]
	for ad := range seen {
		a.Prefixes = append(a.Prefixes, netip.PrefixFrom(ad, ad.BitLen()))
	}
	slices.SortFunc(a.Prefixes, func(x, y netip.Prefix) int { return x.Addr().Compare(y.Addr()) })
	return true
}

// bfdNotSupported is why keepalived's bfd_instance and track_bfd are not.
const bfdNotSupported = "the BFD of directord's BGP speaker (GoBGP) runs only for BGP neighbors (neighbor ... bfd): it has no standalone session to track"

// extensionKeywords are the directord extensions in blocks that also hold
// keepalived's own keywords (every keyword of an extension block is one).
var extensionKeywords = map[string]bool{}

// IsExtension reports whether keyword kw of block is a directord
// extension, which keepalived does not read.
func IsExtension(block, kw string) bool {
	for _, b := range allBlocks() {
		if b.blockName() == block {
			if e, ok := b.(interface{ isExtension() bool }); ok && e.isExtension() {
				return true
			}
		}
	}
	if _, ok := Extensions[kw]; ok && block != "vrrp_script" {
		return true
	}
	return extensionKeywords[kw]
}

func validIfName(s string) bool {
	return s != "" && len(s) < 16 && !strings.ContainsAny(s, "/ \t:") && s != "." && s != ".."
}

// asNumber reads a 4-byte AS number, plain or as "high.low" (asdot).
func (d *decoder) asNumber(n *Node) (uint32, bool) {
	if !d.noBlock(n) || !d.want(n, 1, 1) {
		return 0, false
	}
	s := n.Args[0]
	var v uint64
	var err error
	if hi, lo, ok := strings.Cut(s, "."); ok {
		var h, l uint64
		h, err = strconv.ParseUint(hi, 10, 16)
		if err == nil {
			l, err = strconv.ParseUint(lo, 10, 16)
		}
		v = h<<16 | l
	} else {
		v, err = strconv.ParseUint(s, 10, 32)
	}
	if err != nil || v == 0 {
		d.rep.errorf(n.Pos, n.Keyword, "%q is not an AS number from 1 to 4294967295", s)
		return 0, false
	}
	return uint32(v), true
}

var bgpBlock = &block[BGP]{
	name:      "bgp",
	extension: true,
	keys: map[string]func(*decoder, *Node, *BGP){
		"local_as": func(d *decoder, n *Node, b *BGP) {
			if v, ok := d.asNumber(n); ok {
				b.LocalAS = v
			}
		},
		"router_id": func(d *decoder, n *Node, b *BGP) {
			if a, ok := d.addr(n); ok {
				if !a.Is4() {
					d.rep.errorf(n.Pos, n.Keyword, "%q: a BGP identifier is an IPv4 address", n.Args[0])
					return
				}
				b.RouterID = a
			}
		},
		"listen_port": func(d *decoder, n *Node, b *BGP) {
			if v, ok := d.integer(n, -1, 65535); ok {
				if v == 0 {
					v = -1
				}
				b.ListenPort = int(v)
			}
		},
		"neighbor": func(d *decoder, n *Node, b *BGP) {
			if !d.needBlock(n) || !d.want(n, 1, 1) {
				return
			}
			a, ok := d.addrArg(n, 0)
			if !ok {
				return
			}
			nb := &Neighbor{Pos: n.Pos, Addr: a, HoldTime: DefaultHoldTime, Port: DefaultBGPPort}
			walk(d, n, neighborBlock, nb)
			if !hasChild(n, "remote_as") {
				d.rep.errorf(n.Pos, n.Keyword, "neighbor %s needs remote_as", a)
				return
			}
			for _, o := range b.Neighbors {
				if o.Addr == a {
					d.rep.errorf(n.Pos, n.Keyword, "neighbor %s is already defined at %s", a, o.Pos)
					return
				}
			}
			b.Neighbors = append(b.Neighbors, nb)
		},
	},
}

var neighborBlock = &block[Neighbor]{
	name:      "neighbor",
	extension: true,
	keys: map[string]func(*decoder, *Node, *Neighbor){
		"remote_as": func(d *decoder, n *Node, nb *Neighbor) {
			if v, ok := d.asNumber(n); ok {
				nb.RemoteAS = v
			}
		},
		"hold_time": func(d *decoder, n *Node, nb *Neighbor) {
			v, ok := d.integer(n, 0, 65535)
			if !ok {
				return
			}
			if v == 1 || v == 2 {
				d.rep.errorf(n.Pos, n.Keyword, "%d: a hold time is 0 or at least 3 seconds (RFC 4271)", v)
				return
			}
			nb.HoldTime = time.Duration(v) * time.Second
		},
		"bfd": func(d *decoder, n *Node, nb *Neighbor) {
			if !d.noBlock(n) {
				return
			}
			b := &BFD{Interval: 300 * time.Millisecond, Multiplier: 3}
			if len(n.Args) > 0 {
				ms, ok := d.intArg(n, 0, 10, 60000)
				if !ok {
					return
				}
				b.Interval = time.Duration(ms) * time.Millisecond
			}
			if len(n.Args) > 1 {
				m, ok := d.intArg(n, 1, 1, 255)
				if !ok {
					return
				}
				b.Multiplier = int(m)
			}
			d.want(n, 0, 2)
			nb.BFD = b
		},
		"source_address": func(d *decoder, n *Node, nb *Neighbor) { nb.SourceAddress, _ = d.addr(n) },
		"port": func(d *decoder, n *Node, nb *Neighbor) {
			if d.noBlock(n) && d.want(n, 1, 1) {
				nb.Port, _ = d.portArg(n, 0)
			}
		},
		"password": func(d *decoder, n *Node, nb *Neighbor) {
			if s, ok := d.str(n); ok {
				if len(s) > 80 {
					d.rep.errorf(n.Pos, n.Keyword, "a TCP MD5 key is at most 80 bytes, this one is %d", len(s))
					return
				}
				nb.Password = s
			}
		},
		"multihop": func(d *decoder, n *Node, nb *Neighbor) {
			if !d.noBlock(n) {
				return
			}
			if len(n.Args) == 0 {
				nb.Multihop = 255
				return
			}
			d.want(n, 1, 1)
			if v, ok := d.intArg(n, 0, 1, 255); ok {
				nb.Multihop = int(v)
			}
		},
		"passive":          boolKey(func(nb *Neighbor) *bool { return &nb.Passive }, nil),
		"graceful_restart": boolKey(func(nb *Neighbor) *bool { return &nb.GracefulRestart }, nil),
		"communities": func(d *decoder, n *Node, nb *Neighbor) {
			if !d.noBlock(n) || !d.want(n, 1, -1) {
				return
			}
			for _, s := range n.Args {
				if _, err := ParseCommunity(s); err != nil {
					d.rep.errorf(n.Pos, n.Keyword, "%v", err)
					return
				}
			}
			nb.Communities = append(nb.Communities, n.Args...)
		},
		"med": func(d *decoder, n *Node, nb *Neighbor) {
			if v, ok := d.integer(n, 0, 1<<32-1); ok {
				u := uint32(v)
				nb.MED = &u
			}
		},
		"local_pref": func(d *decoder, n *Node, nb *Neighbor) {
			if v, ok := d.integer(n, 0, 1<<32-1); ok {
				u := uint32(v)
				nb.LocalPref = &u
			}
		},
	},
}

// wellKnownCommunities are RFC 1997's and RFC 8326's / RFC 7999's names.
var wellKnownCommunities = map[string]uint32{
	"no-export":           0xFFFFFF01,
	"no-advertise":        0xFFFFFF02,
	"no-export-subconfed": 0xFFFFFF03,
	"local-as":            0xFFFFFF03,
	"graceful-shutdown":   0xFFFF0000,
	"blackhole":           0xFFFF029A,
}

// ParseCommunity reads a standard community: "AS:VALUE", each 0-65535, or
// a well-known name.
func ParseCommunity(s string) (uint32, error) {
	if v, ok := wellKnownCommunities[strings.ToLower(s)]; ok {
		return v, nil
	}
	hi, lo, ok := strings.Cut(s, ":")
	if ok {
		h, err1 := strconv.ParseUint(hi, 10, 16)
		l, err2 := strconv.ParseUint(lo, 10, 16)
		if err1 == nil && err2 == nil {
			return uint32(h)<<16 | uint32(l), nil
		}
	}
	return 0, fmt.Errorf("%q is not a community (AS:VALUE, each 0-65535, or no-export, no-advertise, no-export-subconfed, graceful-shutdown, blackhole)", s)
}

// resolveBGP applies bgp_withdraw_wait and checks what the bgp block and
// the announcing virtual servers need of each other.
func (d *decoder) resolveBGP() {
	g := &d.cfg.Global
	b := g.BGP
	if b == nil {
		if pos, ok := g.set["bgp_withdraw_wait"]; ok {
			d.rep.warnf(pos, "bgp_withdraw_wait", "ignored: global_defs has no bgp block")
		}
		for _, vs := range d.cfg.VirtualServers {
			if vs.Announce != nil {
				d.rep.errorf(vs.Announce.Pos, "announce", "announce bgp needs a bgp block in global_defs")
			}
		}
		return
	}
	b.WithdrawWait = DefaultWithdrawWait
	if g.bgpWithdrawWait != nil {
		b.WithdrawWait = *g.bgpWithdrawWait
	}
	if len(b.Neighbors) == 0 {
		d.rep.warnf(b.Pos, "bgp", "no neighbor: nothing is announced")
	}
	for _, nb := range b.Neighbors {
		if nb.LocalPref != nil && nb.RemoteAS != b.LocalAS {
			d.rep.errorf(nb.Pos, "local_pref", "neighbor %s: local_pref is sent only to iBGP neighbors (remote_as %d is not local_as %d)", nb.Addr, nb.RemoteAS, b.LocalAS)
		}
		if nb.Multihop > 0 && nb.RemoteAS == b.LocalAS {
			d.rep.warnf(nb.Pos, "multihop", "neighbor %s: multihop is for eBGP; an iBGP session is not limited to one hop anyway", nb.Addr)
		}
		if nb.SourceAddress.IsValid() && nb.SourceAddress.Is4() != nb.Addr.Is4() {
			d.rep.errorf(nb.Pos, "source_address", "neighbor %s: source_address %s is of the other address family", nb.Addr, nb.SourceAddress)
		}
	}
	for _, vs := range d.cfg.VirtualServers {
		if vs.Announce == nil {
			continue
		}
		if !d.resolveAnnounce(vs) {
			vs.Announce = nil
		}
	}
}

// AnnouncedPrefix is the /32 or /128 an address virtual server
// announces; for a fwmark or group one, the first of AnnouncedPrefixes.
func (vs *VirtualServer) AnnouncedPrefix() netip.Prefix {
	if vs.Addr.IsValid() {
		a := vs.Addr.Addr().Unmap()
		return netip.PrefixFrom(a, a.BitLen())
	}
	if p := vs.AnnouncedPrefixes(); len(p) > 0 {
		return p[0]
	}
	return netip.Prefix{}
}

// AnnouncedPrefixes are the /32s and /128s a virtual server with announce
// bgp announces, sorted: its own address, a group's addresses and ranges,
// the addresses announce names (fwmark, a group's fwmark entries).
func (vs *VirtualServer) AnnouncedPrefixes() []netip.Prefix {
	if vs.Announce == nil {
		return nil
	}
	if len(vs.Announce.Prefixes) == 0 && vs.Addr.IsValid() {
		return []netip.Prefix{vs.AnnouncedPrefix()}
	}
	return vs.Announce.Prefixes
}

// Name names a virtual server in logs and reasons: "TCP 10.1.0.100:443",
// "fwmark 1 (inet)", "group web (TCP)".
func (vs *VirtualServer) Name() string { return vsKey(vs) }
