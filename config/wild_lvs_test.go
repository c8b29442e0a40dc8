package config

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// lvsSummary is what TestWildConfigs compares with keepalived's checker
// process's view: per virtual server its address, scheduler, method,
// persistence, quorum and sorry server, per real server its address,
// weight and method, per checker its type, target, timeout, retries and
// delays, one fact per line.
func lvsSummary(cfg *Config) string {
	var b strings.Builder
	for _, vs := range cfg.VirtualServers {
		fmt.Fprintf(&b, "virtual_server %s\n", vsDumpKey(vs))
		fmt.Fprintf(&b, "  sched %s\n  method %s\n", vs.Scheduler, vs.Method.Kind)
		if p := vs.Persistence; p != nil {
			fmt.Fprintf(&b, "  persistence %s\n", p.Timeout)
		}
		fmt.Fprintf(&b, "  quorum %d hysteresis %d\n", vs.Quorum, vs.Hysteresis)
		if s := vs.SorryServer; s != nil {
			fmt.Fprintf(&b, "  sorry %s %s\n", s.Addr, s.Method.Kind)
		}
		for _, rs := range vs.RealServers {
			fmt.Fprintf(&b, "  real %s weight %d method %s\n", rs.Addr, rs.Weight, rs.Method.Kind)
			for _, c := range rs.Checkers {
				fmt.Fprintf(&b, "    check %s", c.Type)
				if c.Type != CheckMisc {
					ip, port := rs.Addr.Addr(), rs.Addr.Port()
					if c.ConnectIP.IsValid() {
						ip = c.ConnectIP
					}
					if c.ConnectPort != 0 {
						port = c.ConnectPort
					}
					fmt.Fprintf(&b, " dest %s timeout %s", netip.AddrPortFrom(ip, port), c.ConnectTimeout)
				}
				fmt.Fprintf(&b, " retry %d delay_before_retry %s delay_loop %s\n", c.Retry, c.DelayBeforeRetry, c.DelayLoop)
			}
		}
	}
	return b.String()
}

// vsDumpKey names a virtual server as keepalived's dump does.
func vsDumpKey(vs *VirtualServer) string {
	switch {
	case vs.FWMark != 0:
		return fmt.Sprintf("fwmark %d", vs.FWMark)
	case vs.Group != "":
		return "group " + vs.Group
	}
	return fmt.Sprintf("%s %s", vs.Addr, vs.Protocol)
}

// parseKeepalivedLVS turns keepalived's "LVS Topology" and "Health
// checkers" dump into lvsSummary's form.
func parseKeepalivedLVS(dump string) string {
	type real struct {
		head   string
		checks []string
	}
	type vserver struct {
		key, proto, sched, method, persist, quorum, sorry string
		reals                                             []*real
		sorryNext                                         bool
	}
	var vss []*vserver
	var vs *vserver
	var rs *real
	byCheck := map[string]*real{} // "[rip]:proto:port" under its VS, in order
	section := ""
	var check []string
	var checkHead string
	flushCheck := func() {
		if checkHead == "" {
			return
		}
		f := map[string]string{}
		for _, l := range check {
			if k, v, ok := strings.Cut(l, " = "); ok {
				f[k] = v
			}
		}
		method, _, _ := strings.Cut(f["Keepalive method"], ",")
		line := "    check " + method
		if d := f["Dest"]; d != "" {
			if i := strings.LastIndex(d, ":"); i > 0 {
				a, err1 := netip.ParseAddr(strings.Trim(d[:i], "[]"))
				p, err2 := strconv.Atoi(d[i+1:])
				if err1 == nil && err2 == nil {
					d = netip.AddrPortFrom(a, uint16(p)).String()
				}
			}
			line += " dest " + d + " timeout " + secs(f["Timeout"])
		}
		line += " retry " + f["Retries"] + " delay_before_retry " + micros(f["Delay before retry"]) + " delay_loop " + micros(f["Delay loop"]) + "\n"
		if r := byCheck[checkHead]; r != nil {
			r.checks = append(r.checks, line)
		}
		checkHead, check = "", nil
	}
	for _, line := range strings.Split(dump, "\n") {
		line = dumpTime.ReplaceAllString(line, "")
		trim := strings.TrimSpace(line)
		switch {
		case strings.Contains(line, "------< LVS Topology >------"):
			section = "lvs"
			continue
		case strings.Contains(line, "------< Health checkers >------"):
			section = "checks"
			continue
		case section == "":
			continue
		case section == "checks" && !strings.HasPrefix(line, " "):
			flushCheck()
			section = "done"
		}
		if section == "done" {
			break
		}
		if section == "checks" {
			if strings.HasPrefix(line, " [") || strings.HasPrefix(line, " FWM ") {
				flushCheck()
				checkHead = trim
				continue
			}
			check = append(check, trim)
			continue
		}
		k, v, _ := strings.Cut(trim, " = ")
		switch {
		case strings.HasPrefix(trim, "VS VIP = "), strings.HasPrefix(trim, "VS FWMARK = "), strings.HasPrefix(trim, "VS GROUP = "), strings.HasPrefix(trim, "VS FWMARK GROUP = "):
			vs = &vserver{key: trim}
			vss = append(vss, vs)
			rs = nil
		case vs == nil:
		case strings.HasPrefix(trim, "RIP = "):
			// RIP = 192.168.1.21, RPORT = 80, WEIGHT = 1 EFF WEIGHT = 1
			f := strings.FieldsFunc(trim, func(r rune) bool { return r == ',' || r == ' ' || r == '=' })
			a, _ := netip.ParseAddr(f[1])
			p, _ := strconv.Atoi(f[3])
			rs = &real{head: fmt.Sprintf("  real %s weight %s", netip.AddrPortFrom(a, uint16(p)), f[5])}
			vs.reals = append(vs.reals, rs)
		case k == "protocol":
			vs.proto = v
		case k == "lvs_sched":
			vs.sched = v
		case k == "default forwarding method":
			vs.method, _, _ = strings.Cut(v, ",")
		case k == "persistence timeout":
			vs.persist = v
		case strings.HasPrefix(trim, "quorum = "):
			f := strings.FieldsFunc(trim, func(r rune) bool { return r == ',' || r == ' ' || r == '=' })
			vs.quorum = "quorum " + f[1] + " hysteresis " + f[3]
		case k == "sorry server":
			vs.sorry = strings.Trim(strings.SplitN(v, "]", 2)[0], "[") + "|" + v
			vs.sorryNext = true
		case k == "forwarding method" && rs == nil && vs.sorryNext:
			m, _, _ := strings.Cut(v, ",")
			vs.sorry += "|" + m
			vs.sorryNext = false
		case k == "forwarding method" && rs != nil:
			m, _, _ := strings.Cut(v, ",")
			rs.head += " method " + m
			byCheck[vsCheckHead(vs.key, vs.proto, rs.head)] = rs
		}
	}
	var b strings.Builder
	for _, vs := range vss {
		fmt.Fprintf(&b, "virtual_server %s\n", dumpVSKey(vs.key, vs.proto))
		fmt.Fprintf(&b, "  sched %s\n  method %s\n", vs.sched, vs.method)
		if vs.persist != "" {
			fmt.Fprintf(&b, "  persistence %s\n", secs(vs.persist))
		}
		fmt.Fprintf(&b, "  %s\n", vs.quorum)
		if vs.sorry != "" {
			// ip|[ip]:tcp:port|METHOD
			parts := strings.Split(vs.sorry, "|")
			addr := parts[1]
			if i := strings.LastIndex(addr, ":"); i >= 0 {
				a, _ := netip.ParseAddr(parts[0])
				p, _ := strconv.Atoi(addr[i+1:])
				addr = netip.AddrPortFrom(a, uint16(p)).String()
			}
			m := ""
			if len(parts) > 2 {
				m = parts[2]
			}
			fmt.Fprintf(&b, "  sorry %s %s\n", addr, m)
		}
		for _, r := range vs.reals {
			b.WriteString(r.head + "\n")
			b.WriteString(strings.Join(r.checks, ""))
		}
	}
	return b.String()
}

