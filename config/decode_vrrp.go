package config

import (
	"maps"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

func newInstance(pos Pos, name string) *Instance {
	return &Instance{
		Pos: pos, Name: name, State: Backup, Priority: -1, AdvertInt: time.Second,
		Version: -1, Preempt: true, UnicastTTL: 255,
		Garp: GarpSettings{MasterDelay: -1, MasterRepeat: -1, LowerPrioDelay: -1, LowerPrioRepeat: -1,
			MasterRefresh: -1, MasterRefreshRepeat: -1, ExtraIf: -1},
	}
}

var instanceBlock = &block[Instance]{
	name: "vrrp_instance",
	keys: map[string]func(*decoder, *Node, *Instance){
		"smtp_alert": func(d *decoder, n *Node, in *Instance) { in.smtpAlert = d.tristate(n) },
		"state": func(d *decoder, n *Node, in *Instance) {
			if s, ok := d.str(n); ok {
				switch s {
				case "MASTER", "BACKUP":
					in.State = Backup
					if s == "MASTER" {
						in.State = Master
					}
					markSet(&in.set, n)
				default:
					// keepalived 2.2.7: "unknown state 'SLAVE', defaulting
					// to BACKUP".
					d.rep.lenient(n.Pos, n.Keyword, "%q is not MASTER or BACKUP: BACKUP, as keepalived does", s)
					in.State = Backup
					markSet(&in.set, n)
				}
			}
		},
		"interface": func(d *decoder, n *Node, in *Instance) {
			if s, ok := d.str(n); ok {
				if len(s) >= 16 || strings.ContainsAny(s, "/ ") {
					d.rep.errorf(n.Pos, n.Keyword, "%q is not an interface name", s)
					return
				}
				in.Interface = s
			}
		},
		"virtual_router_id": intKey(1, 255, func(in *Instance) *int { return &in.VRID }),
		"priority":          intKey(1, 255, func(in *Instance) *int { return &in.Priority }),
		"advert_int": func(d *decoder, n *Node, in *Instance) {
			if v, ok := d.timer(n, 10*time.Millisecond, 255*time.Second); ok {
				in.AdvertInt = v
				markSet(&in.set, n)
			}
		},
		"version": func(d *decoder, n *Node, in *Instance) {
			if v, ok := d.integer(n, 2, 3); ok {
				in.Version = int(v)
				markSet(&in.set, n)
			}
		},
		"nopreempt": func(d *decoder, n *Node, in *Instance) {
			if d.noBlock(n) && d.want(n, 0, 0) {
				in.Preempt = false
				markSet(&in.set, n)
			}
		},
		"preempt": func(d *decoder, n *Node, in *Instance) {
			if d.noBlock(n) && d.want(n, 0, 0) {
				in.Preempt = true
				delete(in.set, "nopreempt")
			}
		},
		"preempt_delay": func(d *decoder, n *Node, in *Instance) {
			if v, ok := d.timer(n, 0, 1000*time.Second); ok {
				in.PreemptDelay = v
				markSet(&in.set, n)
			}
		},
		"authentication": func(d *decoder, n *Node, in *Instance) {
			if d.needBlock(n) {
				d.want(n, 0, 0)
				a := &Auth{}
				walk(d, n, authBlock, a)
				switch {
				case a.Type == AuthUnset:
					if !hasChild(n, "auth_type") {
						d.rep.errorf(n.Pos, n.Keyword, "has no auth_type")
					}
				case a.Type == AuthPass && a.Pass == "":
					if !hasChild(n, "auth_pass") {
						d.rep.errorf(n.Pos, n.Keyword, "auth_type PASS has no auth_pass")
					}
				default:
					in.Auth = a
					markSet(&in.set, n)
				}
			}
		},
		"virtual_ipaddress":          entries((*decoder).vip, func(in *Instance) *[]VIP { return &in.VIPs }),
		"virtual_ipaddress_excluded": entries((*decoder).vip, func(in *Instance) *[]VIP { return &in.ExcludedVIPs }),
		"virtual_routes":             entries((*decoder).route, func(in *Instance) *[]Route { return &in.Routes }),
		"mcast_src_ip":               func(d *decoder, n *Node, in *Instance) { in.MCastSrcIP, _ = d.addr(n) },
		"unicast_src_ip": func(d *decoder, n *Node, in *Instance) {
			in.UnicastSrcIP, _ = d.addr(n)
			markSet(&in.set, n)
		},
		"mcast_dst_ip": func(d *decoder, n *Node, in *Instance) {
			if a, ok := d.addr(n); ok {
				if !a.IsMulticast() {
					d.rep.errorf(n.Pos, n.Keyword, "%s is not a multicast address", a)
					return
				}
				in.MCastDstIP = a
			}
		},
		"unicast_peer": func(d *decoder, n *Node, in *Instance) {
			d.want(n, 0, 0)
			if len(n.Children) == 0 {
				markSet(&in.set, n) // an empty block: no peers said so
			}
			d.lines(n, func(c *Node) {
				if p, ok := d.unicastPeer(c); ok {
					in.UnicastPeers = append(in.UnicastPeers, p)
				}
			})
		},
		"unicast_ttl": func(d *decoder, n *Node, in *Instance) {
			if v, ok := d.integer(n, 0, 255); ok {
				in.UnicastTTL = int(v)
				markSet(&in.set, n)
			}
		},
		"unicast_fault_no_peer": boolKey(func(in *Instance) *bool { return &in.UnicastFaultNoPeer }, instanceSet),
		"check_unicast_src":     boolKey(func(in *Instance) *bool { return &in.CheckUnicastSrc }, instanceSet),
		"track_src_ip":          boolKey(func(in *Instance) *bool { return &in.TrackSrcIP }, instanceSet),
		"track_interface": func(d *decoder, n *Node, in *Instance) {
			in.TrackInterfaces = append(in.TrackInterfaces, d.trackInterfaces(n)...)
		},
		"track_script": func(d *decoder, n *Node, in *Instance) {
			in.TrackScripts = append(in.TrackScripts, d.trackScripts(n)...)
		},
		"dont_track_primary": boolKey(func(in *Instance) *bool { return &in.DontTrackPrimary }, instanceSet),
		"notify_master":      func(d *decoder, n *Node, in *Instance) { in.Notify.Master = d.script(n) },
		"notify_backup":      func(d *decoder, n *Node, in *Instance) { in.Notify.Backup = d.script(n) },
		"notify_fault":       func(d *decoder, n *Node, in *Instance) { in.Notify.Fault = d.script(n) },
		"notify_stop":        func(d *decoder, n *Node, in *Instance) { in.Notify.Stop = d.script(n) },
		"notify":             func(d *decoder, n *Node, in *Instance) { in.Notify.Any = d.script(n) },
		"notify_deleted": func(d *decoder, n *Node, in *Instance) {
			if len(n.Args) == 0 {
				d.noBlock(n)
				in.Notify.Deleted = &Script{}
				return
			}
			in.Notify.Deleted = d.script(n)
		},
		"garp_master_refresh": func(d *decoder, n *Node, in *Instance) {
			if v, ok := d.garpDelay(n); ok {
				in.Garp.MasterRefresh = v
			}
		},
		"accept": func(d *decoder, n *Node, in *Instance) {
			if d.noBlock(n) && d.want(n, 0, 0) {
				in.Accept = true
				markSet(&in.set, &Node{Keyword: "accept", Pos: n.Pos})
			}
		},
		"no_accept": func(d *decoder, n *Node, in *Instance) {
			if d.noBlock(n) && d.want(n, 0, 0) {
				in.Accept = false
				markSet(&in.set, &Node{Keyword: "accept", Pos: n.Pos})
			}
		},
		"strict_mode":             boolKey(func(in *Instance) *bool { return &in.Strict }, instanceSet),
		"skip_check_adv_addr":     boolKey(func(in *Instance) *bool { return &in.SkipCheckAdvAddr }, instanceSet),
		"lower_prio_no_advert":    boolKey(func(in *Instance) *bool { return &in.LowerPrioNoAdvert }, instanceSet),
		"higher_prio_send_advert": boolKey(func(in *Instance) *bool { return &in.HigherPrioSendAdvert }, instanceSet),
		"promote_secondaries":     boolKey(func(in *Instance) *bool { return &in.PromoteSecondaries }, instanceSet),
		"v3_checksum_as_v2":       boolKey(func(in *Instance) *bool { return &in.ChecksumAsV2 }, instanceSet),
		"native_ipv6": func(d *decoder, n *Node, in *Instance) {
			if d.noBlock(n) && d.want(n, 0, 0) {
				markSet(&in.set, n)
			}
		},
		"use_vmac": func(d *decoder, n *Node, in *Instance) {
			if d.noBlock(n) {
				d.useVMAC(n, in)
			}
		},
		"use_vmac_addr": func(d *decoder, n *Node, in *Instance) {
			if d.noBlock(n) {
				in.VMACAddr = true // keepalived's handler reads no argument
			}
		},
		"vmac_xmit_base": func(d *decoder, n *Node, in *Instance) {
			if d.noBlock(n) && d.want(n, 0, 0) {
				markSet(&in.set, n)
			}
		},
		"lvs_sync_daemon_interface": func(d *decoder, n *Node, in *Instance) {
			// Deprecated form of global lvs_sync_daemon IF INSTANCE; resolved
			// after reading, when global_defs is known.
			if s, ok := d.str(n); ok {
				if in.set == nil {
					in.set = map[string]Pos{}
				}
				in.set["lvs_sync_daemon_interface="+s] = n.Pos
			}
		},
	},
	unsupported: map[string]string{
		"use_ipvlan":                 "",
		"vrf":                        "",
		"track_bfd":                  bfdNotSupported,
		"virtual_rules":              "",
		"notify_master_rx_lower_pri": "",
		"kernel_rx_buf_size":         "",
		"linkbeat_use_polling":       "directord follows netlink link state",
		"debug":                      "",
		"down_timer_adverts":         "directord keeps the RFC's 3 advert intervals",
		"old_unicast_checksum":       "",
	},
}

var authBlock = &block[Auth]{
	name: "authentication",
	keys: map[string]func(*decoder, *Node, *Auth){
		"auth_type": func(d *decoder, n *Node, a *Auth) {
			if s, ok := d.str(n); ok {
				t, err := enumParse[AuthType]("auth_type", authNames, s)
				if err != nil || t == AuthUnset {
					d.rep.errorf(n.Pos, n.Keyword, "%q is not PASS or AH", s)
					return
				}
				a.Type = t
			}
		},
		"auth_pass": func(d *decoder, n *Node, a *Auth) {
			if s, ok := d.str(n); ok {
				if len(s) > 8 {
					// keepalived reports it as a configuration error
					// (-t exits 5) and runs past it.
					d.rep.lenient(n.Pos, n.Keyword, "only the first 8 characters are used, as keepalived does")
					s = s[:8]
				}
				a.Pass = s
			}
		},
	},
}

var scriptBlock = &block[VRRPScript]{
	name: "vrrp_script",
	keys: map[string]func(*decoder, *Node, *VRRPScript){
		"script": func(d *decoder, n *Node, s *VRRPScript) {
			user, group := "", ""
			if s.Script != nil {
				user, group = s.Script.User, s.Script.Group
			}
			if sc := d.script(n); sc != nil {
				if sc.User == "" {
					sc.User, sc.Group = user, group
				}
				s.Script = sc
			}
		},
		"interval": func(d *decoder, n *Node, s *VRRPScript) {
			if v, ok := d.scriptSeconds(n); ok {
				s.Interval = v
			}
		},
		"timeout": func(d *decoder, n *Node, s *VRRPScript) {
			if v, ok := d.scriptSeconds(n); ok {
				s.Timeout = v
			}
		},
		"weight": func(d *decoder, n *Node, s *VRRPScript) {
			if d.noBlock(n) && d.want(n, 1, 2) {
				if v, ok := d.intArg(n, 0, -253, 253); ok {
					s.Weight = int(v)
				}
				if len(n.Args) == 2 {
					if n.Args[1] != "reverse" {
						d.rep.errorf(n.Pos, n.Keyword, "%q is not reverse", n.Args[1])
						return
					}
					s.Reverse = true
				}
			}
		},
		"rise": intKey(1, 1<<31-1, func(s *VRRPScript) *int { return &s.Rise }),
		"fall": intKey(1, 1<<31-1, func(s *VRRPScript) *int { return &s.Fall }),
		"user": func(d *decoder, n *Node, s *VRRPScript) {
			if d.noBlock(n) && d.want(n, 1, 2) {
				if s.Script == nil {
					s.Script = &Script{}
				}
				s.Script.User = n.Args[0]
				if len(n.Args) > 1 {
					s.Script.Group = n.Args[1]
				}
			}
		},
		"init_fail": func(d *decoder, n *Node, s *VRRPScript) { s.InitFail, _ = d.flag(n) },
	},
}

var syncGroupBlock = &block[SyncGroup]{
	name: "vrrp_sync_group",
	keys: map[string]func(*decoder, *Node, *SyncGroup){
		"smtp_alert": func(d *decoder, n *Node, g *SyncGroup) { g.smtpAlert = d.tristate(n) },
		"group": func(d *decoder, n *Node, g *SyncGroup) {
			d.want(n, 0, 0)
			d.lines(n, func(c *Node) {
				d.want(c, 0, 0)
				g.Members = append(g.Members, c.Keyword)
				g.memberPos = append(g.memberPos, c.Pos)
			})
		},
		"track_interface": func(d *decoder, n *Node, g *SyncGroup) {
			g.TrackInterfaces = append(g.TrackInterfaces, d.trackInterfaces(n)...)
		},
		"track_script": func(d *decoder, n *Node, g *SyncGroup) {
			g.TrackScripts = append(g.TrackScripts, d.trackScripts(n)...)
		},
		"notify_master": func(d *decoder, n *Node, g *SyncGroup) { g.Notify.Master = d.script(n) },
		"notify_backup": func(d *decoder, n *Node, g *SyncGroup) { g.Notify.Backup = d.script(n) },
		"notify_fault":  func(d *decoder, n *Node, g *SyncGroup) { g.Notify.Fault = d.script(n) },
		"notify_stop":   func(d *decoder, n *Node, g *SyncGroup) { g.Notify.Stop = d.script(n) },
		"notify":        func(d *decoder, n *Node, g *SyncGroup) { g.Notify.Any = d.script(n) },
		"sync_group_tracking_weight": func(d *decoder, n *Node, g *SyncGroup) {
			g.TrackingWeight, _ = d.flag(n)
		},
		"global_tracking": func(d *decoder, n *Node, g *SyncGroup) {
			if v, ok := d.flag(n); ok {
				// keepalived reports it as a configuration error (-t
				// exits 5) and reads it as sync_group_tracking_weight.
				d.rep.lenient(n.Pos, n.Keyword, "deprecated: read as sync_group_tracking_weight, as keepalived does")
				g.TrackingWeight = v
			}
		},
	},
	unsupported: map[string]string{
		"track_bfd": bfdNotSupported,
	},
}

// scriptSeconds reads a vrrp_script interval or timeout: whole seconds up
// to 4294, 0 read as 1 as keepalived does.
func (d *decoder) scriptSeconds(n *Node) (time.Duration, bool) {
	v, ok := d.integer(n, 0, 4294)
	if !ok {
		return 0, false
	}
	if v == 0 {
		d.rep.warnf(n.Pos, n.Keyword, "0 read as 1 second, as keepalived does")
		v = 1
	}
	return time.Duration(v) * time.Second, true
}

// trackInterfaces reads a track_interface block: "IF [weight W [reverse]]".
func (d *decoder) trackInterfaces(n *Node) []TrackInterface {
	d.want(n, 0, 0)
	var out []TrackInterface
	d.lines(n, func(c *Node) {
		t := TrackInterface{Name: c.Keyword, pos: c.Pos}
		w, rev, ok := d.trackWeight(c, []string{"reverse"})
		if !ok {
			return
		}
		t.Weight, t.Reverse = w, rev
		out = append(out, t)
	})
	return out
}

// trackScripts reads a track_script block: "NAME [weight W [reverse|noreverse]]".
func (d *decoder) trackScripts(n *Node) []TrackScript {
	d.want(n, 0, 0)
	var out []TrackScript
	d.lines(n, func(c *Node) {
		t := TrackScript{Name: c.Keyword, Weight: noWeight, pos: c.Pos}
		w, rev, ok := d.trackWeight(c, []string{"reverse", "noreverse"})
		if !ok {
			return
		}
		if len(c.Args) > 0 {
			t.Weight = w
		}
		t.Reverse = rev
		out = append(out, t)
	})
	return out
}

// noWeight marks a track_script entry that takes the script's own weight.
const noWeight = -1 << 31

// trackWeight reads the "[weight W [reverse]]" after a tracked name.
// keepalived accepts ±254 and clamps it to ±253.
func (d *decoder) trackWeight(c *Node, revWords []string) (int, bool, bool) {
	if len(c.Args) == 0 {
		return 0, false, true
	}
	if c.Args[0] != "weight" || len(c.Args) < 2 || len(c.Args) > 3 {
		d.rep.errorf(c.Pos, c.Keyword, "expected \"%s [weight W [%s]]\", got %q", c.Keyword, strings.Join(revWords, "|"), strings.Join(c.Args, " "))
		return 0, false, false
	}
	w, ok := d.intArg(c, 1, -254, 254)
	if !ok {
		return 0, false, false
	}
	if w == 254 || w == -254 {
		d.rep.warnf(c.Pos, c.Keyword, "weight %d read as %d, as keepalived does", w, w/254*253)
		w = w / 254 * 253
	}
	rev := false
	if len(c.Args) == 3 {
		switch c.Args[2] {
		case "reverse":
			rev = true
		case "noreverse":
			if len(revWords) < 2 {
				d.rep.errorf(c.Pos, c.Keyword, "%q is not reverse", c.Args[2])
				return 0, false, false
			}
		default:
			d.rep.errorf(c.Pos, c.Keyword, "%q is not %s", c.Args[2], strings.Join(revWords, " or "))
			return 0, false, false
		}
	}
	return int(w), rev, true
}

// unicastPeer reads "ADDR [min_ttl N] [max_ttl N]".
func (d *decoder) unicastPeer(c *Node) (UnicastPeer, bool) {
	a, err := netip.ParseAddr(c.Keyword)
	if err != nil {
		d.rep.errorf(c.Pos, c.Keyword, "unicast_peer: %q is not an IP address", c.Keyword)
		return UnicastPeer{}, false
	}
	p := UnicastPeer{Addr: a, pos: c.Pos}
	for i := 0; i < len(c.Args); i += 2 {
		if i+1 >= len(c.Args) {
			d.rep.errorf(c.Pos, c.Keyword, "%s needs a value", c.Args[i])
			return p, false
		}
		v, ok := d.intArg(c, i+1, 0, 255)
		if !ok {
			return p, false
		}
		switch c.Args[i] {
		case "min_ttl":
			p.MinTTL = int(v)
		case "max_ttl":
			p.MaxTTL = int(v)
		default:
			d.rep.errorf(c.Pos, c.Keyword, "unknown option %q%s", c.Args[i], didYouMean(c.Args[i], []string{"min_ttl", "max_ttl"}))
			return p, false
		}
	}
	return p, true
}

// parsePrefix reads "ADDR[/LEN]"; without a length it is the host's /32 or
// /128.
func parsePrefix(s string) (netip.Prefix, bool) {
	addr, length, hasLen := strings.Cut(s, "/")
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return netip.Prefix{}, false
	}
	bits := a.BitLen()
	if hasLen {
		n, err := strconv.Atoi(length)
		if err != nil || n < 0 || n > a.BitLen() {
			return netip.Prefix{}, false
		}
		bits = n
	}
	return netip.PrefixFrom(a, bits), true
}

