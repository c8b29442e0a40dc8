package config

import (
	"maps"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// allBlocks lists every block table, for "it belongs in" hints; the first
// that knows a keyword is named.
func allBlocks() []namedBlock {
	return []namedBlock{topBlock, globalBlock, instanceBlock, scriptBlock, syncGroupBlock,
		authBlock, trackFileBlock, trackProcessBlock, vsBlock, rsBlock, httpCheckBlock, urlBlock, tcpCheckBlock, miscCheckBlock,
		udpCheckBlock, dnsCheckBlock, smtpCheckBlock, smtpHostBlock, sslBlock, bgpBlock, neighborBlock}
}

// oldSyncGroupMembers takes instance names written straight inside a
// vrrp_sync_group, without "group { }" (an old form that keepalived's own
// lvs_syncd sample still uses), as members, and removes them from n.
func (d *decoder) oldSyncGroupMembers(n *Node, g *SyncGroup) {
	kept := n.Children[:0]
	for _, c := range n.Children {
		_, known := syncGroupBlock.keys[c.Keyword]
		_, unsupported := syncGroupBlock.unsupported[c.Keyword]
		if known || unsupported || c.Block || len(c.Args) > 0 {
			kept = append(kept, c)
			continue
		}
		d.rep.warnf(c.Pos, c.Keyword, "an instance named straight inside vrrp_sync_group is an old form: read as group { %s }", c.Keyword)
		g.Members = append(g.Members, c.Keyword)
		g.memberPos = append(g.memberPos, c.Pos)
	}
	n.Children = kept
}

// named checks "KEYWORD NAME { ... }" and returns NAME.
func (d *decoder) named(n *Node) (string, bool) {
	if !d.needBlock(n) || !d.want(n, 1, 1) {
		return "", false
	}
	return n.Args[0], true
}

var topBlock = &block[Config]{
	name: topLevelName,
	keys: map[string]func(*decoder, *Node, *Config){
		"global_defs": func(d *decoder, n *Node, c *Config) {
			if d.needBlock(n) {
				d.want(n, 0, 0)
				walk(d, n, globalBlock, &c.Global)
			}
		},
		"vrrp_script": func(d *decoder, n *Node, c *Config) {
			if name, ok := d.named(n); ok {
				d.declared("vrrp_script", name)
				s := &VRRPScript{Pos: n.Pos, Name: name, Interval: time.Second, Timeout: -1, Rise: 1, Fall: 1}
				walk(d, n, scriptBlock, s)
				if s.Script == nil || s.Script.Command == "" {
					if !hasChild(n, "script") {
						d.rep.errorf(n.Pos, n.Keyword, "%s has no script", name)
					}
					return
				}
				if s.Timeout < 0 {
					s.Timeout = s.Interval
				}
				c.Scripts = append(c.Scripts, s)
			}
		},
		"vrrp_sync_group": func(d *decoder, n *Node, c *Config) {
			if name, ok := d.named(n); ok {
				g := &SyncGroup{Pos: n.Pos, Name: name}
				d.oldSyncGroupMembers(n, g)
				walk(d, n, syncGroupBlock, g)
				c.SyncGroups = append(c.SyncGroups, g)
			}
		},
		"vrrp_instance": func(d *decoder, n *Node, c *Config) {
			if name, ok := d.named(n); ok {
				d.declared("vrrp_instance", name)
				in := newInstance(n.Pos, name)
				walk(d, n, instanceBlock, in)
				if hasChild(n, "virtual_router_id") {
					markSet(&in.set, &Node{Keyword: "virtual_router_id"})
				}
				c.Instances = append(c.Instances, in)
			}
		},
		"virtual_server_group": func(d *decoder, n *Node, c *Config) {
			if name, ok := d.named(n); ok {
				d.declared("virtual_server_group", name)
				g := &VirtualServerGroup{Pos: n.Pos, Name: name, written: len(n.Children)}
				d.lines(n, func(e *Node) {
					if entry, ok := d.vsgEntry(e); ok {
						g.Entries = append(g.Entries, entry)
					}
				})
				c.VirtualServerGroups = append(c.VirtualServerGroups, g)
			}
		},
		"virtual_server": func(d *decoder, n *Node, c *Config) {
			if vs := d.virtualServer(n); vs != nil {
				c.VirtualServers = append(c.VirtualServers, vs)
			}
		},
		"SSL": func(d *decoder, n *Node, c *Config) {
			if d.needBlock(n) {
				d.want(n, 0, 0)
				if c.SSL != nil {
					d.rep.warnf(n.Pos, n.Keyword, "second SSL block replaces the one at %s", c.SSL.Pos)
				}
				c.SSL = &SSL{Pos: n.Pos}
				walk(d, n, sslBlock, c.SSL)
			}
		},
		"net_namespace":      func(d *decoder, n *Node, c *Config) { d.netNamespace(n, &c.Global) },
		"net_namespace_ipvs": func(d *decoder, n *Node, c *Config) { d.netNamespaceIPVS(n, &c.Global) },
	},
	unsupported: map[string]string{
		"namespace_with_ipsets":    "",
		"use_pid_dir":              "",
		"instance":                 "",
		"child_wait_time":          "directord is one process",
		"linkbeat_use_polling":     "directord follows netlink link state",
		"linkbeat_interfaces":      "directord follows netlink link state",
		"interface_up_down_delays": "",
		"bfd_instance":             bfdNotSupported,
		"track_group":              "",
		"static_ipaddress":         "directord only manages addresses that move with VRRP",
		"static_routes":            "directord only manages routes that move with VRRP",
		"static_rules":             "",
		"garp_group":               "",
	},
}

var sslBlock = &block[SSL]{
	name: "SSL",
	keys: map[string]func(*decoder, *Node, *SSL){
		"password":    func(d *decoder, n *Node, s *SSL) { s.Password, _ = d.str(n) },
		"ca":          func(d *decoder, n *Node, s *SSL) { s.CA, _ = d.str(n) },
		"certificate": func(d *decoder, n *Node, s *SSL) { s.Certificate, _ = d.str(n) },
		"key":         func(d *decoder, n *Node, s *SSL) { s.Key, _ = d.str(n) },
	},
}

// garpDelay and garpRepeat read the garp settings shared by global_defs
// (vrrp_garp_*) and vrrp_instance (garp_*); delays are whole seconds.
func (d *decoder) garpDelay(n *Node) (time.Duration, bool) {
	v, ok := d.integer(n, 0, 86400)
	return time.Duration(v) * time.Second, ok
}

// garpRepeat reads a burst size; where lo is 1, keepalived reads 0 as 1.
func (d *decoder) garpRepeat(n *Node, lo int64) (int, bool) {
	v, ok := d.integer(n, 0, 1<<31-1)
	if ok && v < lo {
		d.rep.warnf(n.Pos, n.Keyword, "must be at least %d: %d used, as keepalived does", lo, lo)
		v = lo
	}
	return int(v), ok
}

var globalBlock = &block[Global]{
	name: "global_defs",
	keys: map[string]func(*decoder, *Node, *Global){
		"router_id":              func(d *decoder, n *Node, g *Global) { g.RouterID, _ = d.str(n) },
		"enable_script_security": boolKey(func(g *Global) *bool { return &g.EnableScriptSecurity }, globalSet),
		"script_user": func(d *decoder, n *Node, g *Global) {
			if d.noBlock(n) && d.want(n, 1, 2) {
				g.ScriptUser = n.Args[0]
				if len(n.Args) > 1 {
					g.ScriptGroup = n.Args[1]
				}
			}
		},
		"lvs_sync_daemon": func(d *decoder, n *Node, g *Global) { g.SyncDaemon = d.syncDaemon(n) },
		"lvs_timeouts":    func(d *decoder, n *Node, g *Global) { g.LVSTimeouts = d.lvsTimeouts(n) },
		"lvs_flush":       boolKey(func(g *Global) *bool { return &g.LVSFlush }, globalSet),
		"lvs_flush_on_stop": func(d *decoder, n *Node, g *Global) {
			if d.noBlock(n) && d.want(n, 0, 1) {
				g.LVSFlushOnStop = FlushAll
				if len(n.Args) == 1 {
					if n.Args[0] != "VS" {
						d.rep.errorf(n.Pos, n.Keyword, "takes nothing or VS, not %q", n.Args[0])
						return
					}
					g.LVSFlushOnStop = FlushVS
				}
			}
		},
		"vrrp_version": intKey(2, 3, func(g *Global) *int { return &g.VRRPVersion }),
		"vrrp_mcast_group4": func(d *decoder, n *Node, g *Global) {
			if a, ok := d.addr(n); ok {
				if !a.Is4() || !a.IsMulticast() {
					d.rep.errorf(n.Pos, n.Keyword, "%s is not an IPv4 multicast address", a)
					return
				}
				g.MCastGroup4 = a
			}
		},
		"vrrp_mcast_group6": func(d *decoder, n *Node, g *Global) {
			if a, ok := d.addr(n); ok {
				if !a.Is6() || !a.IsMulticast() {
					d.rep.errorf(n.Pos, n.Keyword, "%s is not an IPv6 multicast address", a)
					return
				}
				g.MCastGroup6 = a
			}
		},
		"vrrp_garp_master_refresh": func(d *decoder, n *Node, g *Global) {
			g.Garp.MasterRefresh, _ = d.garpDelay(n)
		},
		// keepalived 2.2.7 ignores a bad value ("vrrp_garp_interval '0' is
		// invalid"): RHEL 7's stock file has 0, which it then reads as the
		// default, no interval.
		"process_monitor_rcv_bufs": func(d *decoder, n *Node, g *Global) {
			if !d.noBlock(n) {
				return
			}
			if len(n.Args) == 0 {
				d.rep.lenient(n.Pos, n.Keyword, "size missing: ignored, as keepalived does")
				return
			}
			d.want(n, 1, 1)
			v, err := strconv.ParseUint(n.Args[0], 10, 32)
			if err != nil {
				d.rep.lenient(n.Pos, n.Keyword, "size %q is not a number from 0 to 4294967295: ignored, as keepalived does", n.Args[0])
				return
			}
			if v != 0 { // 0: the kernel's default, as unset
				g.ProcessMonitorRcvBufs = uint32(v)
			}
		},
		"process_monitor_rcv_bufs_force": func(d *decoder, n *Node, g *Global) {
			g.ProcessMonitorRcvBufsForce, _ = d.flag(n)
		},
		"vrrp_garp_interval": func(d *decoder, n *Node, g *Global) {
			if v, ok := d.ignoredTimer(n, time.Microsecond, 4294*time.Second); ok {
				g.GarpInterval = v
			}
		},
		"vrrp_gna_interval": func(d *decoder, n *Node, g *Global) {
			if v, ok := d.ignoredTimer(n, time.Microsecond, 4294*time.Second); ok {
				g.GnaInterval = v
			}
		},
		"vrrp_min_garp": func(d *decoder, n *Node, g *Global) {
			if v, ok := d.flag(n); ok && v {
				// One ARP/NA, no second burst.
				g.Garp.MasterRepeat, g.Garp.MasterDelay = 1, 0
				markSet(&g.set, &Node{Keyword: "vrrp_garp_master_repeat", Pos: n.Pos})
				markSet(&g.set, &Node{Keyword: "vrrp_garp_master_delay", Pos: n.Pos})
			}
		},
		"vrrp_check_unicast_src":   boolKey(func(g *Global) *bool { return &g.CheckUnicastSrc }, globalSet),
		"vrrp_skip_check_adv_addr": boolKey(func(g *Global) *bool { return &g.SkipCheckAdvAddr }, globalSet),
		"vmac_addr_prefix": func(d *decoder, n *Node, g *Global) {
			if s, ok := d.str(n); ok {
				if g.VMACAddrPrefix != "" {
					d.rep.lenient(n.Pos, n.Keyword, "already given: %q ignored, as keepalived does", s)
					return
				}
				g.VMACAddrPrefix = s
			}
		},
		"vmac_prefix": func(d *decoder, n *Node, g *Global) {
			if s, ok := d.str(n); ok {
				if g.VMACPrefix != "" {
					d.rep.lenient(n.Pos, n.Keyword, "already given: %q ignored, as keepalived does", s)
					return
				}
				g.VMACPrefix = s
			}
		},
		"vrrp_strict":                  boolKey(func(g *Global) *bool { return &g.Strict }, globalSet),
		"vrrp_lower_prio_no_advert":    boolKey(func(g *Global) *bool { return &g.LowerPrioNoAdvert }, globalSet),
		"vrrp_higher_prio_send_advert": boolKey(func(g *Global) *bool { return &g.HigherPrioSendAdvert }, globalSet),
		"vrrp_priority":                intKey(-20, 19, func(g *Global) *int { return &g.Nice }),
		"vrrp_rt_priority":             intKey(1, 99, func(g *Global) *int { return &g.RTPriority }),
		"vrrp_startup_delay": func(d *decoder, n *Node, g *Global) {
			g.StartupDelay, _ = d.timer(n, 0, 3600*time.Second)
		},
		"notification_email": func(d *decoder, n *Node, g *Global) {
			e := g.email()
			d.lines(n, func(c *Node) {
				e.To = append(e.To, c.Keyword)
				e.To = append(e.To, c.Args...)
			})
			if n.Block && len(n.Children) == 0 {
				d.rep.warnf(n.Pos, n.Keyword, "empty notification_email block")
			}
		},
		"notification_email_from": func(d *decoder, n *Node, g *Global) {
			if v, ok := d.str(n); ok {
				g.email().From = v
			}
		},
		"smtp_server": func(d *decoder, n *Node, g *Global) {
			if !d.noBlock(n) || !d.want(n, 1, 2) {
				return
			}
			if hp, ok := d.smtpServer(n); ok {
				g.email().Server = hp
			}
		},
		"smtp_helo_name": func(d *decoder, n *Node, g *Global) {
			if v, ok := d.str(n); ok {
				g.email().HeloName = v
			}
		},
		"smtp_connect_timeout": func(d *decoder, n *Node, g *Global) {
			// keepalived: whole seconds in [0, UINT_MAX/TIMER_HZ]; 0 is
			// taken as 1 with a warning.
			v, ok := d.integer(n, 0, 4294)
			if !ok {
				return
			}
			if v == 0 {
				d.rep.warnf(n.Pos, n.Keyword, "smtp_connect_timeout must be greater than 0, setting to 1")
				v = 1
			}
			g.email().ConnectTimeout = time.Duration(v) * time.Second
		},
		"no_email_faults": func(d *decoder, n *Node, g *Global) {
			if d.noBlock(n) {
				d.want(n, 0, 0)
				g.email().NoFaults = true
			}
		},
		"no_checker_emails": func(d *decoder, n *Node, g *Global) {
			if v, ok := d.flag(n); ok {
				g.email().NoCheckerEmails = v
			}
		},
		"nftables":           func(d *decoder, n *Node, g *Global) { d.nftables(n, g) },
		"vrrp_iptables":      func(d *decoder, n *Node, g *Global) { d.vrrpIptables(n, g) },
		"nftables_priority":  func(d *decoder, n *Node, g *Global) { d.nftablesPriority(n, g) },
		"nftables_counters":  boolKey(func(g *Global) *bool { return &g.NFTCounters }, globalSet),
		"smtp_alert":         func(d *decoder, n *Node, g *Global) { g.smtpAlert = d.tristate(n) },
		"dynamic_interfaces": func(d *decoder, n *Node, g *Global) { d.dynamicInterfaces(n, g) },
		"disable_local_igmp": func(d *decoder, n *Node, g *Global) { d.disableLocalIGMP(n, g) },
		"smtp_alert_vrrp":    func(d *decoder, n *Node, g *Global) { g.smtpAlertVRRP = d.tristate(n) },
		"smtp_alert_checker": func(d *decoder, n *Node, g *Global) { g.smtpAlertChecker = d.tristate(n) },
	},
	unsupported: globalUnsupported(),
}

func globalUnsupported() map[string]string {
	m := map[string]string{}
	add := func(why string, kws ...string) {
		for _, k := range kws {
			m[k] = why
		}
	}
	add("directord is one process",
		"process_names", "process_name", "vrrp_process_name", "checker_process_name",
		"lvs_process_name", "bfd_process_name",
		"checker_priority", "bfd_priority", "vrrp_no_swap", "checker_no_swap",
		"bfd_no_swap", "checker_rt_priority", "bfd_rt_priority",
		"vrrp_cpu_affinity", "checker_cpu_affinity", "bfd_cpu_affinity",
		"vrrp_rlimit_rttime", "checker_rlimit_rttime", "bfd_rlimit_rttime",
		"vrrp_rlimit_rtime", "checker_rlimit_rtime", "bfd_rlimit_rtime",
		"max_auto_priority", "min_auto_priority_delay", "child_wait_time")
	add("directord has no SNMP or DBus interface; use directorctl and metrics",
		"snmp_socket", "enable_traps", "enable_snmp_vrrp", "enable_snmp_keepalived",
		"enable_snmp_rfc", "enable_snmp_rfcv2", "enable_snmp_rfcv3", "enable_snmp_checker",
		"enable_dbus", "dbus_service_name")
	add("directord builds no per-interface link-local sets (docs/vrrp.md)", "nftables_ifindex")
	add("directord makes no nftables rules for IPVS", "nftables_ipvs", "nftables_ipvs_priority", "nftables_ipvs_start_fwmark")
	add("ipsets are iptables': Debian's keepalived 2.2.7, built without iptables, does not know it either", "vrrp_ipsets")
	add("use notify scripts",
		"fifo_write_vrrp_states_on_reload", "rs_init_notifies")
	add("directord sizes its own netlink buffers",
		"vrrp_netlink_cmd_rcv_bufs", "vrrp_netlink_cmd_rcv_bufs_force",
		"vrrp_netlink_monitor_rcv_bufs", "vrrp_netlink_monitor_rcv_bufs_force",
		"lvs_netlink_cmd_rcv_bufs", "lvs_netlink_cmd_rcv_bufs_force",
		"lvs_netlink_monitor_rcv_bufs", "lvs_netlink_monitor_rcv_bufs_force",
		"vrrp_rx_bufs_policy", "vrrp_rx_bufs_multiplier")
	add("directord always validates before reloading and treats a missing include as an error",
		"reload_check_config", "include_check", "reload_time_file", "reload_repeat", "reload_file",
		"config_save_dir", "tmp_config_directory")
	add("",
		"startup_script", "startup_script_timeout", "shutdown_script", "shutdown_script_timeout",
		"checker_log_all_failures", "default_interface", "lvs_flush_onstop_deprecated",
		"vrrp_down_timer_adverts",
		"log_unknown_vrids", "random_seed", "umask",
		"data_use_instance",
		"namespace_with_ipsets", "instance", "use_pid_dir", "linkbeat_use_polling")
	delete(m, "lvs_flush_onstop_deprecated")
	return m
}

func init() {
	// lvs_flush_onstop is keepalived's deprecated spelling.
	globalBlock.keys["lvs_flush_onstop"] = globalBlock.keys["lvs_flush_on_stop"]
	maps.Copy(globalBlock.keys, garpKeys("vrrp_", 1, func(g *Global) *GarpSettings { return &g.Garp },
		func(g *Global, n *Node) { markSet(&g.set, n) }))
}

// syncDaemon reads "lvs_sync_daemon IF [[inst] INSTANCE] [id N] [maxlen N]
// [port N] [ttl N] [group ADDR]".
func (d *decoder) syncDaemon(n *Node) *SyncDaemon {
	if !d.noBlock(n) || !d.want(n, 1, -1) {
		return nil
	}
	sd := &SyncDaemon{Pos: n.Pos, Interface: n.Args[0], SyncID: -1, Port: 8848,
		Group: netip.AddrFrom4([4]byte{224, 0, 0, 81})}
	if len(sd.Interface) >= 16 {
		d.rep.errorf(n.Pos, n.Keyword, "interface name %q is longer than 15 characters", sd.Interface)
		return nil
	}
	args := n.Args[1:]
	options := []string{"inst", "id", "maxlen", "port", "ttl", "group"}
	for i := 0; i < len(args); i++ {
		opt := args[i]
		isOpt := false
		for _, o := range options {
			isOpt = isOpt || o == opt
		}
		if !isOpt {
			if i == 0 {
				sd.Instance = opt // the instance may be given without "inst"
				continue
			}
			d.rep.errorf(n.Pos, n.Keyword, "unknown option %q%s", opt, didYouMean(opt, options))
			return nil
		}
		if i+1 >= len(args) {
			d.rep.errorf(n.Pos, n.Keyword, "%s needs a value", opt)
			return nil
		}
		i++
		v := args[i]
		var num int64
		var ok bool
		idx := len(n.Args) - len(args) + i
		switch opt {
		case "inst":
			sd.Instance = v
			continue
		case "group":
			a, ok := d.addrArg(n, idx)
			if !ok {
				return nil
			}
			if !a.IsMulticast() {
				d.rep.errorf(n.Pos, n.Keyword, "group %s is not a multicast address", a)
				return nil
			}
			sd.Group = a
			continue
		case "id":
			num, ok = d.intArg(n, idx, 0, 255)
			sd.SyncID = int(num)
		case "maxlen":
			num, ok = d.intArg(n, idx, 1, 65507)
			sd.MaxLen = int(num)
		case "port":
			num, ok = d.intArg(n, idx, 1, 65535)
			sd.Port = int(num)
		case "ttl":
			num, ok = d.intArg(n, idx, 1, 255)
			sd.TTL = int(num)
		}
		if !ok {
			return nil
		}
	}
	return sd
}

func didYouMean(word string, options []string) string {
	if s := suggest(word, options); s != "" {
		return "; did you mean \"" + s + "\"?"
	}
	return ""
}

// lvsTimeouts reads "lvs_timeouts [tcp SECS] [tcpfin SECS] [udp SECS]".
func (d *decoder) lvsTimeouts(n *Node) *LVSTimeouts {
	if !d.noBlock(n) || !d.want(n, 2, 6) {
		return nil
	}
	t := &LVSTimeouts{}
	for i := 0; i+1 < len(n.Args); i += 2 {
		v, ok := d.intArg(n, i+1, 1, 1<<31-1)
		if !ok {
			return nil
		}
		dur := time.Duration(v) * time.Second
		switch strings.ToLower(n.Args[i]) {
		case "tcp":
			t.TCP = dur
		case "tcpfin":
			t.TCPFin = dur
		case "udp":
			t.UDP = dur
		default:
			d.rep.errorf(n.Pos, n.Keyword, "unknown timeout %q; want tcp, tcpfin or udp", n.Args[i])
			return nil
		}
	}
	if len(n.Args)%2 != 0 {
		d.rep.errorf(n.Pos, n.Keyword, "%s needs a value", n.Args[len(n.Args)-1])
		return nil
	}
	return t
}

// email returns g's e-mail settings, made with keepalived's defaults on
// first use.
func (g *Global) email() *Email {
	if g.Email == nil {
		g.Email = &Email{ConnectTimeout: 30 * time.Second}
	}
	return g.Email
}

// tristate reads an smtp_alert-like flag; nil (not given) on a bad value,
// which keepalived ignores after its error.
func (d *decoder) tristate(n *Node) *bool {
	if v, ok := d.flag(n); ok {
		return &v
	}
	return nil
}

// smtpServer reads "smtp_server HOST [PORT]": an IP address or, as
// keepalived 2.2.7, a host name; the port is 25 by default.
func (d *decoder) smtpServer(n *Node) (string, bool) {
	host, port := n.Args[0], "25"
	if len(n.Args) > 1 {
		port = n.Args[1]
	}
	if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 {
		d.rep.errorf(n.Pos, n.Keyword, "invalid smtp server %s %s: the port is not a number from 1 to 65535", host, port)
		return "", false
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return net.JoinHostPort(a.String(), port), true
	}
	if !validHostName(host) {
		d.rep.errorf(n.Pos, n.Keyword, "invalid smtp server %s %s: neither an IP address nor a host name", host, port)
		return "", false
	}
	return net.JoinHostPort(host, port), true
}

// validHostName is a syntactic check of a DNS name (RFC 1123 labels).
func validHostName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, l := range strings.Split(strings.TrimSuffix(s, "."), ".") {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, c := range l {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}
