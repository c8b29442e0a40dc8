package healthcheck

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/directord/directord/internal/heapgoal"
	"github.com/directord/directord/internal/testcert"
)

// farmEnv makes the test binary an HTTPS server on loopback instead of
// running tests (see serveFarm): BenchmarkChecks10k's checker then has
// its process's CPU to itself.
const farmEnv = "DIRECTORD_TEST_FARM"

func TestMain(m *testing.M) {
	if os.Getenv(farmEnv) != "" {
		if err := serveFarm(); err != nil {
			fmt.Fprintln(os.Stderr, "farm:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// serveFarm serves /healthz over HTTPS (ECDSA P-256, X25519) on
// 127.0.0.1, prints its port and serves until its standard input closes.
func serveFarm() error {
	cert, err := testcert.Server("farm.test")
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:  http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") }),
		ErrorLog: log.New(io.Discard, "", 0),
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert},
			CurvePreferences: []tls.CurveID{tls.X25519}},
	}
	go srv.ServeTLS(ln, "", "")
	fmt.Println(ln.Addr().(*net.TCPAddr).Port)
	io.Copy(io.Discard, os.Stdin)
	return nil
}

// BenchmarkChecks10k runs 10,000 SSL_GET checks every 2 s (5,000 probes a
// second wanted) on the host, against an HTTPS server in a process of its
// own, and reports the checker's CPU (this process), probes per second,
// CPU per probe and memory over 20 s. keepalived's checker cannot run
// here (it needs IPVS): this is directord alone, on a real kernel, where
// the guest's benchmark cannot go.
func BenchmarkChecks10k(b *testing.B) { checks10k(b, 0) }

// BenchmarkChecks10kReuse is BenchmarkChecks10k with reuse_connection 60
// (a directord extension): each check keeps its connection.
func BenchmarkChecks10kReuse(b *testing.B) { checks10k(b, time.Minute) }

func checks10k(b *testing.B, reuse time.Duration) {
	farm := exec.Command(os.Args[0])
	farm.Env = append(os.Environ(), farmEnv+"=1")
	stdin, err := farm.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := farm.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := farm.Start(); err != nil {
		b.Fatal(err)
	}
	defer farm.Wait()
	defer stdin.Close()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatal(err)
	}
	port, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		b.Fatalf("farm: %q", line)
	}
	// The configuration as the daemon reads it, from text: 10,000 real
	// servers whose SSL_GET checkers connect to the farm (connect_ip),
	// so that they share their settings as a parsed file's do.
	reuseLine := ""
	if reuse > 0 {
		reuseLine = fmt.Sprintf("            reuse_connection %d\n", int(reuse/time.Second))
	}
	var text strings.Builder
	for v := range 100 {
		fmt.Fprintf(&text, "virtual_server 10.1.0.%d 443 {\n    lb_algo rr\n    lb_kind DR\n    protocol TCP\n", v)
		for r := range 100 {
			fmt.Fprintf(&text, "    real_server 10.2.%d.%d 443 {\n        weight 1\n        SSL_GET {\n            url {\n                path /healthz\n                status_code 200\n            }\n"+
				"            connect_ip 127.0.0.1\n            connect_port %d\n            connect_timeout 2\n            retry 1\n            delay_loop 2\n            delay_before_retry 1\n%s        }\n    }\n", v, r, port, reuseLine)
		}
		text.WriteString("}\n")
	}
	cfg := parse(b, text.String())
	if heapgoal.Wanted(os.LookupEnv) {
		// The collector as the daemon sets it (cmd/directord); GOGC in
		// the environment measures another setting.
		p := heapgoal.New()
		p.Start()
		defer func() { p.Stop(); debug.SetGCPercent(100) }()
	}
	lim := syscall.Rlimit{Cur: 1 << 16, Max: 1 << 16}
	syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	for b.Loop() {
		r, err := New(cfg, func(Event) {}, nil)
		if err != nil {
			b.Fatal(err)
		}
		var probes, failed atomic.Int64
		r.OnResult = func(_ *Check, res Result) {
			probes.Add(1)
			if res.Outcome != Up {
				failed.Add(1)
			}
		}
		ctx, cancel := context.WithCancel(b.Context())
		done := make(chan struct{})
		go func() { r.Run(ctx); close(done) }()
		// Every check probed once (the first probes spread over 2 s).
		for deadline := time.Now().Add(time.Minute); probes.Load() < 10000 && time.Now().Before(deadline); {
			time.Sleep(100 * time.Millisecond)
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		a0, g0 := ms.TotalAlloc, ms.NumGC
		if f := os.Getenv("DIRECTORD_HEAPPROFILE"); f != "" {
			// The base of the window's allocations (go tool pprof -base).
			if out, err := os.Create(f + ".base"); err == nil {
				pprof.WriteHeapProfile(out)
				out.Close()
			}
		}
		c0, n0, f0, t0 := selfCPU(), probes.Load(), failed.Load(), time.Now()
		time.Sleep(20 * time.Second)
		c1, n1, f1, t1 := selfCPU(), probes.Load(), failed.Load(), time.Now()
		rss, files := selfRSS(), selfStatusMB("RssFile:")
		runtime.ReadMemStats(&ms)
		a1, g1 := ms.TotalAlloc, ms.NumGC
		peak := float64(ms.HeapInuse) / (1 << 20)
		runtime.GC()
		runtime.ReadMemStats(&ms)
		live, stacks := float64(ms.HeapAlloc)/(1<<20), float64(ms.StackInuse)/(1<<20)
		if f := os.Getenv("DIRECTORD_HEAPPROFILE"); f != "" {
			// What the checks hold, for a look with go tool pprof.
			runtime.GC()
			if out, err := os.Create(f); err == nil {
				pprof.WriteHeapProfile(out)
				out.Close()
			}
		}
		cancel()
		<-done
		win := t1.Sub(t0).Seconds()
		b.ReportMetric((c1-c0).Seconds()/win, "cpu-s/s")
		b.ReportMetric(float64(n1-n0)/win, "checks/s")
		b.ReportMetric(float64(f1-f0)/win, "failed/s")
		if n1 > n0 {
			b.ReportMetric((c1-c0).Seconds()*1e3/float64(n1-n0), "cpu-ms/check")
			// The garbage a check makes, and the collections it costs:
			// the heap grows by the one until the other.
			b.ReportMetric(float64(a1-a0)/float64(n1-n0), "alloc-B/check")
		}
		b.ReportMetric(float64(g1-g0)/win, "gc/s")
		b.ReportMetric(rss, "rss-MB")
		b.ReportMetric(files, "rss-file-MB")
		b.ReportMetric(live, "live-MB")
		b.ReportMetric(peak, "heap-MB")
		b.ReportMetric(stacks, "stack-MB")
	}
}

// selfCPU is this process's CPU time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// selfRSS is this process's resident memory, in MB.
func selfRSS() float64 { return selfStatusMB("VmRSS:") }

// selfStatusMB is field (VmRSS:, RssFile:) of /proc/self/status, in MB.
func selfStatusMB(field string) float64 {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field); ok {
			kb, _ := strconv.ParseFloat(strings.Fields(v)[0], 64)
			return kb / 1024
		}
	}
	return 0
}
