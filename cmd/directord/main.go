// Command directord is a director for Linux load balancers: VRRP for the
// virtual addresses, IPVS for the virtual servers, health checks for the
// real servers, read from a keepalived configuration.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/directord/directord/config"
	"github.com/directord/directord/healthcheck"
	"github.com/directord/directord/internal/control"
	"github.com/directord/directord/internal/heapgoal"
	"github.com/directord/directord/internal/script"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// Exit codes, as keepalived's: 4 when the configuration cannot be read,
// 5 when --config-test finds errors.
const (
	exitOK         = 0
	exitFailure    = 1
	exitUsage      = 2
	exitConfig     = 4
	exitConfigTest = 5
	// exitConfigSecurity is keepalived's --config-test exit code for a
	// configuration whose scripts run without enable_script_security.
	exitConfigSecurity = 6
)

// init keeps the main goroutine on the main thread, the thread group
// leader, until run has decided on net_namespace: enterNetNamespace
// executes directord again from that thread, a plain exec. From another
// thread, the kernel would first end the leader and give its PID to that
// thread (de_thread), a path that tracers and pidfd waiters see
// differently.
func init() { runtime.LockOSThread() }

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args)
	if err != nil {
		fmt.Fprintf(stderr, "directord: %v\n%s", err, usage)
		return exitUsage
	}
	switch {
	case o.guardian:
		return guardianMain(o, stderr)
	case o.help:
		fmt.Fprint(stdout, usage)
		return exitOK
	case o.version:
		fmt.Fprintf(stdout, "directord %s\n", version)
		return exitOK
	}
	if path := os.Getenv("DIRECTORD_CPUPROFILE"); path != "" {
		// A diagnostic for benchmarks (docs/benchmarks.md): the daemon's
		// CPU profile until it ends.
		if stop, err := cpuProfile(path); err == nil {
			defer stop()
		} else {
			fmt.Fprintf(stderr, "directord: DIRECTORD_CPUPROFILE: %v\n", err)
		}
	}
	o.begun = time.Now()
	o.execToMain, o.execKnown = sinceExec(os.ReadFile)
	cfg, diags := config.Load(o.file, config.Options{ConfigID: o.configID, Strict: o.strict})
	diags = append(diags, healthcheck.Diagnostics(cfg)...) // the SSL block's files
	o.loaded = time.Since(o.begun)
	netns := netNamespaceOf(o, cfg)
	if netns != "" && !o.configTest && !o.dumpConfig && !diags.HasErrors() && !unreadable(diags, o.file) {
		// Before anything is said or started: the daemon reads the file
		// again inside the namespace (enterNetNamespace).
		if err := enterNetNamespace(netns, netnsAt(o, cfg)); err != nil {
			fmt.Fprintf(stderr, "directord: %v\n", err)
			return exitFailure
		}
		os.Unsetenv(envNetNS) // the exec's mark, not for scripts
		if !o.controlSet {
			o.control = control.NamespaceSocket(netns)
		}
	}
	runtime.UnlockOSThread() // see init
	for _, d := range diags {
		fmt.Fprintln(stderr, d.String())
	}
	if unreadable(diags, o.file) {
		return exitConfig
	}
	if diags.HasErrors() {
		fmt.Fprintf(stderr, "directord: %s: %s\n", o.file, countErrors(diags))
		if o.configTest || o.dumpConfig {
			return exitConfigTest
		}
		return exitConfig
	}
	switch {
	case o.dumpConfig:
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(cfg); err != nil {
			fmt.Fprintf(stderr, "directord: %v\n", err)
			return exitFailure
		}
		return exitOK
	case o.configTest:
		if netns != "" {
			if _, err := os.Stat(netnsPath(netns)); err != nil {
				fmt.Fprintf(stderr, "%s: warning: net_namespace: %s does not exist on this host: directord would stop at start, as keepalived\n", netnsAt(o, cfg), netnsPath(netns))
			}
		}
		bw := bufio.NewWriter(stdout)
		writeSummary(bw, cfg, diags)
		if err := bw.Flush(); err != nil {
			fmt.Fprintf(stderr, "directord: %v\n", err)
			return exitFailure
		}
		return scriptTest(cfg, stderr)
	}
	if heapgoal.Wanted(os.LookupEnv) {
		// The daemon's collector headroom bounded when the live heap is
		// large (10,000 kept TLS connections); GOGC or GOMEMLIMIT in the
		// environment (/etc/default/directord) leaves it as Go's.
		heapgoal.New().Start()
	}
	return daemonMain(o, cfg, stderr)
}

// netNamespaceOf is the namespace the daemon runs in: -s NAME, else the
// file's net_namespace, else none ("").
func netNamespaceOf(o *options, cfg *config.Config) string {
	if o.netns != "" {
		return o.netns
	}
	if cfg == nil {
		return ""
	}
	return cfg.Global.NetNamespace
}

// netnsAt is where the namespace was named, for messages.
func netnsAt(o *options, cfg *config.Config) string {
	if o.netns != "" {
		return "directord -s " + o.netns
	}
	return cfg.Global.NetNamespacePos().String()
}

