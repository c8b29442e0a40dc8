// Command benchreport turns the output of make bench (go test -bench
// lines, one file per step, in a folder) into the results table of
// docs/benchmarks.md, between its markers, and into the plots beside it.
// Every figure is directord's beside its reference measured in the same
// run; a figure that misses the aim its issue set says so, and why.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

func main() {
	dir := flag.String("in", "bin/bench", "folder of the benchmark outputs (*.txt)")
	doc := flag.String("doc", "", "Markdown file whose results section to rewrite (between "+begin+" and "+end+")")
	img := flag.String("img", "", "folder for the plots (PNG)")
	flag.Parse()
	r, err := load(*dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
	table := r.table()
	fmt.Print(table)
	if *img != "" {
		if err := r.plots(*img); err != nil {
			fmt.Fprintln(os.Stderr, "benchreport: plots:", err)
			os.Exit(1)
		}
	}
	if *doc != "" {
		if err := rewrite(*doc, table); err != nil {
			fmt.Fprintln(os.Stderr, "benchreport:", err)
			os.Exit(1)
		}
	}
}

// results are the benchmarks' metrics by name (without the -GOMAXPROCS
// suffix) and unit, with the machine and the date of the run.
type results struct {
	m       map[string]map[string]float64
	machine string // the host
	guest   string // the User-Mode Linux guest on it
	date    string

	guestKernel string
}

// reuseAge is the reuse_connection of the checks benchmark's
// directord+reuse (integration/lvs).
const reuseAge = "60"

var (
	line        = regexp.MustCompile(`^Benchmark(\S+?)(-\d+)?\s+\d+\s+(.*)$`)
	guestKernel = regexp.MustCompile(`Running on Linux (\d+\.\d+)`) // keepalived's banner, in the guest
)

func load(dir string) (*results, error) {
	r := &results{m: map[string]map[string]float64{}}
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no benchmark output in %s: run make bench", dir)
	}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return nil, err
		}
		if err := r.parse(fh); err != nil {
			fh.Close()
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		fh.Close()
	}
	if r.machine == "" {
		r.machine = "?"
	}
	r.guest = "UML guest (1 vCPU) on " + r.machine
	if r.guestKernel != "" {
		r.guest = "UML guest (Linux " + r.guestKernel + ", 1 vCPU) on " + r.machine
	}
	return r, nil
}

func (r *results) parse(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		t := sc.Text()
		if v, ok := strings.CutPrefix(t, "machine: "); ok {
			r.machine = v
			continue
		}
		if g := guestKernel.FindStringSubmatch(t); g != nil {
			r.guestKernel = g[1]
			continue
		}
		if v, ok := strings.CutPrefix(t, "date: "); ok {
			r.date = v
			continue
		}
		g := line.FindStringSubmatch(t)
		if g == nil {
			continue
		}
		f := strings.Fields(g[3])
		m := r.m[g[1]]
		if m == nil {
			m = map[string]float64{}
			r.m[g[1]] = m
		}
		for i := 0; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return fmt.Errorf("%q: %w", t, err)
			}
			m[f[i+1]] = v
		}
	}
	return sc.Err()
}

// get is a metric, and whether the run had it.
func (r *results) get(name, unit string) (float64, bool) {
	v, ok := r.m[name][unit]
	return v, ok
}

// row is one line of the table.
type row struct {
	figure     string
	directord  string
	reference  string
	ratio      string
	aim        string
	verdict    string
	why        string // what limits it, said when the aim is missed
	guest      bool
	d, ref     float64
	haveD, hvR bool
}

func (r *results) table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Measured by `make bench` on %s, %s. Ratio: directord's figure over the reference's (below 1: directord is faster or smaller).\n\n", r.machine, r.date)
	b.WriteString("| figure | directord | reference | ratio | aim | met | machine | date |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, x := range r.rows() {
		if !x.haveD {
			continue // not measured in this run
		}
		where := r.machine
		if x.guest {
			where = r.guest
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", x.figure, x.directord, x.reference, x.ratio, x.aim, x.verdict, where, r.date)
	}
	return b.String()
}

func num(v float64, unit string) string {
	switch {
	case v == 0:
		return "0 " + unit
	case v >= 100:
		return fmt.Sprintf("%.0f %s", v, unit)
	case v >= 10:
		return fmt.Sprintf("%.1f %s", v, unit)
	default:
		return fmt.Sprintf("%.2f %s", v, unit)
	}
}

