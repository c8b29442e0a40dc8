package lvs

import (
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/directord/directord/internal/nstest"
	"github.com/directord/directord/internal/testcert"
	"github.com/directord/directord/internal/testconf"
	"github.com/directord/directord/ipvs"
)

// farm is one local HTTPS server answering /healthz for every real server
// of testconf.Checked (127.x.y.z:443 inside a namespace): 200, or 500 for
// those marked failing.
type farm struct {
	srv     *httptest.Server
	failing sync.Map // real server address → true
	served  atomic.Int64
}

func newFarm(b *testing.B, s *nstest.Scope, ns *nstest.NS) *farm {
	f := &farm{}
	var ln net.Listener
	ns.Do(s, func() {
		var err error
		if ln, err = net.Listen("tcp4", ":443"); err != nil {
			b.Fatal(err)
		}
	})
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.served.Add(1)
		la, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
		if la != nil {
			if _, bad := f.failing.Load(netip.MustParseAddrPort(la.String()).Addr()); bad {
				http.Error(w, "broken", http.StatusInternalServerError)
				return
			}
		}
		w.Write([]byte("ok\n"))
	}))
	f.srv.Listener.Close()
	f.srv.Listener = ln
	f.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	// An ECDSA P-256 certificate and X25519: the cheapest handshake for
	// the server, which shares the guest's one CPU with the checkers it
	// serves (httptest's own RSA key costs it a millisecond a handshake).
	cert, err := testcert.Server("farm.bench.example")
	if err != nil {
		b.Fatal(err)
	}
	f.srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, CurvePreferences: []tls.CurveID{tls.X25519}}
	f.srv.StartTLS()
	s.Cleanup(f.srv.Close)
	return f
}

// cpu is the CPU time of a process and its children so far.
func cpu(pid int) time.Duration {
	var ticks int64
	for _, p := range family(pid) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			continue
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += u + s
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ
}

// rss is the resident memory of a process and its children, in MB.
func rss(pid int) float64 { return statusMB(pid, "VmRSS:") }

// statusMB sums field (VmRSS:, RssFile: ...) of /proc/PID/status over
// pid and its descendants, in MB.
func statusMB(pid int, field string) float64 {
	var kb int64
	for _, p := range family(pid) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", p))
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, field); ok {
				n, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
				kb += n
			}
		}
	}
	return float64(kb) / 1024
}