// unreadable reports whether the main file itself could not be read.
func unreadable(diags config.Diagnostics, file string) bool {
	for _, d := range diags {
		if d.Severity == config.Error && d.Pos.File == file && d.Pos.Line == 0 {
			return true
		}
	}
	return false
}

func countErrors(diags config.Diagnostics) string {
	n := len(diags.Errors())
	if n == 1 {
		return "1 error"
	}
	return fmt.Sprintf("%d errors", n)
}

// scriptTest checks the configuration's scripts on this host as
// keepalived's --config-test does, prints what it finds (file:line, the
// keyword, why) and returns keepalived's exit code: 6 when scripts would
// run without enable_script_security, else 5 when a vrrp_script is
// disabled (insecure, not found, not executable), else 0. The violation
// wins as in keepalived, whose --config-test keeps the last of its
// config_err_t values reported (CONFIG_SECURITY_ERROR) over the others.
func scriptTest(cfg *config.Config, stderr io.Writer) int {
	rep := script.CheckConfig(cfg, script.Sections{VRRP: true, LVS: true}, nil)
	code := exitOK
	for _, e := range rep.Entries {
		p := e.Prog
		switch {
		case p.Disabled != nil:
			fmt.Fprintf(stderr, "%s: warning: %s: %v: it will not run\n", e.At, e.Keyword, p.Disabled)
			if strings.HasPrefix(e.Keyword, "vrrp_script ") {
				code = exitConfigTest
			}
		case p.Insecure != "":
			fmt.Fprintf(stderr, "%s: warning: %s: unsafe permissions on %s; it runs because enable_script_security is off\n", e.At, e.Keyword, p.Insecure)
		}
		if p.Searched && p.Path != "" {
			fmt.Fprintf(stderr, "%s: warning: %s: %q found by a PATH search as %s: give its full path\n", e.At, e.Keyword, p.Script.Args[0], p.Path)
		}
	}
	if rep.Violation {
		msg := "SECURITY VIOLATION - scripts are being executed but enable_script_security is not set"
		if rep.Insecure > 0 {
			msg += "; there are insecure scripts"
		}
		fmt.Fprintf(stderr, "%s: warning: %s\n", cfg.Files[0], msg)
		code = exitConfigSecurity
	}
	return code
}