var scopes = []string{"global", "site", "link", "host", "nowhere"}

func validScope(s string) bool {
	for _, v := range scopes {
		if s == v {
			return true
		}
	}
	n, err := strconv.Atoi(s)
	return err == nil && n >= 0 && n <= 255
}

var vipOptions = []string{"dev", "brd", "broadcast", "scope", "label", "peer", "home", "-nodad",
	"mngtmpaddr", "noprefixroute", "autojoin", "no_track", "preferred_lft", "use_vmac"}

// vip reads one virtual_ipaddress line.
func (d *decoder) vip(c *Node) (VIP, bool) {
	v := VIP{Pos: c.Pos, PreferredLft: -1}
	p, ok := parsePrefix(c.Keyword)
	if !ok {
		d.rep.errorf(c.Pos, c.Keyword, "%q is not an IP address with an optional /prefix", c.Keyword)
		return v, false
	}
	v.Prefix = p
	is6 := p.Addr().Is6()
	if is6 && p.Bits() == 128 {
		v.PreferredLft = 0
	}
	args := c.Args
	value := func(i int) (string, bool) {
		if i+1 >= len(args) {
			d.rep.errorf(c.Pos, c.Keyword, "%s needs a value", args[i])
			return "", false
		}
		return args[i+1], true
	}
	for i := 0; i < len(args); i++ {
		opt := args[i]
		switch opt {
		case "dev", "label", "scope", "brd", "broadcast", "peer", "preferred_lft":
			val, ok := value(i)
			if !ok {
				return v, false
			}
			i++
			switch opt {
			case "dev":
				v.Dev = val
			case "label":
				if is6 {
					d.rep.warnf(c.Pos, c.Keyword, "label is ignored for an IPv6 address")
					continue
				}
				v.Label = val
			case "scope":
				if !validScope(val) {
					d.rep.errorf(c.Pos, c.Keyword, "scope %q is not one of %s or a number", val, strings.Join(scopes, ", "))
					return v, false
				}
				v.Scope = val
			case "brd", "broadcast":
				if is6 {
					d.rep.errorf(c.Pos, c.Keyword, "an IPv6 address has no broadcast address")
					return v, false
				}
				b, ok := broadcast(p, val)
				if !ok {
					d.rep.errorf(c.Pos, c.Keyword, "brd %q is not an IPv4 address, - or + (which need a prefix of /30 or shorter)", val)
					return v, false
				}
				v.Broadcast = b
			case "peer":
				a, err := netip.ParseAddr(strings.Split(val, "/")[0])
				if err != nil || a.Is4() != p.Addr().Is4() {
					d.rep.errorf(c.Pos, c.Keyword, "peer %q is not an address of the same family", val)
					return v, false
				}
				v.Peer = a
			case "preferred_lft":
				if val == "forever" {
					v.PreferredLft = -1
					continue
				}
				n, err := strconv.ParseUint(val, 10, 32)
				if err != nil {
					d.rep.errorf(c.Pos, c.Keyword, "preferred_lft %q is not a number of seconds or forever", val)
					return v, false
				}
				v.PreferredLft = int(n)
			}
		case "home":
			v.Home = true
		case "-nodad":
			v.DAD = true // sic: see VIP.DAD
		case "mngtmpaddr":
			v.MngTmpAddr = true
		case "noprefixroute":
			v.NoPrefixRoute = true
		case "autojoin":
			v.AutoJoin = true
		case "no_track":
			v.NoTrack = true
		case "use_vmac":
			v.UseVMAC = true
		default:
			d.rep.errorf(c.Pos, c.Keyword, "unknown address option %q%s", opt, didYouMean(opt, vipOptions))
			return v, false
		}
	}
	if v.Peer.IsValid() && v.Broadcast.IsValid() {
		d.rep.warnf(c.Pos, c.Keyword, "brd is ignored with peer, as keepalived does")
		v.Broadcast = netip.Addr{}
	}
	return v, true
}