// family is pid and its descendants.
func family(pid int) []int {
	out := []int{pid}
	es, _ := os.ReadDir("/proc")
	parent := map[int]int{}
	for _, e := range es {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			continue
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
		pp, _ := strconv.Atoi(f[1])
		parent[p] = pp
	}
	for changed := true; changed; {
		changed = false
		for p, pp := range parent {
			for _, o := range out {
				if pp == o && !contains(out, p) {
					out = append(out, p)
					changed = true
				}
			}
		}
	}
	return out
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// benchWho is the daemons to measure: BENCH_WHO ("directord" or
// "keepalived", for an experiment on one of them), or both.
func benchWho() []string {
	if w := os.Getenv("BENCH_WHO"); w != "" {
		return strings.Fields(w)
	}
	return []string{"directord", "directord+reuse", "keepalived"}
}

// reuseAge is the benchmark's reuse_connection for directord+reuse:
// longer than its window, as a setting of a minute would be.
const reuseAge = "60"

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// BenchmarkChecksBesideKeepalived runs directord -C and then keepalived
// -C (its checker programs IPVS too) on the same configuration, and
// between them directord with reuse_connection added to every check
// (directord+reuse: a probe reuses the last passing probe's connection,
// HTTP keep-alive, where keepalived opens one per probe), at each
// size of BENCH_SIZES ("VSxRS ...", default "4x5 5x10 10x10"; make
// bench-lvs sets its own): VS x RS
// real servers, each checked by SSL_GET every 2 s against a local HTTPS
// server, in the guest. For each: CPU seconds per second and memory over
// a 20 s window after every real server was checked once (the daemon's
// own, as the guest counts it, and the whole guest's, by what a spinner
// of lowest priority was left: spinner_linux_test.go), the checks
// served per second, and how long 20 real servers whose /healthz turns to
// 500 take to reach weight 0 in the kernel (bound: delay_loop 2 s +
// delay_before_retry 1 s) and to come back (bound: 2 s).
func BenchmarkChecksBesideKeepalived(b *testing.B) {
	bin := binary(b)
	sizes := os.Getenv("BENCH_SIZES")
	if sizes == "" {
		sizes = "4x5 5x10 10x10"
	}
	for _, size := range strings.Fields(sizes) {
		var nVS, nRS int
		if _, err := fmt.Sscanf(size, "%dx%d", &nVS, &nRS); err != nil || nVS < 1 || nRS < 1 {
			b.Fatalf("BENCH_SIZES: %q is not VSxRS", size)
		}
		conf := testconf.Checked(nVS, nRS)
		for _, who := range benchWho() {
			b.Run(fmt.Sprintf("rs=%d/%s", nVS*nRS, who), func(b *testing.B) {
				for b.Loop() {
					measureChecks(b, who, bin, conf, nVS, nRS)
				}
			})
		}
	}
}

func measureChecks(b *testing.B, who, bin, conf string, nVS, nRS int) {
	// The farm holds a connection per probe in flight, and the daemons
	// (children) a descriptor per probe: the guest's default of 1,024 is
	// too few for thousands of real servers.
	lim := syscall.Rlimit{Cur: 1 << 16, Max: 1 << 16}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		b.Fatal(err)
	}
	s := &nstest.Scope{TB: b}
	defer s.Close()
	ns := nstest.New(s, name(b, "ck"))
	f := newFarm(b, s, ns)
	sp := startSpinner(b, s)
	dir := s.TempDir()
	file := filepath.Join(dir, "keepalived.conf")
	if who == "directord+reuse" {
		// The same checks, each keeping its connection (a directord
		// extension, which keepalived does not read).
		conf = strings.ReplaceAll(conf, "connect_timeout 2\n", "connect_timeout 2\n            reuse_connection "+reuseAge+"\n")
		if !strings.Contains(conf, "reuse_connection") {
			b.Fatal("no checker to give reuse_connection")
		}
	}
	if err := os.WriteFile(file, []byte(conf), 0o644); err != nil {
		b.Fatal(err)
	}
	argv := []string{bin, "-C", "-n", "-l", "-f", file}
	if who == "keepalived" {
		argv = []string{"keepalived", "-C", "-n", "-l", "-f", file,
			"-p", filepath.Join(dir, "k.pid"), "-c", filepath.Join(dir, "c.pid")}
	}
	// BENCH_WRAP runs each daemon under another program, strace -f -c
	// say, to see where its time goes; {who} in it is the daemon's name.
	if w := os.Getenv("BENCH_WRAP"); w != "" {
		argv = append(strings.Fields(strings.ReplaceAll(w, "{who}", who)), argv...)
	}
	p := nstest.Start(s, ns, argv...)
	pid := p.Cmd.Process.Pid
	total := nVS * nRS
	// Every real server checked once (or a minute passed).
	deadline := time.Now().Add(time.Minute)
	for f.served.Load() < int64(total) && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	c0, n0, s0, t0 := cpu(pid), f.served.Load(), sp.n.Load(), time.Now()
	time.Sleep(20 * time.Second)
	c1, n1, s1, t1 := cpu(pid), f.served.Load(), sp.n.Load(), time.Now()
	win := t1.Sub(t0).Seconds()
	// The whole guest's CPU, by what the spinner got: the daemon's, the
	// HTTPS server's and the kernel's work for both.
	guest := sp.busy(b, s1-s0, t1.Sub(t0))
	b.ReportMetric(guest, "guest-cpu-s/s")
	if n1 > n0 {
		b.ReportMetric(guest*win*1000/float64(n1-n0), "guest-cpu-ms/check")
	}
	b.ReportMetric((c1-c0).Seconds()/win, "cpu-s/s")
	b.ReportMetric(float64(n1-n0)/win, "checks/s")
	b.ReportMetric(float64(total)/2, "wanted-checks/s")
	if n1 > n0 {
		b.ReportMetric((c1-c0).Seconds()*1000/float64(n1-n0), "cpu-ms/check")
	}
	b.ReportMetric(rss(pid), "rss-MB")

	// Transitions: 20 real servers, one per virtual server spread over the
	// table, fail and come back; their weights are read from the kernel.
	k, err := ipvs.Dial(&ipvs.Options{NetNS: int(ns.NS)})
	if err != nil {
		b.Fatal(err)
	}
	defer k.Close()
	type target struct {
		svc ipvs.ServiceKey
		rs  netip.Addr
	}
	var targets []target
	for i := range 20 {
		v := i * nVS / 20
		targets = append(targets, target{
			svc: ipvs.AddrKey(ipvs.TCP, netip.MustParseAddrPort(testconf.CheckedVS(v)+":443")),
			rs:  netip.MustParseAddr(testconf.CheckedRS(v*nRS + i%nRS)),
		})
	}
	weight := func(t target) int32 {
		ds, err := k.Destinations(t.svc)
		if err != nil {
			return -1
		}
		for _, d := range ds {
			if d.Addr == t.rs {
				return d.Weight
			}
		}
		return -1
	}
	watch := func(want int32) (worst time.Duration, missed int) {
		start := time.Now()
		seen := make([]bool, len(targets))
		for time.Since(start) < 30*time.Second {
			all := true
			for i, t := range targets {
				if !seen[i] && weight(t) == want {
					seen[i] = true
					worst = max(worst, time.Since(start))
				}
				all = all && seen[i]
			}
			if all {
				return worst, 0
			}
			time.Sleep(100 * time.Millisecond)
		}
		for _, ok := range seen {
			if !ok {
				missed++
			}
		}
		return worst, missed
	}
	for _, t := range targets {
		f.failing.Store(t.rs, true)
	}
	down, missedDown := watch(0)
	for _, t := range targets {
		f.failing.Delete(t.rs)
	}
	up, missedUp := watch(1)
	b.ReportMetric(down.Seconds(), "down-worst-s")
	b.ReportMetric(up.Seconds(), "up-worst-s")
	b.ReportMetric(float64(missedDown+missedUp), "missed")
	p.Stop(30 * time.Second)
	// The spinner's idle rate again, the daemon stopped: a calibration
	// that moved says the host's own load moved under the window.
	b.ReportMetric(sp.idle, "spinner-idle-before")
	b.ReportMetric(sp.rate(b, 3*time.Second), "spinner-idle-after")
}