// writeSummary writes what -t prints on success, the resolved configuration
// in a few lines an operator can check at a glance, to w as they are made: a large
// file's summary (a line per use of a keyword directord runs differently,
// 40,000 for 20,000 real servers) is never held whole.
func writeSummary(w io.Writer, cfg *config.Config, diags config.Diagnostics) {
	out := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	out("configuration OK: %s\n", cfg.Files[0])
	if len(cfg.Files) > 1 {
		out("  includes %d more files\n", len(cfg.Files)-1)
	}
	out("router_id %s\n", cfg.Global.RouterID)
	for _, in := range cfg.Instances {
		var vips []string
		for _, v := range in.VIPs {
			vips = append(vips, v.Prefix.String())
		}
		out("vrrp_instance %s: %s VRRPv%d VRID %d on %s, priority %d, advert %s, %d VIPs %v\n",
			in.Name, in.State, in.Version, in.VRID, orNone(in.Interface), in.Priority, in.AdvertInt, len(in.VIPs), vips)
	}
	if t := cfg.NFTableName(); t != "" {
		var names []string
		for _, in := range cfg.Instances {
			if in.DropsVIPs() {
				names = append(names, in.Name)
			}
		}
		if len(names) > 0 {
			out("nftables: table %s drops traffic to and from the VIPs of %s while master (no accept mode)\n", t, strings.Join(names, ", "))
		}
	}
	if g := cfg.Global; g.NetNamespace != "" || g.NetNamespaceIPVS != nil {
		if g.NetNamespace != "" {
			out("net_namespace: directord runs in %s\n", netnsPath(g.NetNamespace))
		}
		if p := g.NetNamespaceIPVS; p != nil {
			where := netnsPath(*p)
			if *p == "" {
				where = "the host's namespace (PID 1's)"
			}
			out("net_namespace_ipvs: the virtual servers go to %s\n", where)
		}
	}
	for _, vs := range cfg.VirtualServers {
		checks := 0
		for _, rs := range vs.RealServers {
			checks += len(rs.Checkers)
		}
		id := vs.Addr.String()
		switch {
		case vs.FWMark != 0:
			id = fmt.Sprintf("fwmark %d", vs.FWMark)
		case vs.Group != "":
			id = "group " + vs.Group
		}
		if vs.Protocol != config.ProtocolUnset {
			id = vs.Protocol.String() + " " + id
		}
		announce := ""
		if vs.Announce != nil {
			announce = fmt.Sprintf(", announced by BGP as %s on %s", prefixList(vs.AnnouncedPrefixes()), vs.Announce.Dev)
		}
		out("virtual_server %s: %s %s, %d real servers, %d checks%s\n",
			id, vs.Scheduler, vs.Method.Kind, len(vs.RealServers), checks, announce)
	}
	if bg := cfg.Global.BGP; bg != nil {
		rid := "derived at start"
		if bg.RouterID.IsValid() {
			rid = bg.RouterID.String()
		}
		out("bgp: AS %d, router_id %s, withdraw wait %s\n", bg.LocalAS, rid, bg.WithdrawWait)
		for _, n := range bg.Neighbors {
			bfd := "no BFD"
			if n.BFD != nil {
				bfd = fmt.Sprintf("BFD %s x %d", n.BFD.Interval, n.BFD.Multiplier)
			}
			out("bgp neighbor %s: AS %d, hold time %s, %s\n", n.Addr, n.RemoteAS, n.HoldTime, bfd)
		}
	}
	// What the file relies on that directord does not do as keepalived,
	// under a heading if there is any.
	some := len(cfg.Differs) > 0
	for _, vs := range cfg.VirtualServers {
		some = some || vs.HASuspend && vs.Group != ""
		for _, rs := range vs.RealServers {
			some = some || len(rs.Unchecked()) > 0
		}
	}
	if some {
		out("differences from keepalived that this file relies on:\n")
	}
	diff := func(s string) { out("  %s\n", s) }
	for _, vs := range cfg.VirtualServers {
		if vs.HASuspend && vs.Group != "" {
			diff(fmt.Sprintf("virtual_server group %s (%s): ha_suspend runs its checks while an address of the group is on this host; keepalived's never match a group", vs.Group, vs.Pos))
		}
		for _, rs := range vs.RealServers {
			if len(rs.Unchecked()) == 0 {
				continue
			}
			var u []string
			for _, c := range rs.Unchecked() {
				u = append(u, c.String())
			}
			then := "checked only by its other checkers"
			if rs.AlwaysAlive() {
				then = "not checked at all: always alive"
			}
			diff(fmt.Sprintf("real_server %s (%s): %s not supported by directord; %s", rs.Addr, rs.Pos, strings.Join(u, ", "), then))
		}
	}
	// Every keyword the file uses that directord runs differently
	// (config.Differences, as docs/keywords.md lists them): once each, at
	// its first use, with how many uses there are (a large file has one
	// real_server and url per real server: 40,000 lines said nothing more).
	type use struct {
		first config.Difference
		n     int
	}
	var order []string
	uses := map[string]*use{}
	for _, d := range cfg.Differs {
		k := d.Block + "\x00" + d.Keyword
		if u, ok := uses[k]; ok {
			u.n++
			continue
		}
		uses[k] = &use{first: d, n: 1}
		order = append(order, k)
	}
	for _, k := range order {
		u := uses[k]
		d := u.first
		more := ""
		if u.n > 1 {
			more = fmt.Sprintf(" (used %d times, first here)", u.n)
		}
		out("  %s: %s (in %s)%s: %s\n", d.Pos, d.Keyword, d.Block, more, d.How)
	}
	// What the file asks for that directord does not do at all: one line
	// per function lost, its keywords and where (config.Losses).
	if ls := config.Losses(diags); len(ls) > 0 {
		out("what this file relies on that directord does not do:\n")
		for _, l := range ls {
			var uses []string
			for _, d := range l.Uses {
				uses = append(uses, d.Keyword+" at "+d.Pos.String())
			}
			out("  %s: %s\n", l.What, strings.Join(uses, ", "))
		}
	}
	warnings, unsupported := 0, 0
	for _, d := range diags {
		if d.Unsupported {
			unsupported++
		} else if d.Severity == config.Warning {
			warnings++
		}
	}
	out("%d warnings, %d keywords not supported by directord\n", warnings, unsupported)
}

func orNone(s string) string {
	if s == "" {
		return "(unicast, no interface)"
	}
	return s
}

// cpuProfile writes the process's CPU profile to path until stop.
func cpuProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// prefixList names announced prefixes, the first few of a long list.
func prefixList(ps []netip.Prefix) string {
	var names []string
	for i, p := range ps {
		if i == 3 && len(ps) > 4 {
			names = append(names, fmt.Sprintf("... (%d in all)", len(ps)))
			break
		}
		names = append(names, p.String())
	}
	return strings.Join(names, ", ")
}

// sinceExec is how long ago the process started, by the kernel's count
// (/proc/self/stat's start time against /proc/uptime, in the 1/100 s
// ticks both use): the part of a start spent before main, loading the
// program and starting the runtime, logged with -D.
func sinceExec(read func(string) ([]byte, error)) (time.Duration, bool) {
	stat, err := read("/proc/self/stat")
	if err != nil {
		return 0, false
	}
	up, err := read("/proc/uptime")
	if err != nil {
		return 0, false
	}
	// The command's name, in parentheses, may hold spaces: fields count
	// from the last ')'. The start time is field 22, the 20th after it.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	fields := strings.Fields(string(stat[i+1:]))
	upFields := strings.Fields(string(up))
	if len(fields) < 20 || len(upFields) < 1 {
		return 0, false
	}
	ticks, err1 := strconv.ParseUint(fields[19], 10, 64)
	secs, err2 := strconv.ParseFloat(upFields[0], 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	d := time.Duration(secs*float64(time.Second)) - time.Duration(ticks)*10*time.Millisecond
	return max(d, 0), true
}
