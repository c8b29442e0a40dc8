package config

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The static_ipaddress, static_routes and static_rules blocks, and
// vrrp_instance's virtual_rules: their keywords join the tables here, so
// that the tables' own files stay as they were.
func init() {
	topBlock.keys["static_ipaddress"] = entries((*decoder).staticAddress, func(c *Config) *[]VIP { return &c.StaticAddresses })
	topBlock.keys["static_routes"] = entries((*decoder).route, func(c *Config) *[]Route { return &c.StaticRoutes })
	topBlock.keys["static_rules"] = entries((*decoder).rule, func(c *Config) *[]Rule { return &c.StaticRules })
	instanceBlock.keys["virtual_rules"] = entries((*decoder).rule, func(in *Instance) *[]Rule { return &in.Rules })
	globalBlock.keys["default_interface"] = func(d *decoder, n *Node, g *Global) {
		if v, ok := d.str(n); ok {
			g.DefaultInterface = v
		}
	}
	globalBlock.keys["max_auto_priority"] = func(d *decoder, n *Node, g *Global) {
		if !d.noBlock(n) || !d.want(n, 0, 1) {
			return
		}
		if len(n.Args) == 0 {
			g.MaxAutoPriority = 99 // sched_get_priority_max(SCHED_RR)
			return
		}
		v, err := strconv.Atoi(n.Args[0])
		if err != nil || v < -1 || v > 99 {
			d.rep.lenient(n.Pos, n.Keyword, "max_auto_priority %q must be in [0, 99] (or -1 to disable): ignored, as keepalived does", n.Args[0])
			return
		}
		g.MaxAutoPriority = max(v, 0)
	}
	globalBlock.keys["min_auto_priority_delay"] = func(d *decoder, n *Node, g *Global) {
		if !d.noBlock(n) || !d.want(n, 1, 1) {
			return
		}
		v, err := strconv.Atoi(n.Args[0])
		if err != nil || v < 1 || v > 10000000 {
			d.rep.lenient(n.Pos, n.Keyword, "min_auto_priority_delay %q must be in [1, 10000000] microseconds: ignored, as keepalived does", n.Args[0])
			return
		}
		g.MinAutoPriorityDelay = time.Duration(v) * time.Microsecond
	}
	delete(globalBlock.unsupported, "max_auto_priority")
	delete(globalBlock.unsupported, "min_auto_priority_delay")
	for _, k := range []string{"static_ipaddress", "static_routes", "static_rules"} {
		delete(topBlock.unsupported, k)
	}
	delete(instanceBlock.unsupported, "virtual_rules")
	delete(globalBlock.unsupported, "default_interface")
}

// entries is the keyword of a block of one entry a line (static_routes,
// virtual_rules, ...): each line that read takes is added to the list
// that list gives of the block's owner; a line it refuses is left out.
func entries[T, E any](read func(*decoder, *Node) (E, bool), list func(*T) *[]E) func(*decoder, *Node, *T) {
	return func(d *decoder, n *Node, t *T) {
		d.want(n, 0, 0)
		d.lines(n, func(l *Node) {
			if e, ok := read(d, l); ok {
				p := list(t)
				*p = append(*p, e)
			}
		})
	}
}

// staticAddress reads one static_ipaddress line: virtual_ipaddress's
// syntax, without use_vmac (keepalived refuses it there too).
func (d *decoder) staticAddress(c *Node) (VIP, bool) {
	for _, a := range c.Args {
		if a == "use_vmac" {
			d.rep.errorf(c.Pos, c.Keyword, "use_vmac is not valid for a static address")
			return VIP{}, false
		}
		if a == "track_group" {
			d.rep.unsupported(c.Pos, "track_group", "static addresses are restored whatever the instances' states")
		}
	}
	args := c.Args
	for i := 0; i < len(args); i++ {
		if args[i] == "track_group" {
			end := min(i+2, len(args))
			args = append(append([]string{}, args[:i]...), args[end:]...)
			i--
		}
	}
	l := *c
	l.Args = args
	return d.vip(&l)
}

var ruleOptions = []string{"inet", "inet6", "from", "to", "table", "lookup", "not", "preference", "order",
	"priority", "tos", "dsfield", "fwmark", "realms", "suppress_prefixlength", "sup_pl", "suppress_ifgroup",
	"sup_group", "dev", "iif", "oif", "uidrange", "protocol", "ipproto", "sport", "dport", "no_track", "type",
	"goto", "nop", "blackhole", "unreachable", "prohibit"}

