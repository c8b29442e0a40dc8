package config

import (
	"bufio"
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// wildConfigID is the config id (-i) both keepalived and directord read
// the wild configurations with (44 has @pod lines).
const wildConfigID = "director1"

// wildFiles lists the top-level configurations of wildDir (not the files
// they include, which sit in folders of their own).
func wildFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(wildDir(t), "*.conf"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no configurations in %s", wildDir(t))
	}
	for i, f := range files {
		files[i] = filepath.Base(f)
	}
	return files
}

// vrrpSummary is what TestWildConfigs compares with keepalived's view: per
// instance its interface, VRID, version, priority, advert interval, initial
// state, addresses, peers, tracked interfaces and processes, one fact per
// line.
// Tracked scripts are left out: keepalived drops those whose script file
// is missing on the host (most, here), so its view depends on the host.
func vrrpSummary(cfg *Config) string {
	var b strings.Builder
	for _, in := range cfg.Instances {
		fmt.Fprintf(&b, "instance %s\n", in.Name)
		switch {
		case in.VMAC != nil:
			xmit := ""
			if in.VMAC.XmitBase {
				xmit = ", xmit base i/f"
			}
			fmt.Fprintf(&b, "  interface %s, vmac on %s%s\n", in.VMAC.Name, in.Interface, xmit)
		default:
			fmt.Fprintf(&b, "  interface %s\n", in.Interface)
		}
		fmt.Fprintf(&b, "  vrid %d\n  version %d\n  priority %d\n", in.VRID, in.Version, in.Priority)
		fmt.Fprintf(&b, "  advert %s\n  state %s\n", in.AdvertInt, in.State)
		addr := func(kind string, v VIP) {
			dev := in.AddrDev(v)
			if in.VMAC != nil && dev == in.VMAC.Name {
				dev += "@" + in.Interface
			}
			fmt.Fprintf(&b, "  %s %s dev %s\n", kind, hostPrefix(v.Prefix), dev)
		}
		for _, v := range in.VIPs {
			addr("vip", v)
		}
		for _, v := range in.ExcludedVIPs {
			addr("evip", v)
		}
		for _, p := range in.UnicastPeers {
			fmt.Fprintf(&b, "  peer %s\n", p.Addr)
		}
		var tracked []string
		for _, ti := range in.TrackInterfaces {
			tracked = append(tracked, fmt.Sprintf("  track_interface %s weight %d\n", ti.Name, ti.Weight))
		}
		for _, tp := range in.TrackProcesses {
			tracked = append(tracked, fmt.Sprintf("  track_process %s weight %d%s\n", tp.Name, tp.Weight, map[bool]string{true: " reverse"}[tp.Reverse]))
		}
		sort.Strings(tracked)
		b.WriteString(strings.Join(tracked, ""))
	}
	return b.String()
}

// hostPrefix writes a prefix as keepalived's dump does: a host address
// without its length.
func hostPrefix(p netip.Prefix) string {
	if p.IsSingleIP() {
		return p.Addr().String()
	}
	return p.String()
}