// pair is a row comparing directord's metric with a reference's.
func (r *results) pair(figure, dName, dUnit, rName, rUnit, refLabel, unit string, scale float64) row {
	x := row{figure: figure}
	x.d, x.haveD = r.get(dName, dUnit)
	x.ref, x.hvR = r.get(rName, rUnit)
	x.d *= scale
	x.ref *= scale
	if x.haveD {
		x.directord = num(x.d, unit)
	}
	if x.hvR {
		x.reference = refLabel + ": " + num(x.ref, unit)
		if x.ref != 0 {
			x.ratio = fmt.Sprintf("%.2f", x.d/x.ref)
		}
	} else {
		x.reference = refLabel + ": not measured"
	}
	return x
}

func (r *results) rows() []row {
	var out []row
	add := func(x row) { out = append(out, x) }

	// VRRP failover, on the host.
	for _, p := range []struct{ name, label string }{{"v2-1s", "VRRPv2, advert 1 s"}, {"v3-100ms", "VRRPv3, advert 100 ms"}} {
		for _, c := range []struct{ sig, label string }{{"kill", "master killed"}, {"stop", "master stopped"}} {
			base := "Failover/" + p.name + "/" + c.sig + "/master=keepalived/backup="
			bound, _ := r.get(base+"directord", "ms-bound")
			x := r.pair(fmt.Sprintf("failover, %s, %s (backup's time)", p.label, c.label), base+"directord", "ms-median", base+"keepalived", "ms-median", "keepalived", "ms", 1)
			r.bound(&x, bound, 5, "ms")
			add(x)
		}
		base := "Failover/" + p.name + "/kill/master="
		bound, _ := r.get(base+"directord/backup=directord", "ms-bound")
		x := r.pair(fmt.Sprintf("failover, %s, the master's daemon killed (pair of each)", p.label), base+"directord/backup=directord", "ms-median", base+"keepalived/backup=keepalived", "ms-median", "keepalived", "ms", 1)
		r.bound(&x, bound, 5, "ms")
		add(x)
	}
	// BGP+BFD beside VRRP (the backup's time, master killed, directord
	// the backup), both on the host in the same run.
	for _, p := range []struct{ name, label string }{{"v3-100ms", "VRRPv3, advert 100 ms"}, {"v2-1s", "VRRPv2, advert 1 s"}} {
		base := "Failover/" + p.name + "/kill/master=keepalived/backup=directord"
		vrrpBound, _ := r.get(base, "ms-bound")
		label := fmt.Sprintf("failover, BGP+BFD 100 ms x 3, a director's cable cut: until the router's route leaves it (bound: BFD's detection, 100 ms x 3) beside %s, master killed: until the backup's gratuitous ARP", p.label)
		if vrrpBound != 0 {
			label += fmt.Sprintf(" (bound: Master_Down_Interval, %s)", num(vrrpBound, "ms"))
		}
		x := r.pair(label, "FailoverBGP/bfd-100ms-x3/cut", "ms-median", base, "ms-median", "directord's VRRP", "ms", 1)
		bound, _ := r.get("FailoverBGP/bfd-100ms-x3/cut", "ms-bound")
		x.why = "every cut is ended by the router's BFD (FRR's reason Cease/BFD Down), the rest is the time its daemons wait for the 2 cores, busy at host load 13 to 17 when measured (see BGP+BFD failover)"
		r.bound(&x, bound, 50, "ms")
		add(x)
	}
	// Adverts.
	x := r.pair("advert gap p99 over 100 ms, both cores busy", "AdvertInterval/master=directord", "ms-p99-over-100ms", "AdvertInterval/master=keepalived", "ms-p99-over-100ms", "keepalived", "ms", 1)
	x.why = "the machine's other load moves this figure between runs (see VRRP adverts); with vrrp_rt_priority 1, the next row, directord keeps within the aim"
	r.atMost(&x, 1, "ms", "")
	add(x)
	x = r.pair("same, directord with vrrp_rt_priority 1", "AdvertInterval/master=directord-rt", "ms-p99-over-100ms", "AdvertInterval/master=keepalived", "ms-p99-over-100ms", "keepalived", "ms", 1)
	r.atMost(&x, 1, "ms", "")
	add(x)
	x = r.pair("advert gap p99 over 100 ms, the master running 20 SSL_GET checks", "AdvertsUnderChecks/master=directord", "ms-p99-over-100ms", "AdvertsUnderChecks/master=keepalived", "ms-p99-over-100ms", "keepalived", "ms", 1)
	x.guest = true
	x.why = "the guest's own timer and scheduling noise, which keepalived misses by too, and directord's checks share its process with VRRP, where keepalived's run in a process of their own (see VRRP adverts)"
	r.atMost(&x, 1, "ms", "")
	add(x)

	// IPVS, in the guest.
	x = r.pair("IPVS: 1,000 services x 10 destinations into an empty table", "KernelFullApply", "directord-s/op", "KernelFullApply", "ipvsadm-R-s/op", "`ipvsadm -R`", "s", 1)
	x.guest = true
	x.why = "see IPVS"
	r.ratioAtMost(&x, 1, "no slower than `ipvsadm -R`")
	add(x)
	for _, mode := range []string{"SyncServices", "Sync"} {
		how := map[string]string{"SyncServices": "one pool compared (a health verdict)", "Sync": "the whole table compared"}[mode]
		x = r.pair("IPVS: one weight changed in that table, "+how, "KernelOneChange/"+mode, "ms/change", "KernelOneChange/"+mode, "ipvsadm-e-ms/change", "`ipvsadm -e`", "ms", 1)
		x.guest = true
		x.why = "one netlink exchange in the guest, where a system call costs about 130 us and the host's load moves times threefold; the diff itself takes a few us on the host"
		r.atMost(&x, 5, "ms", "")
		add(x)
	}
	x = r.pair("IPVS: reading back that table (a resync)", "KernelRead", "ns/op", "KernelRead", "ipvsadm-Sn-ms/op", "`ipvsadm -Sn`", "ms", 1)
	x.d /= 1e6
	x.directord = num(x.d, "ms")
	if x.hvR && x.ref != 0 {
		x.ratio = fmt.Sprintf("%.2f", x.d/x.ref)
	}
	x.guest = true
	x.why = "each of the 1,000 dumps is a netlink exchange of its own, whose system calls and Go runtime wake-ups cost over 100 us each in the guest (see IPVS)"
	r.ratioAtMost(&x, 1, "no slower than `ipvsadm -Sn`")
	add(x)
	x = r.pair("daemon start to 1,000 x 10 destinations in the kernel", "DaemonsBesideKeepalived/table/directord", "start-s", "DaemonsBesideKeepalived/table/keepalived", "start-s", "keepalived", "s", 1)
	x.guest = true
	x.why = "programming 11,000 operations is the kernel's work, about a second in the guest, and the program's own start (its pages, its package init) another; see Start-up"
	r.ratioAtMost(&x, 0.5, "half of keepalived's")
	add(x)
	x = r.pair("reload (SIGHUP) with one weight changed: until the kernel has it", "DaemonsBesideKeepalived/table/directord", "reload-s", "DaemonsBesideKeepalived/table/keepalived", "reload-s", "keepalived", "s", 1)
	x.guest = true
	add(x)
	x = r.pair("the same reload: CPU", "DaemonsBesideKeepalived/table/directord", "reload-cpu-s", "DaemonsBesideKeepalived/table/keepalived", "reload-cpu-s", "keepalived", "s", 1)
	x.guest = true
	add(x)
	idleWhy := "not the program's pages, about keepalived's, but the anonymous memory: the live model, about 6 MB at this size, and the Go runtime's own (its metadata, the stacks, the heap's free room) (see Memory)"
	x = r.pair("idle daemon holding 1,000 x 20 real servers, no checkers: memory (RSS, all processes)", "DaemonsBesideKeepalived/idle/directord", "rss-MB", "DaemonsBesideKeepalived/idle/keepalived", "rss-MB", "keepalived", "MB", 1)
	x.guest = true
	x.why = idleWhy
	r.ratioAtMost(&x, 1, "at most keepalived's")
	add(x)
	x = r.pair("the same, after two resyncs (75 s after the start; keepalived reads nothing back)", "DaemonsBesideKeepalived/idle/directord", "rss-resync-MB", "DaemonsBesideKeepalived/idle/keepalived", "rss-resync-MB", "keepalived", "MB", 1)
	x.guest = true
	x.why = idleWhy
	r.ratioAtMost(&x, 1, "at most keepalived's")
	add(x)
	x = r.pair("RSS growth over 100 reloads of 1,000 x 10, each changing one real server (medians of the 6th-10th and the last five)", "DaemonsBesideKeepalived/reloads/directord", "growth-%", "DaemonsBesideKeepalived/reloads/keepalived", "growth-%", "keepalived", "%", 1)
	x.guest = true
	x.ratio = "" // a ratio of two growths near 0 means nothing
	r.atMost(&x, 5, "%", "")
	add(x)

	// Health checks, in the guest, by size: directord's checks as
	// keepalived's, then with reuse_connection (directord+reuse), where
	// keepalived's checker, which opens a connection per probe, is still
	// the reference.
	overload := "the guest's one CPU, which the daemon shares with the HTTPS server answering for every real server, is not enough for directord's checks at this rate: they wait for it and come less often (see Health checks)"
	ticks := "the guest counts a process's CPU in ticks of 10 ms, which find keepalived's checker, running for moments far shorter, a handful of times below 200 real servers (see Health checks)"
	checkRows := func(lbl, d, k, cpuWhy, memWhy string) {
		want, _ := r.get(d, "wanted-checks/s")
		x := r.pair(lbl+": CPU per check served", d, "cpu-ms/check", k, "cpu-ms/check", "keepalived's checker", "ms", 1)
		x.guest = true
		x.why = cpuWhy
		r.ratioAtMost(&x, 0.5, "half of keepalived's")
		add(x)
		if _, ok := r.get(d, "guest-cpu-ms/check"); ok {
			x = r.pair(lbl+": the whole guest's CPU per check served (the daemon's, the HTTPS server's answering it and the kernel's, by what a spinner of lowest priority is left; not the guest's ticks)", d, "guest-cpu-ms/check", k, "guest-cpu-ms/check", "keepalived's checker", "ms", 1)
			x.guest = true
			add(x)
		}
		x = r.pair(lbl+fmt.Sprintf(": checks served per second (of %.0f; directord's cycles are up to 10 %% shorter)", want), d, "checks/s", k, "checks/s", "keepalived's checker", "/s", 1)
		x.guest = true
		x.why = overload
		if x.haveD {
			// directord shortens each cycle by up to 10 % (its jitter),
			// so it wants about 5 % more than keepalived.
			x.aim, x.verdict = fmt.Sprintf("at least 90%% of %.0f", want), verdict(&x, x.d >= 0.9*want)
		}
		add(x)
		x = r.pair(lbl+": memory (RSS)", d, "rss-MB", k, "rss-MB", "keepalived's checker", "MB", 1)
		x.guest = true
		x.why = overload + memWhy
		r.atMost(&x, 100, "MB", "")
		add(x)
		for _, t := range []struct {
			unit, label string
			bound       float64
		}{{"down-worst-s", "slowest of 20 failing servers to weight 0", 3}, {"up-worst-s", "slowest of them back", 2}} {
			x = r.pair(lbl+": "+t.label, d, t.unit, k, t.unit, "keepalived's checker", "s", 1)
			x.guest = true
			missed, _ := r.get(d, "missed")
			x.why = overload
			r.atMost(&x, t.bound+0.2, "s", fmt.Sprintf("bound %.0f s (+0.2 s: the kernel is read every 0.1 s)", t.bound))
			if missed > 0 {
				x.verdict = fmt.Sprintf("**no**: %.0f of 40 transitions not seen in 30 s; %s", missed, overload)
			}
			add(x)
		}
	}
	for _, n := range r.checkSizes() {
		d, k := fmt.Sprintf("ChecksBesideKeepalived/rs=%d/directord", n), fmt.Sprintf("ChecksBesideKeepalived/rs=%d/keepalived", n)
		// Why a CPU figure may miss its aim: below 200 real servers the
		// reference's own figure is a few ticks; from 200 on, the guest's
		// CPU is short.
		why := ticks
		if n >= 200 {
			why = overload
		}
		if _, ok := r.get(d, "cpu-ms/check"); ok {
			checkRows(fmt.Sprintf("checks, %d real servers (SSL_GET every 2 s)", n), d, k,
				"in the guest every clock reading and every wake-up of Go's runtime is a system call of 130 to 250 us, and the runtime makes several per probe where keepalived's loop makes one; and "+why,
				"; up to 1,024 probes wait in flight, each with its connection and TLS state")
		}
		if _, ok := r.get(d+"+reuse", "cpu-ms/check"); ok {
			checkRows(fmt.Sprintf("checks, %d real servers, directord with reuse_connection %s (keepalived: a connection per probe)", n, reuseAge),
				d+"+reuse", k, why, "; each real server's connection and TLS state is kept between probes")
		}
	}

	// 10,000 real servers: on the host, directord alone, as keepalived
	// checks and with reuse_connection.
	for _, v := range []struct{ name, lbl string }{
		{"Checks10k", "checks, 10,000 real servers (SSL_GET every 2 s) on the host, directord alone (keepalived's checker needs IPVS)"},
		{"Checks10kReuse", "the same, with reuse_connection 60"},
	} {
		if _, ok := r.get(v.name, "checks/s"); !ok {
			continue
		}
		x = r.pair(v.lbl+": probes per second (of 5,000)", v.name, "checks/s", "", "", "keepalived", "/s", 1)
		x.reference = "none here"
		x.why = "the HTTPS server answering them shares the host's two cores"
		if x.haveD {
			x.aim, x.verdict = "at least 90% of 5000", verdict(&x, x.d >= 4500)
		}
		add(x)
		x = r.pair(v.lbl+": CPU", v.name, "cpu-s/s", "", "", "keepalived", "s/s", 1)
		x.reference = "none here"
		add(x)
		x = r.pair(v.lbl+": CPU per probe", v.name, "cpu-ms/check", "", "", "keepalived", "ms", 1)
		x.reference = "none here"
		add(x)
		x = r.pair(v.lbl+": memory (RSS)", v.name, "rss-MB", "", "", "keepalived", "MB", 1)
		x.reference = "none here"
		if v.name == "Checks10kReuse" {
			x.why = "crypto/tls's state of the 10,000 kept connections is 31 MB of the 47 MB of live heap, and the collector's headroom, bounded by internal/heapgoal, is on top (see Memory)"
		}
		r.atMost(&x, 100, "MB", "")
		add(x)
	}

	// The lab, in the guest: the active-active directors beside the
	// VRRP pair with connection sync, in the same run.
	out = append(out, r.labRows()...)

	// Configuration.
	x = r.pair("configuration: `-t` of 1,000 x 20 SSL_GET real servers, wall time", "ConfigCheck/directord", "s", "ConfigCheck/keepalived", "s", "`keepalived -t`", "s", 1)
	add(x)
	x = r.pair("the same: memory (max RSS)", "ConfigCheck/directord", "MB", "ConfigCheck/keepalived", "MB", "`keepalived -t`", "MB", 1)
	x.why = "the resolved model, 523 bytes of live heap a checked real server (its real server and checker, every position kept for diagnostics), which the collector lets grow to twice that at the peak, and the binary's own pages (see Memory)"
	r.ratioAtMost(&x, 1, "at most keepalived's")
	add(x)
	x = row{figure: "the same, loaded in-process (`go test -bench LoadLarge ./config`)", reference: "the aim"}
	if v, ok := r.get("LoadLarge", "ns/op"); ok {
		x.haveD, x.d = true, v/1e6
		x.directord = num(x.d, "ms")
		x.ratio = fmt.Sprintf("%.2f", x.d/250)
		r.atMost(&x, 250, "ms", "")
	}
	add(x)
	return out
}

