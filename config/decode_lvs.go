package config

import (
	"maps"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Schedulers are the IPVS schedulers keepalived accepts.
var Schedulers = []string{"rr", "wrr", "lc", "wlc", "lblc", "sh", "mh", "dh", "fo", "ovf", "lblcr", "sed", "nq", "twos"}

const maxTimer = 4294 * time.Second

// timingKeys are the check timings a virtual server, a real server and a
// checker may each set; the nearest level wins.
func timingKeys[T any](get func(*T) *timing, retryMin int64) map[string]func(*decoder, *Node, *T) {
	return map[string]func(*decoder, *Node, *T){
		"delay_loop": func(d *decoder, n *Node, t *T) {
			if v, ok := d.timer(n, time.Microsecond, maxTimer); ok {
				get(t).delayLoop = v
			}
		},
		"connect_timeout": func(d *decoder, n *Node, t *T) {
			if v, ok := d.timer(n, time.Microsecond, maxTimer); ok {
				get(t).connectTimeout = v
			}
		},
		"delay_before_retry": func(d *decoder, n *Node, t *T) {
			if v, ok := d.timer(n, 0, maxTimer); ok {
				get(t).delayBeforeRetry = v
			}
		},
		"warmup": func(d *decoder, n *Node, t *T) {
			if v, ok := d.timer(n, 0, maxTimer); ok {
				get(t).warmup = v
			}
		},
		"retry": func(d *decoder, n *Node, t *T) {
			if v, ok := d.integer(n, retryMin, 1<<31-1); ok {
				get(t).retry = int(v)
			}
		},
	}
}

// method reads "NAT|DR|TUN [type ipip|gue|gre] [port N] [nocsum|csum|remcsum]".
func (d *decoder) method(n *Node) (Method, bool) {
	if !d.noBlock(n) || !d.want(n, 1, -1) {
		return Method{}, false
	}
	var m Method
	switch n.Args[0] {
	case "NAT", "DR":
		m.Kind = NAT
		if n.Args[0] == "DR" {
			m.Kind = DR
		}
		d.want(n, 1, 1)
		return m, true
	case "TUN":
		m.Kind = TUN
	default:
		// keepalived 2.2.7: "unknown [FNAT] routing method", and the
		// keyword is ignored (a virtual server then defaults to NAT).
		d.rep.lenient(n.Pos, n.Keyword, "%q is not NAT, DR or TUN, ignored as keepalived does%s", n.Args[0], didYouMean(n.Args[0], []string{"NAT", "DR", "TUN"}))
		return m, false
	}
	m.TunType, m.TunCsum = TunnelIPIP, NoCsum
	args := n.Args[1:]
	for i := 0; i < len(args); i++ {
		switch a := args[i]; a {
		case "type":
			if i+1 >= len(args) {
				d.rep.errorf(n.Pos, n.Keyword, "type needs ipip, gue or gre")
				return m, false
			}
			i++
			switch t, err := enumParse[TunnelType]("tunnel type", tunnelNames, args[i]); {
			case err == nil && t != TunnelUnset:
				m.TunType = t
			default:
				d.rep.errorf(n.Pos, n.Keyword, "tunnel type %q is not ipip, gue or gre", args[i])
				return m, false
			}
		case "port":
			if i+1 >= len(args) {
				d.rep.errorf(n.Pos, n.Keyword, "port needs a value")
				return m, false
			}
			i++
			p, ok := d.portArg(n, i+1)
			if !ok {
				return m, false
			}
			m.TunPort = p
		case "nocsum", "csum", "remcsum":
			m.TunCsum, _ = enumParse[TunnelCsum]("tunnel checksum", csumNames, a)
		default:
			d.rep.errorf(n.Pos, n.Keyword, "unknown tunnel option %q%s", a, didYouMean(a, []string{"type", "port", "nocsum", "csum", "remcsum"}))
			return m, false
		}
	}
	switch {
	case m.TunType == TunnelGUE && m.TunPort == 0:
		d.rep.errorf(n.Pos, n.Keyword, "a gue tunnel needs a port")
		return m, false
	case m.TunType != TunnelGUE && m.TunPort != 0:
		d.rep.errorf(n.Pos, n.Keyword, "port applies only to gue tunnels")
		return m, false
	case m.TunType == TunnelIPIP && m.TunCsum != NoCsum:
		d.rep.errorf(n.Pos, n.Keyword, "an ipip tunnel takes no checksum option")
		return m, false
	case m.TunType == TunnelGRE && m.TunCsum == RemCsum:
		d.rep.errorf(n.Pos, n.Keyword, "a gre tunnel does not support remcsum")
		return m, false
	}
	return m, true
}

// hostPort reads "IP [PORT]" from words; a missing port, or 0, is 0.
func (d *decoder) hostPort(n *Node, words []string, what string) (netip.AddrPort, bool) {
	a, err := netip.ParseAddr(words[0])
	if err != nil {
		d.rep.errorf(n.Pos, n.Keyword, "%s %q is not an IP address", what, words[0])
		return netip.AddrPort{}, false
	}
	var port uint64
	if len(words) > 1 {
		port, err = strconv.ParseUint(words[1], 10, 16)
		if err != nil {
			d.rep.errorf(n.Pos, n.Keyword, "%s port %q is not a number from 0 to 65535", what, words[1])
			return netip.AddrPort{}, false
		}
	}
	if len(words) > 2 {
		d.rep.warnf(n.Pos, n.Keyword, "unexpected %q ignored", strings.Join(words[2:], " "))
	}
	return netip.AddrPortFrom(a, uint16(port)), true
}

func (d *decoder) virtualServer(n *Node) *VirtualServer {
	if !d.needBlock(n) || !d.want(n, 1, 2) {
		return nil
	}
	vs := &d.virtualServers.take(1)[0]
	*vs = VirtualServer{Pos: n.Pos, timing: unsetTiming(), weight: 1, Quorum: 1}
	switch n.Args[0] {
	case "fwmark":
		if len(n.Args) != 2 {
			d.rep.errorf(n.Pos, n.Keyword, "fwmark needs a number")
			return nil
		}
		v, ok := d.intArg(n, 1, 1, 1<<32-1)
		if !ok {
			return nil
		}
		vs.FWMark = uint32(v)
	case "group":
		if len(n.Args) != 2 {
			d.rep.errorf(n.Pos, n.Keyword, "group needs a virtual_server_group name")
			return nil
		}
		vs.Group = n.Args[1]
	default:
		ap, ok := d.hostPort(n, n.Args, "virtual server")
		if !ok {
			return nil
		}
		vs.Addr = ap
		vs.Family = family(ap.Addr())
	}
	// The virtual server's real servers, and its list of them, sized
	// once from the decoder's slabs (see slab).
	nrs := 0
	for _, c := range n.Children {
		if c.Keyword == "real_server" {
			nrs++
		}
	}
	if nrs > 0 {
		d.vsReals = d.realServers.take(nrs)
		vs.RealServers = d.realServerList.take(nrs)[:0]
	}
	walk(d, n, vsBlock, vs)
	d.vsReals = nil
	return vs
}

func family(a netip.Addr) Family {
	if a.Is4() || a.Is4In6() {
		return Inet
	}
	return Inet6
}

func schedFlag(d *decoder, n *Node, vs *VirtualServer) {
	if d.noBlock(n) && d.want(n, 0, 0) {
		vs.SchedFlags = append(vs.SchedFlags, n.Keyword)
		markSet(&vs.set, n)
	}
}

var vsBlock = &block[VirtualServer]{
	name: "virtual_server",
	keys: mergeKeys(timingKeys(func(vs *VirtualServer) *timing { return vs.timing }, 1),
		map[string]func(*decoder, *Node, *VirtualServer){
			"smtp_alert": func(d *decoder, n *Node, vs *VirtualServer) { vs.smtpAlert = d.tristate(n) },
			"lvs_sched": func(d *decoder, n *Node, vs *VirtualServer) {
				if s, ok := d.str(n); ok {
					if !contains(Schedulers, s) {
						// keepalived 2.2.7: "Invalid lvs_scheduler
						// 'loadbalance' - ignoring", then wlc.
						d.rep.lenient(n.Pos, n.Keyword, "unknown scheduler %q, ignored as keepalived does (want one of %s)", s, strings.Join(Schedulers, " "))
						return
					}
					vs.Scheduler = s
					markSet(&vs.set, n)
				}
			},
			"lvs_method": func(d *decoder, n *Node, vs *VirtualServer) {
				if m, ok := d.method(n); ok {
					vs.Method = m
				}
			},
			"persistence_timeout": func(d *decoder, n *Node, vs *VirtualServer) {
				if !d.noBlock(n) || !d.want(n, 0, 1) {
					return
				}
				timeout := 360 * time.Second
				if len(n.Args) == 1 {
					// keepalived 2.2.7 ignores a bad value ("persistence_
					// timeout invalid"): 0, as the widely copied
					// kubernetes-apiserver recipe has, is no persistence.
					v, err := strconv.ParseInt(n.Args[0], 10, 64)
					if err != nil || v < 1 || v > 2678400 {
						d.rep.lenient(n.Pos, n.Keyword, "%q is not an integer from 1 to 2678400: ignored, as keepalived does", n.Args[0])
						return
					}
					timeout = time.Duration(v) * time.Second
				}
				vs.persistence().Timeout = timeout
				markSet(&vs.set, n)
			},
			"persistence_granularity": func(d *decoder, n *Node, vs *VirtualServer) {
				if s, ok := d.str(n); ok {
					if !validGranularity(s) {
						d.rep.errorf(n.Pos, n.Keyword, "%q is not an IPv4 netmask or an IPv6 prefix length", s)
						return
					}
					vs.persistence().Granularity = s
				}
			},
			"persistence_engine": func(d *decoder, n *Node, vs *VirtualServer) {
				// Not persistence by itself: keepalived's ipvswrapper.c
				// sends the engine only with a persistence timeout
				// (resolve applies it then).
				if s, ok := d.str(n); ok {
					vs.engine = s
					markSet(&vs.set, n)
				}
			},
			"protocol": func(d *decoder, n *Node, vs *VirtualServer) {
				if s, ok := d.str(n); ok {
					p, err := enumParse[Protocol]("protocol", protocolNames, strings.ToUpper(s))
					if err != nil || p == ProtocolUnset {
						d.rep.errorf(n.Pos, n.Keyword, "%q is not TCP, UDP or SCTP", s)
						return
					}
					vs.Protocol = p
					markSet(&vs.set, n)
				}
			},
			"ha_suspend": boolKey(func(vs *VirtualServer) *bool { return &vs.HASuspend }, func(vs *VirtualServer) *map[string]Pos { return &vs.set }),
			"ops":        boolKey(func(vs *VirtualServer) *bool { return &vs.OPS }, nil),
			"hashed": func(d *decoder, n *Node, vs *VirtualServer) {
				d.rep.warnf(n.Pos, n.Keyword, "ignored, as keepalived 2.2 ignores it; use sh-port or mh-port")
			},
			"flag-1":      schedFlag,
			"flag-2":      schedFlag,
			"flag-3":      schedFlag,
			"sh-port":     schedFlag,
			"sh-fallback": schedFlag,
			"mh-port":     schedFlag,
			"mh-fallback": schedFlag,
			"virtualhost": func(d *decoder, n *Node, vs *VirtualServer) { vs.VirtualHost, _ = d.str(n) },
			"alpha":       boolKey(func(vs *VirtualServer) *bool { return &vs.Alpha }, nil),
			"omega":       boolKey(func(vs *VirtualServer) *bool { return &vs.Omega }, nil),
			"quorum": func(d *decoder, n *Node, vs *VirtualServer) {
				if v, ok := d.integer(n, 1, 1<<32-1); ok {
					vs.Quorum = uint32(v)
				}
			},
			"hysteresis": func(d *decoder, n *Node, vs *VirtualServer) {
				if v, ok := d.integer(n, 0, 1<<32-1); ok {
					vs.Hysteresis = uint32(v)
				}
			},
			"quorum_up":   func(d *decoder, n *Node, vs *VirtualServer) { vs.QuorumUp = d.script(n) },
			"quorum_down": func(d *decoder, n *Node, vs *VirtualServer) { vs.QuorumDown = d.script(n) },
			"weight": func(d *decoder, n *Node, vs *VirtualServer) {
				if v, ok := d.integer(n, 1, 1<<31-1); ok {
					vs.weight = int(v)
				}
			},
			"sorry_server": func(d *decoder, n *Node, vs *VirtualServer) {
				if !d.noBlock(n) || !d.want(n, 1, -1) {
					return
				}
				words := n.Args
				if len(words) > 2 && (words[2] == "lvs_method" || words[2] == "lb_kind") {
					// keepalived ignores these words silently; directord
					// reads them, as the operator meant.
					sub := &Node{Pos: n.Pos, Keyword: words[2], Args: words[3:]}
					m, ok := d.method(sub)
					if !ok {
						return
					}
					defer func() {
						if vs.SorryServer != nil {
							vs.SorryServer.Method = m
						}
					}()
					words = words[:2]
				}
				ap, ok := d.hostPort(n, words, "sorry server")
				if !ok {
					return
				}
				vs.SorryServer = &Sorry{Addr: ap}
			},
			"sorry_server_lvs_method": func(d *decoder, n *Node, vs *VirtualServer) {
				if vs.SorryServer == nil {
					d.rep.errorf(n.Pos, n.Keyword, "must follow sorry_server")
					return
				}
				if m, ok := d.method(n); ok {
					vs.SorryServer.Method = m
				}
			},
			"sorry_server_inhibit": func(d *decoder, n *Node, vs *VirtualServer) {
				if vs.SorryServer == nil {
					d.rep.errorf(n.Pos, n.Keyword, "must follow sorry_server")
					return
				}
				vs.SorryServer.Inhibit, _ = d.flag(n)
			},
			"inhibit_on_failure": boolKey(func(vs *VirtualServer) *bool { return &vs.InhibitOnFailure }, nil),
			"ip_family": func(d *decoder, n *Node, vs *VirtualServer) {
				if s, ok := d.str(n); ok {
					f, err := ParseFamily(s)
					if err != nil {
						d.rep.errorf(n.Pos, n.Keyword, "%q is not inet or inet6", s)
						return
					}
					if vs.Family != FamilyUnset && vs.Family != f {
						d.rep.errorf(n.Pos, n.Keyword, "%s does not match the virtual server's address", s)
						return
					}
					vs.Family = f
				}
			},
			"real_server": func(d *decoder, n *Node, vs *VirtualServer) {
				if rs := d.realServer(n); rs != nil {
					vs.RealServers = append(vs.RealServers, rs)
				}
			},
		}),
	unsupported: map[string]string{
		"snmp_name": "directord has no SNMP interface",
	},
}

func init() {
	// keepalived's older spellings.
	vsBlock.keys["lb_algo"] = vsBlock.keys["lvs_sched"]
	vsBlock.keys["lb_kind"] = vsBlock.keys["lvs_method"]
	rsBlock.keys["lb_kind"] = rsBlock.keys["lvs_method"]
}

func (vs *VirtualServer) persistence() *Persistence {
	if vs.Persistence == nil {
		vs.Persistence = &Persistence{Timeout: 360 * time.Second}
	}
	return vs.Persistence
}

func validGranularity(s string) bool {
	if strings.Contains(s, ".") {
		// A netmask: contiguous ones, at least one (the kernel's 0 is
		// "the whole address").
		a, err := netip.ParseAddr(s)
		if err != nil || !a.Is4() {
			return false
		}
		b := a.As4()
		m := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
		return m != 0 && (^m)&(^m+1) == 0
	}
	n, err := strconv.Atoi(s)
	return err == nil && n >= 1 && n <= 128
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func mergeKeys[T any](maps_ ...map[string]func(*decoder, *Node, *T)) map[string]func(*decoder, *Node, *T) {
	out := map[string]func(*decoder, *Node, *T){}
	for _, m := range maps_ {
		maps.Copy(out, m)
	}
	return out
}

func (d *decoder) realServer(n *Node) *RealServer {
	if !d.needBlock(n) || !d.want(n, 1, 2) {
		return nil
	}
	ap, ok := d.hostPort(n, n.Args, "real server")
	if !ok {
		return nil
	}
	var rs *RealServer
	if len(d.vsReals) > 0 {
		rs, d.vsReals = &d.vsReals[0], d.vsReals[1:]
	} else {
		rs = new(RealServer)
	}
	*rs = RealServer{Pos: n.Pos, Addr: ap, Weight: -1, timing: unsetRSTiming}
	walk(d, n, rsBlock, rs)
	for _, c := range n.Children {
		if UnsupportedCheckers[c.Keyword] {
			rs.extra().Unchecked = append(rs.Unchecked(), Unchecked{Type: c.Keyword, Pos: c.Pos})
		}
	}
	return rs
}

// rsFlag is the handler of a real server's keyword that takes no
// argument or an optional <BOOL>, whose default depends on whether it
// was given (bit).
func rsFlag(field func(*RealServer) *bool, bit rsGiven) func(*decoder, *Node, *RealServer) {
	return func(d *decoder, n *Node, rs *RealServer) {
		if v, ok := d.flag(n); ok {
			*field(rs) = v
			rs.given |= bit
		}
	}
}

// UnsupportedCheckers are keepalived's checkers directord does not have.
// Such a checker is skipped with a warning, and its real server is
// checked only by its others (Unchecked), or not at all: always alive.
var UnsupportedCheckers = map[string]bool{
	"BFD_CHECK": true, "PING_CHECK": true, "FILE_CHECK": true,
}

// uncheckedWhy is the warning's detail for an unsupported checker.
const uncheckedWhy = "the real server is not checked by it: always alive without another checker"

// checkerKey returns the handler for a checker block of the given type.
func checkerKey(typ CheckerType, b *block[Checker]) func(*decoder, *Node, *RealServer) {
	return func(d *decoder, n *Node, rs *RealServer) {
		if !d.needBlock(n) {
			return
		}
		d.want(n, 0, 0)
		c := &Checker{Pos: n.Pos, CheckerSpec: &CheckerSpec{Type: typ, timing: *unsetTiming()}}
		switch typ {
		case CheckHTTPGet, CheckSSLGet:
			c.HTTP = &HTTPCheck{HTTPProtocol: "1.0"}
		case CheckMisc:
			c.Misc = &MiscCheck{}
		case CheckUDP:
			c.UDP = &UDPCheck{MaxReply: 255}
		case CheckDNS:
			c.DNS = &DNSCheck{Type: "SOA"}
		case CheckSMTP:
			c.SMTP = &SMTPCheck{}
		}
		walk(d, n, b, c)
		switch {
		case c.UDP != nil && c.UDP.MinReply > c.UDP.MaxReply:
			for _, k := range n.Children {
				if k.Keyword == "min_reply_length" || k.Keyword == "max_reply_length" {
					d.rep.warnf(k.Pos, k.Keyword, "min_reply_length %d is above max_reply_length %d: a reply with data will always fail, as in keepalived", c.UDP.MinReply, c.UDP.MaxReply)
					break
				}
			}
		case c.SMTP != nil:
			if c.SMTP.HELOName == "" {
				c.SMTP.HELOName = "smtpchecker.keepalived.org"
			}
			rs.Checkers = append(rs.Checkers, d.smtpHosts(n, c)...)
			return
		}
		switch {
		case c.HTTP != nil && len(c.HTTP.URLs) == 0:
			if !hasChild(n, "url") {
				d.rep.errorf(n.Pos, n.Keyword, "has no url: it would check nothing")
			}
			return
		case c.HTTP != nil && c.HTTP.ReuseConnection > 0 && c.HTTP.HTTPProtocol == "1.0C":
			for _, k := range n.Children {
				if k.Keyword == "reuse_connection" {
					d.rep.warnf(k.Pos, k.Keyword, "ignored: http_protocol 1.0C asks for Connection: close")
				}
			}
			c.HTTP.ReuseConnection = 0
		case c.Misc != nil && (c.Misc.Script == nil || c.Misc.Script.Command == ""):
			if !hasChild(n, "misc_path") {
				d.rep.errorf(n.Pos, n.Keyword, "has no misc_path")
			}
			return
		}
		if c.HTTP != nil {
			c.HTTP = d.checks.http(*c.HTTP)
		}
		// Shared from here on: a 1,000 x 20 file read alike holds one
		// spec while it is decoded, not 20,000 (the -t peak).
		c.CheckerSpec = d.checks.spec(*c.CheckerSpec)
		rs.Checkers = append(rs.Checkers, c)
	}
}

var rsBlock = &block[RealServer]{
	name: "real_server",
	keys: mergeKeys(timingKeys(rsTiming, 1),
		map[string]func(*decoder, *Node, *RealServer){
			"smtp_alert": func(d *decoder, n *Node, rs *RealServer) {
				// As the other levels' tristate: a bad value leaves it
				// unset, even after a good one.
				rs.given &^= givenSMTPAlert | smtpAlertOn
				if v, ok := d.flag(n); ok {
					rs.given |= givenSMTPAlert
					if v {
						rs.given |= smtpAlertOn
					}
				}
			},
			"weight": func(d *decoder, n *Node, rs *RealServer) {
				if v, ok := d.integer(n, 0, 1<<31-1); ok {
					rs.Weight = int(v)
				}
			},
			"lvs_method": func(d *decoder, n *Node, rs *RealServer) {
				if m, ok := d.method(n); ok {
					rs.Method = m
				}
			},
			"uthreshold": func(d *decoder, n *Node, rs *RealServer) {
				if v, ok := d.integer(n, 0, 1<<32-1); ok {
					rs.extra().UThreshold = uint32(v)
				}
			},
			"lthreshold": func(d *decoder, n *Node, rs *RealServer) {
				if v, ok := d.integer(n, 0, 1<<32-1); ok {
					rs.extra().LThreshold = uint32(v)
				}
			},
			"inhibit_on_failure": rsFlag(func(rs *RealServer) *bool { return &rs.InhibitOnFailure }, givenInhibit),
			"alpha":              rsFlag(func(rs *RealServer) *bool { return &rs.Alpha }, givenAlpha),
			"notify_up":          func(d *decoder, n *Node, rs *RealServer) { rs.extra().NotifyUp = d.script(n) },
			"notify_down":        func(d *decoder, n *Node, rs *RealServer) { rs.extra().NotifyDown = d.script(n) },
			"virtualhost":        func(d *decoder, n *Node, rs *RealServer) { rs.extra().VirtualHost, _ = d.str(n) },
			"HTTP_GET":           checkerKey(CheckHTTPGet, httpCheckBlock),
			"SSL_GET":            checkerKey(CheckSSLGet, httpCheckBlock),
			"TCP_CHECK":          checkerKey(CheckTCP, tcpCheckBlock),
			"MISC_CHECK":         checkerKey(CheckMisc, miscCheckBlock),
			"UDP_CHECK":          checkerKey(CheckUDP, udpCheckBlock),
			"DNS_CHECK":          checkerKey(CheckDNS, dnsCheckBlock),
			"SMTP_CHECK":         checkerKey(CheckSMTP, smtpCheckBlock),
		}),
	unsupported: map[string]string{
		"BFD_CHECK": uncheckedWhy, "PING_CHECK": uncheckedWhy, "FILE_CHECK": uncheckedWhy,
		"snmp_name": "directord has no SNMP interface",
	},
}

// Checker blocks: every checker has the timings and alpha; all but
// MISC_CHECK the connection options; HTTP_GET and SSL_GET their own.
var checkerTiming = mergeKeys(timingKeys(func(c *Checker) *timing { return &c.timing }, 0),
	map[string]func(*decoder, *Node, *Checker){
		"alpha": func(d *decoder, n *Node, c *Checker) {
			if v, ok := d.flag(n); ok {
				c.alphaSet, c.alphaGiven = true, v
			}
		},
		"log_all_failures": func(d *decoder, n *Node, c *Checker) { c.LogAllFailures, _ = d.flag(n) },
		// directord extensions.
		"rise": func(d *decoder, n *Node, c *Checker) {
			if v, ok := d.integer(n, 1, 1000); ok {
				c.Rise = int(v)
			}
		},
		"fall": func(d *decoder, n *Node, c *Checker) {
			if v, ok := d.integer(n, 1, 1000); ok {
				c.Fall = int(v)
			}
		},
	})

// Extensions are the checker keywords directord reads that keepalived
// does not: a configuration using them is no longer keepalived's.
var Extensions = map[string]string{
	"rise":               "consecutive successes that bring a checker up",
	"fall":               "consecutive failures that bring a checker down (instead of retry+1)",
	"sni_name":           "the server name sent with enable_sni",
	"verify_certificate": "verify the real server's certificate (SSL_GET)",
	"reuse_connection":   "keep a probe's connection for the next probes, for at most this many seconds",
}

var checkerConnection = map[string]func(*decoder, *Node, *Checker){
	"connect_ip": func(d *decoder, n *Node, c *Checker) { c.ConnectIP, _ = d.addr(n) },
	"connect_port": func(d *decoder, n *Node, c *Checker) {
		if d.noBlock(n) && d.want(n, 1, 1) {
			c.ConnectPort, _ = d.portArg(n, 0)
		}
	},
	"bindto": func(d *decoder, n *Node, c *Checker) { c.BindTo, _ = d.addr(n) },
	"bind_port": func(d *decoder, n *Node, c *Checker) {
		if d.noBlock(n) && d.want(n, 1, 1) {
			c.BindPort, _ = d.portArg(n, 0)
		}
	},
	"bind_if": func(d *decoder, n *Node, c *Checker) { c.BindIf, _ = d.str(n) },
	"fwmark": func(d *decoder, n *Node, c *Checker) {
		if v, ok := d.integer(n, 0, 1<<32-1); ok {
			c.FWMark = uint32(v)
		}
	},
}

var tcpCheckBlock = &block[Checker]{
	name: "TCP_CHECK",
	keys: mergeKeys(checkerTiming, checkerConnection),
}

var udpCheckBlock = &block[Checker]{
	name: "UDP_CHECK",
	keys: mergeKeys(checkerTiming, checkerConnection, map[string]func(*decoder, *Node, *Checker){
		"payload": func(d *decoder, n *Node, c *Checker) {
			if !d.noBlock(n) {
				return
			}
			if len(n.Args) == 0 {
				d.rep.errorf(n.Pos, n.Keyword, "requires a payload (hexadecimal digits)")
				return
			}
			b, _, ok := readHex(strings.Join(n.Args, " "), false)
			if !ok {
				d.rep.errorf(n.Pos, n.Keyword, "%q is not a hexadecimal string", strings.Join(n.Args, " "))
				return
			}
			c.UDP.Payload = b
		},
		"require_reply": func(d *decoder, n *Node, c *Checker) {
			if !d.noBlock(n) {
				return
			}
			c.UDP.RequireReply = true
			if len(n.Args) == 0 {
				return
			}
			b, mask, ok := readHex(strings.Join(n.Args, " "), true)
			if !ok {
				d.rep.errorf(n.Pos, n.Keyword, "%q is not a hexadecimal string (x for a wildcard digit)", strings.Join(n.Args, " "))
				return
			}
			c.UDP.Reply, c.UDP.ReplyMask = b, mask
		},
		"min_reply_length": func(d *decoder, n *Node, c *Checker) {
			if v, ok := d.integer(n, 0, 65535); ok {
				c.UDP.MinReply = int(v)
			}
		},
		"max_reply_length": func(d *decoder, n *Node, c *Checker) {
			if v, ok := d.integer(n, 0, 65535); ok {
				c.UDP.MaxReply = int(v)
			}
		},
	}),
}

// readHex reads a hex string as keepalived's read_hex_str does: blanks
// between octets are skipped, an octet is two digits or one (followed by
// a blank or the end), and with wildcards an x (or X) is a wildcard
// digit, whose bits are set in mask (nil without any wildcard).
func readHex(s string, wildcards bool) (data, mask []byte, ok bool) {
	val := func(c byte) (byte, bool, bool) {
		switch {
		case c >= '0' && c <= '9':
			return c - '0', false, true
		case c >= 'a' && c <= 'f':
			return c - 'a' + 10, false, true
		case c >= 'A' && c <= 'F':
			return c - 'A' + 10, false, true
		case wildcards && (c == 'x' || c == 'X'):
			return 0, true, true
		}
		return 0, false, false
	}
	wild := false
	for i := 0; ; {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		if i == len(s) {
			break
		}
		v, w, good := val(s[i])
		if !good {
			return nil, nil, false
		}
		i++
		var m byte
		if w {
			m = 0x0f
		}
		if i < len(s) && s[i] != ' ' {
			v2, w2, good := val(s[i])
			if !good {
				return nil, nil, false
			}
			i++
			v, m = v<<4|v2, m<<4
			if w2 {
				m |= 0x0f
			}
		}
		wild = wild || m != 0
		data, mask = append(data, v), append(mask, m)
	}
	if len(data) == 0 {
		return nil, nil, false
	}
	if !wild {
		mask = nil
	}
	return data, mask, true
}

// dnsTypes are DNS_CHECK's query types, as keepalived knows them.
var dnsTypes = map[string]uint16{"A": 1, "NS": 2, "CNAME": 5, "SOA": 6, "MX": 15, "TXT": 16, "AAAA": 28, "RRSIG": 46, "DNSKEY": 48}

// DNSType is the number of a DNS_CHECK type.
func DNSType(name string) uint16 { return dnsTypes[name] }

var dnsCheckBlock = &block[Checker]{
	name: "DNS_CHECK",
	keys: mergeKeys(checkerTiming, checkerConnection, map[string]func(*decoder, *Node, *Checker){
		"type": func(d *decoder, n *Node, c *Checker) {
			s, ok := d.str(n)
			if !ok {
				return
			}
			if _, known := dnsTypes[strings.ToUpper(s)]; !known {
				d.rep.lenient(n.Pos, n.Keyword, "unknown DNS check type %q, ignored as keepalived does (SOA is asked)%s", s, didYouMean(strings.ToUpper(s), slices.Sorted(maps.Keys(dnsTypes))))
				return
			}
			c.DNS.Type = strings.ToUpper(s)
		},
		"name": func(d *decoder, n *Node, c *Checker) {
			s, ok := d.str(n)
			if !ok {
				return
			}
			if c.DNS.Name != "" {
				d.rep.lenient(n.Pos, n.Keyword, "name already given: %q ignored, as keepalived ignores it", s)
				return
			}
			if strings.HasPrefix(s, ".") && s != "." || strings.Contains(s, "..") {
				d.rep.lenient(n.Pos, n.Keyword, "%q has an empty label: ignored, as keepalived ignores it (the root is asked)", s)
				return
			}
			for _, l := range strings.Split(strings.TrimSuffix(s, "."), ".") {
				if len(l) > 63 {
					// keepalived would send a malformed query.
					d.rep.errorf(n.Pos, n.Keyword, "label %q is longer than 63 bytes", l)
					return
				}
			}
			if len(s) > 253 {
				d.rep.errorf(n.Pos, n.Keyword, "%q is longer than 253 bytes", s)
				return
			}
			c.DNS.Name = s
		},
	}),
}

var smtpCheckBlock = &block[Checker]{
	name: "SMTP_CHECK",
	keys: mergeKeys(checkerTiming, checkerConnection, map[string]func(*decoder, *Node, *Checker){
		"helo_name": func(d *decoder, n *Node, c *Checker) {
			if d.noBlock(n) && d.want(n, 1, -1) {
				c.SMTP.HELOName = strings.Join(n.Args, " ")
			}
		},
		// Read by smtpHosts, once the checker's own settings are known.
		"host": func(d *decoder, n *Node, c *Checker) { d.needBlock(n) },
	}),
}

var smtpHostBlock = &block[Checker]{
	name: "host",
	keys: mergeKeys(checkerConnection, map[string]func(*decoder, *Node, *Checker){
		"connect_timeout": timingKeys(func(c *Checker) *timing { return &c.timing }, 0)["connect_timeout"],
	}),
}

// smtpHosts is an SMTP_CHECK with its host blocks (deprecated, and still
// read by keepalived 2.2.7): one checker per host, each with the host's
// connection options and the checker's other settings. The checker itself
// checks too, unless it has no connection option or connect_timeout of
// its own and has hosts: then, as in keepalived, its first host takes its
// place.
func (d *decoder) smtpHosts(n *Node, c *Checker) []*Checker {
	var hosts []*Checker
	for _, k := range n.Children {
		if k.Keyword != "host" || !k.Block {
			continue
		}
		d.want(k, 0, 0)
		h := &Checker{Pos: k.Pos, CheckerSpec: &CheckerSpec{Type: c.Type, timing: c.timing,
			alphaSet: c.alphaSet, alphaGiven: c.alphaGiven, LogAllFailures: c.LogAllFailures,
			Rise: c.Rise, Fall: c.Fall, SMTP: &SMTPCheck{HELOName: c.SMTP.HELOName}}}
		h.timing.connectTimeout = -1
		walk(d, k, smtpHostBlock, h)
		if h.timing.connectTimeout < 0 {
			h.timing.connectTimeout = c.timing.connectTimeout
		}
		hosts = append(hosts, h)
	}
	if len(hosts) > 0 {
		d.rep.warnf(n.Pos, n.Keyword, "host blocks are deprecated (keepalived says so too): write one SMTP_CHECK with connect_ip for each")
	}
	own := !c.ConnectIP.IsValid() && c.ConnectPort == 0 && !c.BindTo.IsValid() && c.BindPort == 0 &&
		c.BindIf == "" && c.FWMark == 0 && c.timing.connectTimeout < 0
	if own && len(hosts) > 0 {
		return hosts
	}
	return append([]*Checker{c}, hosts...)
}

var httpCheckBlock = &block[Checker]{
	name: "HTTP_GET/SSL_GET",
	keys: mergeKeys(checkerTiming, checkerConnection, map[string]func(*decoder, *Node, *Checker){
		"nb_get_retry": func(d *decoder, n *Node, c *Checker) {
			if v, ok := d.integer(n, 0, 1<<31-1); ok {
				// keepalived reports it as a configuration error (-t
				// exits 5) and reads it as retry.
				d.rep.lenient(n.Pos, n.Keyword, "deprecated: read as retry, as keepalived does")
				c.timing.retry = int(v)
			}
		},
		"virtualhost": func(d *decoder, n *Node, c *Checker) { c.HTTP.VirtualHost, _ = d.str(n) },
		"http_protocol": func(d *decoder, n *Node, c *Checker) {
			if s, ok := d.str(n); ok {
				switch s {
				case "1.0", "1.1", "1.0C":
					c.HTTP.HTTPProtocol = s
				case "1.0c":
					c.HTTP.HTTPProtocol = "1.0C"
				default:
					d.rep.errorf(n.Pos, n.Keyword, "%q is not 1.0, 1.0C or 1.1", s)
				}
			}
		},
		"enable_sni": func(d *decoder, n *Node, c *Checker) { c.HTTP.EnableSNI, _ = d.flag(n) },
		"sni_name":   func(d *decoder, n *Node, c *Checker) { c.HTTP.SNIName, _ = d.str(n) },
		"verify_certificate": func(d *decoder, n *Node, c *Checker) {
			c.HTTP.VerifyCertificate, _ = d.flag(n)
		},
		"fast_recovery": func(d *decoder, n *Node, c *Checker) { c.HTTP.FastRecovery, _ = d.flag(n) },
		"reuse_connection": func(d *decoder, n *Node, c *Checker) {
			if v, ok := d.timer(n, 0, maxTimer); ok {
				c.HTTP.ReuseConnection = v
			}
		},
		"url": func(d *decoder, n *Node, c *Checker) {
			if !d.needBlock(n) {
				return
			}
			d.want(n, 0, 0)
			u := &URL{}
			walk(d, n, urlBlock, u)
			if u.Path == "" {
				if !hasChild(n, "path") {
					d.rep.errorf(n.Pos, n.Keyword, "has no path")
				}
				return
			}
			if u.StatusCodes == nil {
				u.StatusCodes = []StatusRange{{200, 299}}
			}
			d.compileRegex(u)
			c.HTTP.URLs = append(c.HTTP.URLs, d.checks.url(u))
		},
	}),
}

var urlBlock = &block[URL]{
	name: "url",
	keys: map[string]func(*decoder, *Node, *URL){
		"path": func(d *decoder, n *Node, u *URL) {
			if s, ok := d.str(n); ok {
				if !strings.HasPrefix(s, "/") && !strings.Contains(s, "://") {
					d.rep.warnf(n.Pos, n.Keyword, "path %q does not start with /", s)
				}
				u.Path = s
			}
		},
		"digest": func(d *decoder, n *Node, u *URL) {
			if s, ok := d.str(n); ok {
				if len(s) != 32 || strings.Trim(strings.ToLower(s), "0123456789abcdef") != "" {
					d.rep.errorf(n.Pos, n.Keyword, "%q is not an MD5 digest (32 hexadecimal digits)", s)
					return
				}
				u.Digest = strings.ToLower(s)
			}
		},
		"status_code": func(d *decoder, n *Node, u *URL) {
			if !d.noBlock(n) || !d.want(n, 1, -1) {
				return
			}
			var codes []StatusRange
			for _, a := range n.Args {
				lo, hi, isRange := strings.Cut(a, "-")
				if !isRange {
					hi = lo
				}
				l, err1 := strconv.Atoi(lo)
				h, err2 := strconv.Atoi(hi)
				if err1 != nil || err2 != nil || l < 100 || h > 599 || l > h {
					d.rep.errorf(n.Pos, n.Keyword, "%q is not a status code or range from 100 to 599", a)
					return
				}
				codes = append(codes, StatusRange{l, h})
			}
			u.StatusCodes = codes
		},
		"virtualhost": func(d *decoder, n *Node, u *URL) { u.VirtualHost, _ = d.str(n) },
		"regex": func(d *decoder, n *Node, u *URL) {
			if !d.noBlock(n) || !d.want(n, 1, 1) {
				return
			}
			pat := n.Args[0]
			if len(n.quoted) > 0 && !n.quoted[0] && strings.Contains(pat, `\`) {
				// keepalived reads the escapes of the whole line, in quotes
				// or not: unquoted, \d is d.
				if strings.HasSuffix(pat, `\`) && !strings.HasSuffix(pat, `\\`) {
					d.rep.errorf(n.Pos, n.Keyword, "%q ends with a lone backslash", pat)
					return
				}
				var b strings.Builder
				for i := 0; i < len(pat); {
					if pat[i] == '\\' && i+1 < len(pat) {
						i = unescape(pat, i+1, &b)
						continue
					}
					b.WriteByte(pat[i])
					i++
				}
				d.rep.warnf(n.Pos, n.Keyword, "backslashes outside quotes are escapes, as keepalived reads them: the pattern is %q; write it in double quotes with \\\\ for a backslash of the pattern", b.String())
				pat = b.String()
			}
			u.Regex = pat
			u.regexPos().at = n.Pos
		},
		"regex_no_match": func(d *decoder, n *Node, u *URL) {
			if d.noBlock(n) {
				d.want(n, 0, 0)
				u.RegexNoMatch = true
				u.regexPos().param = n.Pos
			}
		},
		"regex_options": func(d *decoder, n *Node, u *URL) {
			if !d.noBlock(n) {
				return
			}
			for _, o := range n.Args {
				why, known := regexOptions[o]
				switch {
				case !known:
					d.rep.warnf(n.Pos, n.Keyword, "%q is not an option of keepalived's: ignored, as keepalived ignores it", o)
					continue
				case why != "":
					d.rep.errorf(n.Pos, n.Keyword, "%s is not supported by directord: %s", o, why)
					continue
				}
				u.RegexOptions = append(u.RegexOptions, o)
			}
			u.regexPos().param = n.Pos
		},
		"regex_min_offset": func(d *decoder, n *Node, u *URL) {
			if v, ok := d.integer(n, 0, maxBody); ok {
				u.RegexMinOffset = int(v)
				u.regexPos().param = n.Pos
			}
		},
		"regex_max_offset": func(d *decoder, n *Node, u *URL) {
			if v, ok := d.integer(n, 0, maxBody); ok {
				m := int(v)
				u.RegexMaxOffset = &m
				u.regexPos().param = n.Pos
			}
		},
		"regex_stack": func(d *decoder, n *Node, u *URL) {
			// PCRE2's JIT stack, start and most: Go's regexp has no such
			// stack (it runs in linear time).
			if !d.noBlock(n) || !d.want(n, 2, 2) {
				return
			}
			lo, ok1 := d.intArg(n, 0, 0, 1<<31-1)
			hi, ok2 := d.intArg(n, 1, 0, 1<<31-1)
			if ok1 && ok2 && lo > hi {
				d.rep.errorf(n.Pos, n.Keyword, "start %d is above most %d", lo, hi)
			}
			u.regexPos().param = n.Pos
		},
	},
}

// maxBody bounds the regex offsets: the answer is read up to 16 MiB (as
// healthcheck reads it).
const maxBody = 16 << 20

// regexOptions are keepalived's regex_options (PCRE2's compile options):
// "" for those directord follows, else why it cannot. caseless, dotall,
// multiline and ungreedy are Go's flags i, s, m and U; firstline is
// checked on the match; utf is Go's own way (UTF-8); the others change
// nothing a match decides, or forbid what Go's syntax has not anyway.
var regexOptions = map[string]string{
	"allow_empty_class":   "Go's syntax reads [] as PCRE2 does without it",
	"alt_bsux":            "Go's syntax has no JavaScript escapes",
	"auto_callout":        "",
	"caseless":            "",
	"dollar_endonly":      "",
	"dotall":              "",
	"dupnames":            "",
	"extended":            "Go's regular expressions have no extended syntax (blanks and # comments): remove them from the pattern",
	"firstline":           "",
	"match_unset_backref": "",
	"multiline":           "",
	"never_ucp":           "",
	"never_utf":           "",
	"no_auto_capture":     "",
	"no_auto_possess":     "",
	"no_dotstar_anchor":   "",
	"no_start_optimize":   "",
	"ucp":                 "Go's \\d, \\w, \\s and \\b are ASCII only",
	"ungreedy":            "",
	"utf":                 "",
	"never_backslash_c":   "",
	"alt_circumflex":      "Go's ^ in multiline mode does not match after a final newline",
	"alt_verbnames":       "Go's syntax has no backtracking verbs",
	"use_offset_limit":    "",
}

// compileRegex compiles u's regex once its block is read, as keepalived
// does at the url's end: with its options, in Go's syntax, an error at
// the regex's line where Go cannot compile it. Regex settings without a
// regex, or offsets that leave no room, are ignored with a warning, as
// keepalived ignores them.
func (d *decoder) compileRegex(u *URL) {
	var rx urlRegexPos
	if u.rx != nil {
		rx, u.rx = *u.rx, nil
	}
	if u.Regex == "" {
		if rx.param.Line != 0 {
			d.rep.warnf(rx.param, "regex", "regex settings without a regex: ignored, as keepalived does")
		}
		u.RegexNoMatch, u.RegexOptions, u.RegexMinOffset, u.RegexMaxOffset = false, nil, 0, nil
		return
	}
	if u.RegexMaxOffset != nil && u.RegexMinOffset > *u.RegexMaxOffset {
		d.rep.warnf(rx.param, "regex_min_offset", "regex_min_offset %d is beyond regex_max_offset %d: both ignored, as keepalived does", u.RegexMinOffset, *u.RegexMaxOffset)
		u.RegexMinOffset, u.RegexMaxOffset = 0, nil
	}
	flags := ""
	for _, o := range u.RegexOptions {
		switch o {
		case "caseless":
			flags += "i"
		case "dotall":
			flags += "s"
		case "multiline":
			flags += "m"
		case "ungreedy":
			flags += "U"
		case "firstline":
			u.RegexFirstLine = true
		}
	}
	pat := u.Regex
	if flags != "" {
		pat = "(?" + flags + ")" + pat
	}
	re, err := regexp.Compile(pat)
	if err != nil {
		d.rep.errorf(rx.at, "regex", "%q is not a regular expression directord can match (Go's syntax, RE2: no backreferences, lookahead or lookbehind): %v", u.Regex, err)
		return
	}
	u.Regexp = re
}

var miscCheckBlock = &block[Checker]{
	name: "MISC_CHECK",
	keys: mergeKeys(checkerTiming, map[string]func(*decoder, *Node, *Checker){
		"misc_path": func(d *decoder, n *Node, c *Checker) {
			user, group := "", ""
			if c.Misc.Script != nil {
				user, group = c.Misc.Script.User, c.Misc.Script.Group
			}
			if s := d.script(n); s != nil {
				if s.User == "" {
					s.User, s.Group = user, group
				}
				c.Misc.Script = s
			}
		},
		"misc_timeout": func(d *decoder, n *Node, c *Checker) {
			if v, ok := d.integer(n, 0, 1<<31-1); ok {
				c.Misc.Timeout = time.Duration(v) * time.Second
			}
		},
		"misc_dynamic": func(d *decoder, n *Node, c *Checker) { c.Misc.Dynamic, _ = d.flag(n) },
		"user": func(d *decoder, n *Node, c *Checker) {
			if d.noBlock(n) && d.want(n, 1, 2) {
				if c.Misc.Script == nil {
					c.Misc.Script = &Script{}
				}
				c.Misc.Script.User = n.Args[0]
				if len(n.Args) > 1 {
					c.Misc.Script.Group = n.Args[1]
				}
			}
		},
	}),
}

// vsgEntry reads one line of a virtual_server_group: "IP [PORT]", an
// address range with a port, or "fwmark N [inet|inet6]".
func (d *decoder) vsgEntry(n *Node) (VSGEntry, bool) {
	e := VSGEntry{Pos: n.Pos}
	if n.Keyword == "fwmark" {
		if !d.want(n, 1, 2) {
			return e, false
		}
		v, ok := d.intArg(n, 0, 0, 1<<32-1)
		if !ok {
			return e, false
		}
		e.FWMark = uint32(v)
		if len(n.Args) == 2 {
			f, err := ParseFamily(n.Args[1])
			if err != nil {
				d.rep.errorf(n.Pos, n.Keyword, "%q is not inet or inet6", n.Args[1])
				return e, false
			}
			e.Family = f
		}
		return e, true
	}
	first, last, ok := parseRange(n.Keyword)
	if !ok {
		d.rep.errorf(n.Pos, n.Keyword, "%q is not an address or a range (A-N, A-B or A/LEN)", n.Keyword)
		return e, false
	}
	e.First, e.Last, e.Family = first, last, family(first)
	if len(n.Args) > 0 {
		p, err := strconv.ParseUint(n.Args[0], 10, 16)
		if err != nil {
			d.rep.errorf(n.Pos, n.Keyword, "port %q is not a number from 0 to 65535", n.Args[0])
			return e, false
		}
		e.Port = uint16(p)
		d.want(n, 0, 1)
	}
	return e, true
}

// parseRange reads a virtual_server_group address: a single address,
// "a.b.c.d-N" (N replaces the last octet, decimal) or "x::y-HHHH" (the last
// group, hexadecimal), "A-B" with two full addresses, or "A/LEN" (host bits
// zero).
func parseRange(s string) (netip.Addr, netip.Addr, bool) {
	if a, err := netip.ParseAddr(s); err == nil {
		return a, a, true
	}
	if base, l, ok := strings.Cut(s, "/"); ok {
		p, err := netip.ParsePrefix(base + "/" + l)
		if err != nil || p.Masked() != p || p.Bits() == 0 {
			return netip.Addr{}, netip.Addr{}, false
		}
		return p.Addr(), lastInPrefix(p), true
	}
	lo, hi, ok := strings.Cut(s, "-")
	if !ok {
		return netip.Addr{}, netip.Addr{}, false
	}
	first, err := netip.ParseAddr(lo)
	if err != nil {
		return netip.Addr{}, netip.Addr{}, false
	}
	var last netip.Addr
	if (first.Is4() && strings.Contains(hi, ".")) || (first.Is6() && strings.Contains(hi, ":")) {
		last, err = netip.ParseAddr(hi)
		if err != nil || last.BitLen() != first.BitLen() {
			return netip.Addr{}, netip.Addr{}, false
		}
	} else {
		b := first.AsSlice()
		if first.Is4() {
			v, err := strconv.ParseUint(hi, 10, 8)
			if err != nil {
				return netip.Addr{}, netip.Addr{}, false
			}
			b[3] = byte(v)
		} else {
			v, err := strconv.ParseUint(hi, 16, 16)
			if err != nil {
				return netip.Addr{}, netip.Addr{}, false
			}
			b[14], b[15] = byte(v>>8), byte(v)
		}
		last, _ = netip.AddrFromSlice(b)
	}
	if last.Compare(first) <= 0 {
		return netip.Addr{}, netip.Addr{}, false
	}
	return first, last, true
}

func lastInPrefix(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}