// wildInterfaces names the interfaces a configuration uses, for a
// namespace in which keepalived can run it.
func wildInterfaces(cfg *Config) []string {
	set := map[string]bool{"eth0": true}
	add := func(s string) {
		if s != "" && s != "lo" && len(s) < 16 {
			set[s] = true
		}
	}
	if sd := cfg.Global.SyncDaemon; sd != nil {
		add(sd.Interface)
	}
	for _, in := range cfg.Instances {
		add(in.Interface)
		for _, v := range append(append([]VIP{}, in.VIPs...), in.ExcludedVIPs...) {
			add(v.Dev)
		}
		for _, ti := range in.TrackInterfaces {
			add(ti.Name)
		}
		for _, r := range in.Routes {
			add(r.Dev)
		}
	}
	var out []string
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestWildKeepalivedDump writes testdata/wild/NAME.vrrp: keepalived 2.2.7's
// own view of each wild configuration's VRRP instances, from its
// configuration dump (keepalived -P -d) in a namespace holding the file's
// interfaces. It runs only when asked (root, keepalived installed):
//
//	DIRECTORD_WILD_DUMP=1 go test ./config -run TestWildKeepalivedDump
func TestWildKeepalivedDump(t *testing.T) {
	if os.Getenv("DIRECTORD_WILD_DUMP") != "1" {
		t.Skip("set DIRECTORD_WILD_DUMP=1 (as root) to rewrite testdata/wild/*.vrrp from keepalived")
	}
	dir, err := filepath.Abs(wildDir(t))
	if err != nil {
		t.Fatal(err)
	}
	if from := os.Getenv("DIRECTORD_WILD_FROM_RAW"); from != "" {
		// Parse again logs kept by an earlier run (DIRECTORD_WILD_RAW).
		logs, _ := filepath.Glob(filepath.Join(from, "*.lvs.log"))
		for _, l := range logs {
			data, err := os.ReadFile(l)
			if err != nil {
				t.Fatal(err)
			}
			name := strings.TrimSuffix(filepath.Base(l), ".lvs.log")
			if got := parseKeepalivedLVS(string(data)); got != "" {
				os.WriteFile(filepath.Join("testdata", "wild", name+".lvs"), []byte(got), 0o644)
			}
		}
		return
	}
	_, err = os.Stat("/proc/net/ip_vs")
	ipvs := err == nil
	raw := os.Getenv("DIRECTORD_WILD_RAW") // a folder for keepalived's whole logs
	save := func(name, ext, text string) {
		if err := os.WriteFile(filepath.Join("testdata", "wild", name+ext), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	only := regexp.MustCompile(os.Getenv("DIRECTORD_WILD_ONLY")) // the files to redo
	for i, name := range wildFiles(t) {
		if !only.MatchString(name) {
			continue
		}
		cfg, _ := loadWild(t, name, Options{ConfigID: wildConfigID})
		ns := fmt.Sprintf("cwild%d-%d", os.Getpid(), i)
		if len(cfg.Instances) > 0 {
			dump := keepalivedDump(t, ns, dir, name, cfg, "-P")
			if raw != "" {
				os.WriteFile(filepath.Join(raw, name+".vrrp.log"), []byte(dump), 0o644)
			}
			if got := parseKeepalivedDump(dump); got != "" {
				save(name, ".vrrp", got)
			} else if wildNoDump[name] == "" || ipvs {
				t.Errorf("%s: keepalived dumped no instance:\n%s", name, dump)
			}
		}
		if len(cfg.VirtualServers) > 0 && ipvs {
			dump := keepalivedDump(t, ns, dir, name, cfg, "-C")
			if raw != "" {
				os.WriteFile(filepath.Join(raw, name+".lvs.log"), []byte(dump), 0o644)
			}
			if got := parseKeepalivedLVS(dump); got != "" {
				save(name, ".lvs", got)
			} else {
				t.Errorf("%s: keepalived dumped no virtual server:\n%s", name, dump)
			}
		}
	}
}

// keepalivedDump runs keepalived's VRRP process on the file in a new
// namespace and returns its log up to the end of its configuration dump.
func keepalivedDump(t *testing.T, ns, dir, name string, cfg *Config, mode string) string {
	t.Helper()
	run := func(args ...string) {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("netns", "add", ns)
	defer exec.Command("ip", "netns", "del", ns).Run()
	run("-n", ns, "link", "set", "lo", "up")
	ifaces := wildInterfaces(cfg)
	for i, ifn := range ifaces {
		run("-n", ns, "link", "add", ifn, "type", "veth", "peer", "name", fmt.Sprintf("wpeer%d", i))
		run("-n", ns, "link", "set", ifn, "up")
		run("-n", ns, "link", "set", fmt.Sprintf("wpeer%d", i), "up")
	}
	// Source addresses must be the host's: keepalived picks the instance's
	// interface by them when it names none.
	for _, in := range cfg.Instances {
		for _, a := range []netip.Addr{in.UnicastSrcIP, in.MCastSrcIP} {
			if !a.IsValid() || a.IsMulticast() {
				continue
			}
			ifn := in.Interface
			if ifn == "" {
				ifn = "eth0"
			}
			exec.Command("ip", "-n", ns, "addr", "add", netip.PrefixFrom(a, a.BitLen()).String(), "dev", ifn, "nodad").Run()
		}
	}
	tmp := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ip", "netns", "exec", ns, "keepalived", mode, "-n", "-l", "-d", "-i", wildConfigID,
		"-f", filepath.Join(dir, name), "-p", filepath.Join(tmp, "k.pid"), "-r", filepath.Join(tmp, "v.pid"), "-c", filepath.Join(tmp, "c.pid"))
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	sc := bufio.NewScanner(out)
	// The VRRP dump ends where its next section starts; the checkers'
	// dump ends with its "Health checkers" section, at the first line
	// that is not part of it.
	inDump := false
	for sc.Scan() {
		line := sc.Text()
		b.WriteString(line + "\n")
		text := dumpTime.ReplaceAllString(line, "")
		if mode == "-P" {
			if strings.Contains(text, "------< VRRP Topology >------") {
				inDump = true
			} else if inDump && strings.Contains(text, "------<") {
				break
			}
			continue
		}
		if strings.Contains(text, "------< Health checkers >------") {
			inDump = true
		} else if inDump && !strings.HasPrefix(text, " ") {
			break
		}
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	go func() {
		for sc.Scan() {
		}
	}()
	cmd.Wait()
	return b.String()
}

var dumpTime = regexp.MustCompile(`^[A-Z][a-z]{2} [A-Z][a-z]{2} +\d+ \d\d:\d\d:\d\d \d{4}: `)

// parseKeepalivedDump turns keepalived's "VRRP Topology" dump into
// vrrpSummary's form.
func parseKeepalivedDump(dump string) string {
	var b strings.Builder
	list := "" // the list the indented lines belong to
	inTopology := false
	type inst struct {
		lines, tracked []string
		fields         map[string]string
	}
	var cur *inst
	flush := func() {
		if cur == nil {
			return
		}
		f := cur.fields
		b.WriteString("instance " + f["name"] + "\n")
		b.WriteString("  interface " + f["interface"] + "\n")
		b.WriteString("  vrid " + f["vrid"] + "\n  version " + f["version"] + "\n  priority " + f["priority"] + "\n")
		b.WriteString("  advert " + f["advert"] + "\n  state " + f["state"] + "\n")
		b.WriteString(strings.Join(cur.lines, ""))
		sort.Strings(cur.tracked)
		b.WriteString(strings.Join(cur.tracked, ""))
		cur = nil
	}
	for _, line := range strings.Split(dump, "\n") {
		line = dumpTime.ReplaceAllString(line, "")
		if strings.Contains(line, "------< VRRP Topology >------") {
			inTopology = true
			continue
		}
		if !inTopology {
			continue
		}
		if strings.Contains(line, "------<") {
			break
		}
		trim := strings.TrimSpace(line)
		indent := len(line) - len(strings.TrimLeft(line, " "))
		if k, v, ok := strings.Cut(trim, " = "); ok && indent <= 3 {
			list = ""
			switch k {
			case "VRRP Instance":
				flush()
				cur = &inst{fields: map[string]string{"name": v}}
			case "Interface":
				cur.fields["interface"] = v
			case "Virtual Router ID":
				cur.fields["vrid"] = v
			case "VRRP Version":
				cur.fields["version"] = v
			case "Priority":
				cur.fields["priority"] = v
			case "Wantstate":
				cur.fields["state"] = v
			case "Advert interval":
				cur.fields["advert"] = dumpInterval(v)
			}
			continue
		}
		if cur == nil {
			continue
		}
		if indent <= 3 {
			switch {
			case strings.HasPrefix(trim, "Virtual IP Excluded"):
				list = "evip"
			case strings.HasPrefix(trim, "Virtual IP"):
				list = "vip"
			case strings.HasPrefix(trim, "Unicast Peer"):
				list = "peer"
			case strings.HasPrefix(trim, "Tracked interfaces"):
				list = "track_interface"
			case strings.HasPrefix(trim, "Tracked processes"):
				list = "track_process"
			default:
				list = ""
			}
			continue
		}
		w := strings.Fields(trim)
		switch list {
		case "vip", "evip":
			dev := ""
			for i := 1; i+1 < len(w); i++ {
				if w[i] == "dev" {
					dev = w[i+1]
				}
			}
			cur.lines = append(cur.lines, fmt.Sprintf("  %s %s dev %s\n", list, w[0], dev))
		case "peer":
			cur.lines = append(cur.lines, "  peer "+w[0]+"\n")
		case "track_interface":
			weight := "0"
			for i := 1; i+1 < len(w); i++ {
				if w[i] == "weight" {
					weight = w[i+1]
				}
			}
			cur.tracked = append(cur.tracked, fmt.Sprintf("  track_interface %s weight %s\n", w[0], weight))
		case "track_process":
			// "NAME, weight W[ reverse]"
			if len(w) >= 3 && w[1] == "weight" {
				cur.tracked = append(cur.tracked, "  track_process "+strings.TrimSuffix(w[0], ",")+" weight "+strings.Join(w[2:], " ")+"\n")
			}
		}
	}
	flush()
	return b.String()
}

// dumpInterval reads "10 sec" or "100 milli-sec" as a Go duration string.
func dumpInterval(v string) string {
	f := strings.Fields(v)
	if len(f) != 2 {
		return v
	}
	n, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return v
	}
	switch f[1] {
	case "sec":
		return time.Duration(n * float64(time.Second)).String()
	case "milli-sec":
		return time.Duration(n * float64(time.Millisecond)).String()
	}
	return v
}