// checkSizes are the sizes the health-check benchmark ran, smallest
// first, whichever daemons it ran them with.
func (r *results) checkSizes() []int {
	seen := map[int]bool{}
	var out []int
	for name := range r.m {
		var n int
		if _, err := fmt.Sscanf(name, "ChecksBesideKeepalived/rs=%d/", &n); err == nil && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	sort.Ints(out)
	return out
}

// bound: directord within slack of the protocol's bound.
func (r *results) bound(x *row, bound, slack float64, unit string) {
	if bound == 0 || !x.haveD {
		return
	}
	x.aim = fmt.Sprintf("within %.0f %s of the bound, %s", slack, unit, num(bound, unit))
	x.verdict = verdict(x, x.d <= bound+slack)
}

// atMost: directord's figure at most limit.
func (r *results) atMost(x *row, limit float64, unit, aim string) {
	if !x.haveD {
		return
	}
	if aim == "" {
		aim = "at most " + num(limit, unit)
	}
	x.aim = aim
	x.verdict = verdict(x, x.d <= limit)
}

// ratioAtMost: directord's figure at most limit times the reference's.
func (r *results) ratioAtMost(x *row, limit float64, aim string) {
	if !x.haveD || !x.hvR || x.ref == 0 {
		return
	}
	x.aim = aim
	x.verdict = verdict(x, x.d/x.ref <= limit)
}

func verdict(x *row, ok bool) string {
	switch {
	case ok:
		return "yes"
	case x.why != "":
		return "**no**: " + x.why
	}
	return "**no**"
}

const (
	begin = "<!-- make bench: begin -->"
	end   = "<!-- make bench: end -->"
)

// rewrite replaces what lies between the markers in file with table.
func rewrite(file, table string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	s := string(b)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		return fmt.Errorf("%s: no %s ... %s section", file, begin, end)
	}
	s = s[:i+len(begin)] + "\n" + table + s[j:]
	return os.WriteFile(file, []byte(s), 0o644)
}