// broadcast resolves a brd argument: an address, or "+"/"-" for the
// prefix's host bits set or cleared.
func broadcast(p netip.Prefix, s string) (netip.Addr, bool) {
	if s != "+" && s != "-" {
		a, err := netip.ParseAddr(s)
		return a, err == nil && a.Is4()
	}
	if p.Bits() > 30 {
		return netip.Addr{}, false
	}
	b := p.Addr().As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	mask := uint32(0xffffffff) >> p.Bits()
	if s == "+" {
		v |= mask
	} else {
		v &^= mask
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

var routeTypes = []string{"unicast", "local", "nat", "broadcast", "brd", "anycast", "multicast",
	"prohibit", "unreachable", "blackhole", "xresolve", "throw"}

var routeOptions = []string{"src", "to", "via", "gw", "or", "dev", "oif", "table", "metric", "priority",
	"preference", "scope", "protocol", "proto", "onlink", "no_track"}

// routeUnsupported are ip-route options keepalived accepts that directord
// does not program; each takes one value unless listed in routeFlags.
var routeUnsupported = map[string]bool{"tos": true, "dsfield": true, "expires": true, "mtu": true, "hoplimit": true,
	"advmss": true, "rtt": true, "rttvar": true, "reordering": true, "window": true, "cwnd": true,
	"ssthresh": true, "realms": true, "rto_min": true, "initcwnd": true, "initrwnd": true,
	"features": true, "quickack": true, "congctl": true, "pref": true, "encap": true, "vrf": true,
	"fastopen_no_cookie": true, "nexthop": true, "ttl-propagate": true, "track_group": true}

var routeFlags = map[string]bool{"add": true, "prepend": true, "append": true, "lock": true, "inet": true, "inet6": true}

// route reads one virtual_routes line, in ip-route syntax.
func (d *decoder) route(c *Node) (Route, bool) {
	r := Route{Pos: c.Pos}
	words := append([]string{c.Keyword}, c.Args...)
	for _, t := range routeTypes {
		if words[0] == t {
			r.Type = t
			if t == "brd" {
				r.Type = "broadcast"
			}
			words = words[1:]
			break
		}
	}
	haveDst := false
	// "default" (and "any", "all") names no family of its own: keepalived
	// takes it from the line's first address (via, src, ...), else IPv4, so
	// "default via 2001:db8::1" is ::/0 whatever the instance's family.
	anyDst := false
	for i := 0; i < len(words); i++ {
		w := words[i]
		needValue := func() (string, bool) {
			if i+1 >= len(words) {
				d.rep.errorf(c.Pos, c.Keyword, "route option %s needs a value", w)
				return "", false
			}
			i++
			return words[i], true
		}
		addrValue := func() (netip.Addr, bool) {
			v, ok := needValue()
			if !ok {
				return netip.Addr{}, false
			}
			if v == "inet" || v == "inet6" {
				if v, ok = needValue(); !ok {
					return netip.Addr{}, false
				}
			}
			a, err := netip.ParseAddr(v)
			if err != nil {
				d.rep.errorf(c.Pos, c.Keyword, "route %s %q is not an IP address", w, v)
				return a, false
			}
			return a, true
		}
		intValue := func() (int, bool) {
			v, ok := needValue()
			if !ok {
				return 0, false
			}
			n, err := strconv.ParseUint(v, 0, 32)
			if err != nil {
				d.rep.errorf(c.Pos, c.Keyword, "route %s %q is not a number", w, v)
				return 0, false
			}
			return int(n), true
		}
		var ok bool
		switch w {
		case "src":
			r.Src, ok = addrValue()
		case "via", "gw":
			r.Via, ok = addrValue()
		case "or":
			r.Or, ok = addrValue()
		case "dev", "oif":
			r.Dev, ok = needValue()
		case "table":
			var v string
			if v, ok = needValue(); ok {
				n, found := d.routeTable(v)
				if !found {
					d.rep.errorf(c.Pos, c.Keyword, "route table %q is not a number, nor a name of %s", v, rtTablesFile)
					return r, false
				}
				r.Table = int(n)
			}
		case "metric", "priority", "preference":
			r.Metric, ok = intValue()
		case "scope":
			if r.Scope, ok = needValue(); ok && !validScope(r.Scope) {
				d.rep.errorf(c.Pos, c.Keyword, "scope %q is not one of %s or a number", r.Scope, strings.Join(scopes, ", "))
				return r, false
			}
		case "protocol", "proto":
			r.Protocol, ok = needValue()
		case "onlink":
			r.OnLink, ok = true, true
		case "no_track":
			r.NoTrack, ok = true, true
		case "to":
			ok = true
		default:
			switch {
			case routeFlags[w]:
				ok = true
			case routeUnsupported[w]:
				d.rep.unsupported(c.Pos, c.Keyword, "route option "+w+" is not programmed")
				if w != "quickack" && w != "nexthop" {
					i++
				}
				ok = true
			case !haveDst:
				dst := w
				switch w {
				case "default", "any", "all":
					dst = "0.0.0.0/0"
					anyDst = true
				case "default6":
					dst = "::/0"
				}
				if r.Dst, ok = parsePrefix(dst); !ok {
					d.rep.errorf(c.Pos, c.Keyword, "route destination %q is not an address/prefix", w)
					return r, false
				}
				r.Dst = r.Dst.Masked()
				haveDst = true
			default:
				d.rep.errorf(c.Pos, c.Keyword, "unknown route option %q%s", w, didYouMean(w, routeOptions))
				return r, false
			}
		}
		if !ok {
			return r, false
		}
	}
	if !haveDst {
		d.rep.errorf(c.Pos, c.Keyword, "route has no destination")
		return r, false
	}
	if anyDst {
		for _, a := range []netip.Addr{r.Via, r.Src, r.Or} {
			if a.Is6() {
				r.Dst = netip.PrefixFrom(netip.IPv6Unspecified(), 0)
			}
			if a.IsValid() {
				break
			}
		}
	}
	if r.Src.IsValid() && r.Src.Is4() != r.Dst.Addr().Is4() {
		d.rep.errorf(c.Pos, c.Keyword, "route src %s is not of the family of its destination %s: netlink refuses it", r.Src, r.Dst)
		return r, false
	}
	if r.Via.IsValid() && r.Via.Is4() && r.Dst.Addr().Is6() {
		d.rep.errorf(c.Pos, c.Keyword, "an IPv6 route cannot go via the IPv4 address %s: netlink refuses it", r.Via)
		return r, false
	}
	// keepalived's alloc_route, for a route it tracks (not no_track):
	// another protocol is reset to its own, and one without dev is not
	// tracked; each a configuration error it runs past (-t exits 5).
	if !r.NoTrack {
		if r.Protocol != "" && r.Protocol != "keepalived" && r.Protocol != "18" {
			d.rep.lenient(c.Pos, c.Keyword, "route %s: protocol %s is set to keepalived, as keepalived does for a tracked route (no_track keeps it)", r.Dst, r.Protocol)
			r.Protocol = ""
		}
		if r.Dev == "" {
			d.rep.lenient(c.Pos, c.Keyword, "route %s has no dev: not tracked, as keepalived does", r.Dst)
		}
	}
	return r, true
}

// useVMAC reads "use_vmac [NAME] [MAC]" (either order) as keepalived's
// vrrp_vmac_handler does: a word with a colon is a MAC address (six
// octets, or five and the VRID), another an interface name.
func (d *decoder) useVMAC(n *Node, in *Instance) {
	v := in.VMAC
	if v == nil {
		v = &VMAC{Pos: n.Pos}
		in.VMAC = v
	}
	if len(n.Args) > 2 {
		d.rep.warnf(n.Pos, n.Keyword, "unexpected %q ignored", strings.Join(n.Args[2:], " "))
	}
	for _, a := range n.Args[:min(len(n.Args), 2)] {
		if strings.Contains(a, ":") {
			if v.hwGiven {
				d.rep.lenient(n.Pos, n.Keyword, "%s: the MAC address is already given: %q ignored, as keepalived does", in.Name, a)
				continue
			}
			hw, vrid, err := parseVMAC(a)
			if err != "" {
				d.rep.lenient(n.Pos, n.Keyword, "%s: %q %s: ignored, as keepalived does", in.Name, a, err)
				continue
			}
			v.hw, v.hwVRID, v.hwGiven = hw, vrid, true
			continue
		}
		if v.named {
			d.rep.lenient(n.Pos, n.Keyword, "%s: the interface name is already given: %q ignored, as keepalived does", in.Name, a)
			continue
		}
		if !ifNameValid(a) {
			d.rep.lenient(n.Pos, n.Keyword, "%s: %q is too long or not an interface name: ignored, as keepalived does", in.Name, a)
			continue
		}
		v.Name, v.named = a, true
	}
}

// parseVMAC reads use_vmac's MAC address: six hexadecimal octets, or five
// (the VRID is the sixth). It refuses a multicast address and the RFC's own
// 00:00:5e:00:01/02 prefix, as keepalived does; the error says why.
func parseVMAC(s string) (hw [6]byte, vrid bool, err string) {
	parts := strings.Split(strings.TrimSuffix(s, ":"), ":")
	if len(parts) != 5 && len(parts) != 6 || strings.HasSuffix(s, ":") && len(parts) != 5 {
		return hw, false, "is not a MAC address"
	}
	for i, p := range parts {
		b, e := strconv.ParseUint(p, 16, 8)
		if e != nil || len(p) > 2 {
			return hw, false, "is not a MAC address"
		}
		hw[i] = byte(b)
	}
	vrid = len(parts) == 5
	switch {
	case hw[0]&1 != 0:
		return hw, false, "is a multicast address"
	case hw[0] == 0 && hw[1] == 0 && hw[2] == 0x5e && hw[3] == 0 && (hw[4] == 1 || hw[4] == 2):
		return hw, false, "is an RFC 5798 virtual router MAC, which use_vmac gives without one"
	}
	return hw, vrid, ""
}

// ifNameValid is the kernel's dev_valid_name, as keepalived checks a
// use_vmac name.
func ifNameValid(s string) bool {
	return s != "" && len(s) < 16 && s != "." && s != ".." && !strings.ContainsAny(s, "/: \t\n\v\f\r")
}

func init() {
	maps.Copy(instanceBlock.keys, garpKeys("", 0, func(in *Instance) *GarpSettings { return &in.Garp }, nil))
}

// intKey is the keyword of a whole number from lo to hi, set in the field
// that field gives.
func intKey[T any](lo, hi int64, field func(*T) *int) func(*decoder, *Node, *T) {
	return func(d *decoder, n *Node, t *T) {
		if v, ok := d.integer(n, lo, hi); ok {
			*field(t) = int(v)
		}
	}
}

// garpKeys are the keywords of the gratuitous ARP settings global_defs
// (prefix "vrrp_": every instance's defaults) and vrrp_instance share, on
// the GarpSettings garp gives. extraLo is garp_extra_if's least value (1
// in global_defs, 0 in an instance, as keepalived); mark, when not nil,
// records a delay or repeat as given.
func garpKeys[T any](prefix string, extraLo int64, garp func(*T) *GarpSettings, mark func(*T, *Node)) map[string]func(*decoder, *Node, *T) {
	delay := func(field func(*GarpSettings) *time.Duration) func(*decoder, *Node, *T) {
		return func(d *decoder, n *Node, t *T) {
			if v, ok := d.garpDelay(n); ok {
				*field(garp(t)) = v
				if mark != nil {
					mark(t, n)
				}
			}
		}
	}
	repeat := func(lo int64, marks bool, field func(*GarpSettings) *int) func(*decoder, *Node, *T) {
		return func(d *decoder, n *Node, t *T) {
			if v, ok := d.garpRepeat(n, lo); ok {
				*field(garp(t)) = v
				if marks && mark != nil {
					mark(t, n)
				}
			}
		}
	}
	extraIf := func(d *decoder, n *Node, t *T) {
		if v, all, ok := d.garpExtraIf(n, extraLo); ok {
			g := garp(t)
			g.ExtraIf, g.ExtraIfAll = v, all
		}
	}
	return map[string]func(*decoder, *Node, *T){
		prefix + "garp_master_delay":      delay(func(g *GarpSettings) *time.Duration { return &g.MasterDelay }),
		prefix + "garp_master_repeat":     repeat(1, true, func(g *GarpSettings) *int { return &g.MasterRepeat }),
		prefix + "garp_lower_prio_delay":  delay(func(g *GarpSettings) *time.Duration { return &g.LowerPrioDelay }),
		prefix + "garp_lower_prio_repeat": repeat(0, true, func(g *GarpSettings) *int { return &g.LowerPrioRepeat }),
		prefix + "garp_master_refresh_repeat": repeat(1, false,
			func(g *GarpSettings) *int { return &g.MasterRefreshRepeat }),
		prefix + "garp_extra_if": extraIf,
		prefix + "vmac_garp_intvl": func(d *decoder, n *Node, t *T) {
			d.rep.warnf(n.Pos, n.Keyword, "deprecated: read as %sgarp_extra_if, as keepalived does", prefix)
			extraIf(d, n, t)
		},
	}
}

// garpExtraIf reads "garp_extra_if [all] SECONDS" (the words in any
// order), whole seconds from lo to 86400, as keepalived's
// vrrp_garp_extra_if_handler does; without a time it is ignored.
func (d *decoder) garpExtraIf(n *Node, lo int64) (time.Duration, bool, bool) {
	if !d.noBlock(n) {
		return 0, false, false
	}
	all, secs := false, int64(-1)
	for _, a := range n.Args {
		if a == "all" {
			all = true
			continue
		}
		v, err := strconv.ParseInt(a, 10, 64)
		if err != nil || v < lo || v > 86400 {
			d.rep.lenient(n.Pos, n.Keyword, "%q is not a whole number of seconds from %d to 86400: ignored, as keepalived does", a, lo)
			return 0, false, false
		}
		secs = v
	}
	if secs < 0 {
		d.rep.lenient(n.Pos, n.Keyword, "given without a time: ignored, as keepalived does")
		return 0, false, false
	}
	return time.Duration(secs) * time.Second, all, true
}