// ipProtos are the names keepalived's getprotobyname finds for ipproto on
// a Debian host (netbase's /etc/protocols), the common ones.
var ipProtos = map[string]uint8{"ip": 0, "icmp": 1, "igmp": 2, "ipencap": 4, "tcp": 6, "udp": 17, "ipv6": 41,
	"ipv6-route": 43, "ipv6-frag": 44, "gre": 47, "esp": 50, "ah": 51, "ipv6-icmp": 58, "ipv6-nonxt": 59,
	"ipv6-opts": 60, "vrrp": 112, "l2tp": 115, "sctp": 132, "udplite": 136, "mpls-in-ip": 137}

// rule reads one static_rules or virtual_rules line, in ip-rule syntax, as
// keepalived 2.2.7's alloc_rule: what it refuses, it skips ("ignored") and
// runs on, and so does directord (an error under --strict).
func (d *decoder) rule(c *Node) (Rule, bool) {
	r := Rule{Pos: c.Pos, SuppressPrefixLen: -1, SuppressIfGroup: -1}
	words := append([]string{c.Keyword}, c.Args...)
	skip := func(format string, args ...any) (Rule, bool) {
		d.rep.lenient(c.Pos, c.Keyword, "rule ignored, as keepalived does: "+format, args...)
		return r, false
	}
	family := FamilyUnset
	setFamily := func(f Family) bool {
		if family != FamilyUnset && family != f {
			return false
		}
		family = f
		return true
	}
	hasPriority, tableOption := false, false
	for i := 0; i < len(words); i++ {
		w := words[i]
		value := func() (string, bool) {
			if i+1 >= len(words) {
				return "", false
			}
			i++
			return words[i], true
		}
		setAction := func(a RuleAction) bool {
			if r.Action != RuleActionUnset {
				return false
			}
			r.Action = a
			return true
		}
		switch w {
		case "inet", "inet6":
			f := Inet
			if w == "inet6" {
				f = Inet6
			}
			if !setFamily(f) {
				return skip("%s given for a rule of the other family", w)
			}
			// keepalived 2.2.7's alloc_rule steps over the word after
			// inet/inet6 unread (it moves on twice): "inet6 from X" reads
			// X as an option. directord reads the line as keepalived does.
			if i+1 < len(words) {
				i++
				d.rep.lenient(c.Pos, c.Keyword, "%q after %s is skipped unread, as keepalived 2.2.7 does: put %s last", words[i], w, w)
			}
		case "from", "to":
			v, ok := value()
			if !ok {
				return skip("%s needs an address", w)
			}
			var p netip.Prefix
			switch v {
			case "default", "any", "all":
			case "default6":
				if !setFamily(Inet6) {
					return skip("rule mixes IPv4 and IPv6")
				}
			default:
				if p, ok = parsePrefix(v); !ok {
					return skip("%s %q is not an address/prefix", w, v)
				}
				if !setFamily(family4or6(p.Addr())) {
					return skip("rule mixes IPv4 and IPv6")
				}
			}
			if w == "from" {
				r.From = p
			} else {
				r.To = p
			}
		case "table", "lookup":
			v, ok := value()
			if !ok {
				return skip("%s needs a table", w)
			}
			t, ok := d.routeTable(v)
			if !ok {
				return skip("routing table %q not found (a number, or a name of %s)", v, rtTablesFile)
			}
			if t == 0 {
				return skip("table 0 is not valid")
			}
			if !setAction(RuleTable) {
				return skip("more than one of table/nop/goto/blackhole/prohibit/unreachable")
			}
			r.Table = t
		case "not":
			r.Not = true
		case "preference", "order", "priority":
			v, ok := value()
			n, err := strconv.ParseUint(v, 0, 32)
			if !ok || err != nil {
				return skip("invalid rule preference %q", v)
			}
			r.Priority, hasPriority = uint32(n), true
		case "tos", "dsfield":
			v, ok := value()
			n, err := strconv.ParseUint(strings.TrimPrefix(v, "0x"), 16, 8)
			if !ok || err != nil {
				return skip("TOS value %q is not a hexadecimal number below 0x100", v)
			}
			r.TOS = uint8(n)
		case "fwmark":
			v, _ := value()
			mark, mask, hasMask := strings.Cut(v, "/")
			m, err := strconv.ParseUint(mark, 0, 32)
			if err != nil || strings.HasPrefix(mark, "-") {
				return skip("invalid rule fwmark %q", v)
			}
			if hasMask {
				k, err := strconv.ParseUint(mask, 0, 32)
				if err != nil || strings.HasPrefix(mask, "-") {
					return skip("invalid rule fwmark %q", v)
				}
				r.FwMask, r.HasFwMask = uint32(k), true
			}
			r.FwMark, r.HasFwMark = uint32(m), true
		case "realms":
			v, _ := value()
			realms, ok := parseRealms(v)
			if !ok {
				return skip("invalid realms %q (numbers: TO or FROM/TO)", v)
			}
			r.Realms, tableOption = realms, true
			if !setFamily(Inet) {
				return skip("realms is only valid for IPv4")
			}
		case "suppress_prefixlength", "sup_pl":
			v, _ := value()
			n, err := strconv.ParseUint(v, 10, 31)
			if err != nil {
				return skip("invalid suppress_prefixlength %q", v)
			}
			r.SuppressPrefixLen, tableOption = int(n), true
		case "suppress_ifgroup", "sup_group":
			v, _ := value()
			n, err := strconv.ParseUint(v, 0, 31)
			if err != nil {
				return skip("suppress_group %q is not a number", v)
			}
			r.SuppressIfGroup, tableOption = int(n), true
		case "dev", "iif", "oif":
			v, ok := value()
			if !ok || v == "" {
				return skip("%s needs an interface", w)
			}
			if len(v) >= 16 {
				return skip("interface name %q is longer than 15 characters", v)
			}
			if w == "oif" {
				r.OIf = v
			} else {
				r.IIf = v
			}
		case "uidrange":
			v, _ := value()
			a, b, ok := strings.Cut(v, "-")
			x, err1 := strconv.ParseUint(a, 10, 32)
			y, err2 := strconv.ParseUint(b, 10, 32)
			if !ok || err1 != nil || err2 != nil {
				return skip("invalid uidrange %q", v)
			}
			r.UIDRange, r.HasUIDRange = [2]uint32{uint32(x), uint32(y)}, true
		case "protocol":
			// keepalived reports a bad value and keeps the rule without it.
			v, _ := value()
			if n, err := strconv.ParseUint(v, 10, 8); err == nil {
				r.Protocol, r.HasProtocol = uint8(n), true
			} else {
				d.rep.lenient(c.Pos, c.Keyword, "invalid rule protocol %q ignored, as keepalived does", v)
			}
		case "ipproto":
			v, _ := value()
			if n, err := strconv.ParseUint(v, 10, 8); err == nil && n <= 127 {
				r.IPProto = uint8(n)
			} else if p, ok := ipProtos[v]; ok {
				r.IPProto = p
			} else {
				d.rep.lenient(c.Pos, c.Keyword, "invalid ipproto %q ignored, as keepalived does", v)
			}
		case "sport", "dport":
			v, _ := value()
			pr, ok := portRange(v)
			if !ok {
				d.rep.lenient(c.Pos, c.Keyword, "invalid %s range %q ignored, as keepalived does", w, v)
				break
			}
			if w == "sport" {
				r.SPort, r.HasSPort = pr, true
			} else {
				r.DPort, r.HasDPort = pr, true
			}
		case "no_track":
			r.NoTrack = true
		case "track_group":
			value()
			d.rep.unsupported(c.Pos, "track_group", "static rules are restored whatever the instances' states")
		case "tunnel-id", "l3mdev":
			if w == "tunnel-id" {
				value()
			}
			d.rep.unsupported(c.Pos, c.Keyword, "rule option "+w+" is not programmed")
			if w == "l3mdev" && !setAction(RuleTable) {
				return skip("l3mdev with another action")
			}
		default:
			a := w
			if a == "type" {
				a, _ = value()
			}
			switch a {
			case "goto":
				v, _ := value()
				n, err := strconv.ParseUint(v, 0, 32)
				if err != nil {
					return skip("invalid goto target %q", v)
				}
				r.Goto = uint32(n)
			case "nop", "blackhole", "unreachable", "prohibit":
			case "unicast", "local", "broadcast", "anycast", "multicast", "throw", "nat", "xresolve":
				return skip("invalid rule action %s", a)
			default:
				return skip("unknown rule option %q%s", a, didYouMean(a, ruleOptions))
			}
			act, _ := enumParse[RuleAction]("rule action", ruleActionNames, a) // one of the cases above
			if !setAction(act) {
				return skip("more than one of table/nop/goto/blackhole/prohibit/unreachable")
			}
		}
	}
	if r.Action == RuleGoto {
		if !hasPriority {
			return skip("goto target %d given without preference", r.Goto)
		}
		if r.Priority >= r.Goto {
			return skip("preference %d is not below goto target %d", r.Priority, r.Goto)
		}
	}
	if r.Action == RuleActionUnset {
		return skip("no action (table, goto, nop, blackhole, unreachable or prohibit)")
	}
	if r.Action != RuleTable && tableOption {
		return skip("suppress_prefixlength, suppress_ifgroup and realms need a table action")
	}
	if !r.NoTrack {
		if r.HasProtocol && r.Protocol != 18 {
			d.rep.lenient(c.Pos, c.Keyword, "a tracked rule's protocol is keepalived's (18), as keepalived sets it; use no_track for another")
		}
		r.Protocol, r.HasProtocol = 18, true
	}
	if family == FamilyUnset {
		family = Inet
	}
	r.Family = family
	if !hasPriority {
		fi := 0
		if family == Inet6 {
			fi = 1
		}
		if d.rulePriority[fi] == 0 {
			d.rulePriority[fi] = ruleStartPriority
		}
		r.Priority, r.PriorityAuto = d.rulePriority[fi], true
		d.rulePriority[fi]--
		d.rep.lenient(c.Pos, c.Keyword, "rule has no preference: %d given, as keepalived does (give one: the order of rules is theirs)", r.Priority)
	}
	return r, true
}