// dumpVSKey reads "VS VIP = 10.0.0.1, VPORT = 80" (and the fwmark and
// group forms) as vsDumpKey writes it.
func dumpVSKey(key, proto string) string {
	switch {
	case strings.HasPrefix(key, "VS VIP = "):
		f := strings.FieldsFunc(key[len("VS VIP = "):], func(r rune) bool { return r == ',' || r == ' ' || r == '=' })
		a, _ := netip.ParseAddr(f[0])
		p := 0
		if len(f) > 2 {
			p, _ = strconv.Atoi(f[2])
		}
		return fmt.Sprintf("%s %s", netip.AddrPortFrom(a, uint16(p)), proto)
	case strings.HasPrefix(key, "VS FWMARK = "):
		return "fwmark " + strings.Fields(key[len("VS FWMARK = "):])[0]
	case strings.HasPrefix(key, "VS GROUP = "):
		// VS GROUP = [VS_GROUP_IPv4]:0
		name := strings.Fields(key[len("VS GROUP = "):])[0]
		return "group " + strings.TrimSuffix(strings.TrimPrefix(name, "["), "]:0")
	}
	return key
}

// vsCheckHead is the header keepalived's "Health checkers" dump gives the
// checkers of a real server: "[10.0.0.1]:tcp:80 -> [10.0.0.2]:tcp:80".
func vsCheckHead(key, proto, realHead string) string {
	p := strings.ToLower(proto)
	f := strings.Fields(realHead) // real ADDR:PORT weight W method M
	rs, _ := netip.ParseAddrPort(f[1])
	right := fmt.Sprintf("[%s]:%s:%d", rs.Addr(), p, rs.Port())
	vk := dumpVSKey(key, proto)
	switch {
	case strings.HasPrefix(vk, "fwmark "):
		// FWM 111 -> [192.0.2.32]:none:0
		return fmt.Sprintf("FWM %s -> [%s]:none:%d", strings.TrimPrefix(vk, "fwmark "), rs.Addr(), rs.Port())
	case strings.HasPrefix(vk, "group "):
		// [VS_GROUP_IPv4]:0 -> [192.168.1.10]:tcp:80
		return fmt.Sprintf("[%s]:0 -> %s", strings.TrimPrefix(vk, "group "), right)
	}
	va, _ := netip.ParseAddrPort(strings.Fields(vk)[0])
	return fmt.Sprintf("[%s]:%s:%d -> %s", va.Addr(), p, va.Port(), right)
}

// secs reads keepalived's "3.000000" seconds as a Go duration string.
func secs(s string) string {
	f, err := strconv.ParseFloat(strings.Fields(s + " ")[0], 64)
	if err != nil {
		return s
	}
	return time.Duration(f * float64(time.Second)).Round(time.Microsecond).String()
}

// micros reads keepalived's "3000000 us" as a Go duration string.
func micros(s string) string {
	n, err := strconv.ParseInt(strings.Fields(s + " ")[0], 10, 64)
	if err != nil {
		return s
	}
	return (time.Duration(n) * time.Microsecond).String()
}