// ruleStartPriority is the preference keepalived gives the first rule of
// a family without one; the next get one less each.
const ruleStartPriority = 16384

// family4or6 is a rule address's family: an IPv4-mapped IPv6 address
// counts as IPv6 here, as it did when the family was a string (family()
// makes it IPv4's).
func family4or6(a netip.Addr) Family {
	if a.Is4() {
		return Inet
	}
	return Inet6
}

// rtTablesFile names the routing tables, as iproute2 and keepalived read
// it: "NUMBER NAME" lines.
const rtTablesFile = "/etc/iproute2/rt_tables"

type rtName struct {
	id   uint32
	name string
}

// routeTable reads a table as keepalived's find_rttables_table: a number,
// else a name of rt_tables (the first line that has it), else one of the
// kernel's own tables whose number the file does not name.
func (d *decoder) routeTable(v string) (uint32, bool) {
	if n, err := strconv.ParseUint(v, 0, 32); err == nil {
		return uint32(n), true
	}
	if d.tables == nil {
		d.tables = []rtName{}
		if d.fs != nil {
			if b, err := d.fs.ReadFile(rtTablesFile); err == nil {
				d.tables = parseRtTables(string(b))
			}
		}
		for _, def := range []rtName{{253, "default"}, {254, "main"}, {255, "local"}} {
			if !slices.ContainsFunc(d.tables, func(t rtName) bool { return t.id == def.id }) {
				d.tables = append(d.tables, def)
			}
		}
	}
	for _, t := range d.tables {
		if t.name == v {
			return t.id, true
		}
	}
	return 0, false
}

// parseRtTables reads rt_tables' "NUMBER NAME" lines, skipping comments
// and any other line, as keepalived's read_file.
func parseRtTables(text string) []rtName {
	var out []rtName
	for _, l := range strings.Split(text, "\n") {
		if i := strings.IndexAny(l, "#!"); i >= 0 {
			l = l[:i]
		}
		f := strings.Fields(l)
		if len(f) != 2 || strings.HasPrefix(f[0], "-") {
			continue
		}
		n, err := strconv.ParseUint(f[0], 0, 32)
		if err != nil {
			continue
		}
		out = append(out, rtName{uint32(n), f[1]})
	}
	return out
}

// parseRealms reads TO or FROM/TO: FROM in the high 16 bits.
func parseRealms(v string) (uint32, bool) {
	from, to, two := strings.Cut(v, "/")
	if !two {
		from, to = "", from
	}
	t, err := strconv.ParseUint(to, 0, 16)
	if err != nil {
		return 0, false
	}
	f := uint64(0)
	if two {
		if f, err = strconv.ParseUint(from, 0, 16); err != nil {
			return 0, false
		}
	}
	return uint32(f<<16 | t), true
}

// portRange reads N or N-M.
func portRange(v string) ([2]uint16, bool) {
	a, b, two := strings.Cut(v, "-")
	x, err := strconv.ParseUint(a, 10, 16)
	if err != nil {
		return [2]uint16{}, false
	}
	y := x
	if two {
		if y, err = strconv.ParseUint(b, 10, 16); err != nil {
			return [2]uint16{}, false
		}
	}
	return [2]uint16{uint16(x), uint16(y)}, true
}

// resolveStatic puts the static addresses that name no dev on
// default_interface, eth0 when not given (keepalived's DFLT_INT).
func (d *decoder) resolveStatic() {
	if d.cfg.Global.MaxAutoPriority > 0 && d.cfg.Global.MinAutoPriorityDelay == 0 {
		d.cfg.Global.MinAutoPriorityDelay = time.Second
	}
	dev := d.cfg.Global.DefaultInterface
	if dev == "" {
		dev = "eth0"
	}
	for i := range d.cfg.StaticAddresses {
		if d.cfg.StaticAddresses[i].Dev == "" {
			d.cfg.StaticAddresses[i].Dev = dev
		}
	}
}
