package lab

import (
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/directord/directord/config"
)

var update = flag.Bool("update", false, "write docs/examples/lab.conf from the template")

const example = "../../docs/examples/lab.conf"

// TestExampleIsTheLabs: docs/examples/lab.conf is the configuration the
// lab runs (go test -run TestExampleIsTheLabs -update rewrites it).
func TestExampleIsTheLabs(t *testing.T) {
	want := Config(RealAddrs)
	if *update {
		if err := os.WriteFile(example, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, string(got)); d != "" {
		t.Errorf("%s is not the lab's configuration (-want +got; -update rewrites it):\n%s", example, d)
	}
}

// TestConfigSaysWhatTheLabAssumes: the file is clean for both directors
// (no error, no warning), and the timing the tests assert is the file's.
func TestConfigSaysWhatTheLabAssumes(t *testing.T) {
	for i, id := range []string{"lb1", "lb2"} {
		t.Run(id, func(t *testing.T) {
			cfg, diags := config.Parse("lab.conf", Config(RealAddrs), nil, config.Options{ConfigID: id, Hostname: id})
			for _, d := range diags {
				t.Errorf("%s", d)
			}
			if len(cfg.Instances) != 1 || len(cfg.VirtualServers) != 1 {
				t.Fatalf("%d instances, %d virtual servers", len(cfg.Instances), len(cfg.VirtualServers))
			}
			in, vs := cfg.Instances[0], cfg.VirtualServers[0]
			if in.Priority != Priorities[i] || in.AdvertInt != AdvertInt || !in.Preempt {
				t.Errorf("priority %d, advert_int %v, preempt %v; the lab assumes %d, %v, true", in.Priority, in.AdvertInt, in.Preempt, Priorities[i], AdvertInt)
			}
			if sd := cfg.Global.SyncDaemon; sd == nil || sd.Instance != in.Name || sd.Interface != "eth0" {
				t.Errorf("lvs_sync_daemon %+v", sd)
			}
			if vs.Addr != ServiceAddress || vs.Scheduler != "rr" || vs.Method.Kind != config.DR || len(vs.RealServers) != len(RealAddrs) {
				t.Fatalf("virtual server %v %s %s with %d real servers", vs.Addr, vs.Scheduler, vs.Method.Kind, len(vs.RealServers))
			}
			for j, rs := range vs.RealServers {
				if rs.Addr != netip.AddrPortFrom(RealAddrs[j], ServicePort) || len(rs.Checkers) != 1 {
					t.Fatalf("real server %v with %d checkers", rs.Addr, len(rs.Checkers))
				}
				c := rs.Checkers[0]
				bound := c.DelayLoop + time.Duration(c.Retry+1)*c.ConnectTimeout + time.Duration(c.Retry)*c.DelayBeforeRetry
				if c.Type != config.CheckSSLGet || bound != DetectionBound {
					t.Errorf("%s checker with a detection bound of %v; the lab assumes SSL_GET and %v", c.Type, bound, DetectionBound)
				}
			}
		})
	}
	if want := 3*time.Second + 609375*time.Microsecond; MasterDownInterval != want {
		t.Errorf("Master_Down_Interval %v, want %v", MasterDownInterval, want)
	}
}

// TestParseConns reads the kernel's connection table.
func TestParseConns(t *testing.T) {
	text := `Pro FromIP   FPrt ToIP     TPrt DestIP   DPrt State       Expires PEName PEData
TCP 0A020002 C350 0A010064 01BB 0A010015 01BB ESTABLISHED     899
TCP 0A020002 8AE1 0A010064 01BB 0A010017 01BB TIME_WAIT         1
`
	got, err := parseConns(text)
	if err != nil {
		t.Fatal(err)
	}
	ap := netip.MustParseAddrPort
	want := []ConnEntry{
		{Client: ap("10.2.0.2:50000"), Virtual: ap("10.1.0.100:443"), Real: ap("10.1.0.21:443"), State: "ESTABLISHED"},
		{Client: ap("10.2.0.2:35553"), Virtual: ap("10.1.0.100:443"), Real: ap("10.1.0.23:443"), State: "TIME_WAIT"},
	}
	if d := cmp.Diff(want, got, cmp.Comparer(func(a, b netip.AddrPort) bool { return a == b })); d != "" {
		t.Errorf("-want +got:\n%s", d)
	}
	if _, err := parseConns("Pro FromIP\nTCP 0A02 C350\n"); err == nil {
		t.Error("a short line was taken")
	}
}

// TestCount tallies results by window.
func TestCount(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	rs := []Result{
		{Start: at(0), End: at(1), Server: "rs1"},
		{Start: at(1), End: at(4), Err: os.ErrDeadlineExceeded},
		{Start: at(2), End: at(3), Server: "rs2"},
		{Start: at(3), End: at(5), Server: "rs1"},
	}
	for _, c := range []struct {
		name     string
		from, to time.Time
		want     string
	}{
		{"all", time.Time{}, time.Time{}, "4 requests, 1 failed: rs1 2, rs2 1"},
		{"from 1 s", at(1), time.Time{}, "3 requests, 1 failed: rs1 1, rs2 1"},
		{"1 s to 3 s", at(1), at(3), "2 requests, 1 failed: rs2 1"},
		{"none", at(9), time.Time{}, "0 requests, 0 failed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Count(rs, StartedIn(c.from, c.to)).String(); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
	if got := Count(rs, EndedIn(at(3), at(5))).String(); got != "2 requests, 1 failed: rs2 1" {
		t.Errorf("ended in [3 s, 5 s): got %q", got)
	}
	if got := Count(rs, nil).Slowest; got != 2*time.Second {
		t.Errorf("slowest %v, want 2s", got)
	}
	rs[1].Connected, rs[1].Port, rs[1].Withheld = at(1).Add(time.Millisecond), 40000, 1500*time.Millisecond
	if got, want := Count(rs, nil).Describe(), "port 40000 connected after 1ms, ended after 3s, the machine withholding 1.5s of it: i/o timeout"; !strings.Contains(got, want) {
		t.Errorf("the failure described as %q, want %q in it", got, want)
	}
	// Those not starved come first, the least withheld first, whatever
	// the order they failed in.
	mixed := []Result{
		{Start: at(0), End: at(11), Err: os.ErrDeadlineExceeded, Withheld: 11 * time.Second},
		{Start: at(1), End: at(11), Err: os.ErrDeadlineExceeded, Withheld: 2 * time.Second},
		{Start: at(2), End: at(12), Err: os.ErrDeadlineExceeded, Withheld: time.Second},
	}
	got := Count(mixed, nil).Describe()
	one, two, starved := strings.Index(got, "withholding 1s"), strings.Index(got, "withholding 2s"), strings.Index(got, "STARVED")
	if !strings.HasPrefix(got, "\n\tFAILED begun") || one < 0 || two < one || starved < two {
		t.Errorf("failed by what was withheld, then starved: %q", got)
	}
	if got := Count(rs, StartedIn(at(2), time.Time{})).Describe(); got != "" {
		t.Errorf("no failure described as %q", got)
	}
}

// TestStarvedRequests: a failed request is the machine's (starved) only
// when the machine withheld more than RequestTimeout of its own window,
// or all of the timeout and of the window but less than Unstarved;
// every other failure is counted as failed, however much was withheld,
// and an answered request is answered whatever the meter says.
func TestStarvedRequests(t *testing.T) {
	t0 := time.Unix(1000, 0)
	end := t0.Add(RequestTimeout + 2*time.Second)
	timeout := fmt.Errorf("TLS handshake: %w", os.ErrDeadlineExceeded)
	for _, c := range []struct {
		name    string
		r       Result
		starved bool
		want    string
	}{
		{"answered, unstarved", Result{Start: t0, End: t0.Add(time.Second), Server: "rs1"}, false,
			"1 requests, 0 failed: rs1 1"},
		{"answered though starved", Result{Start: t0, End: end, Server: "rs1", Withheld: RequestTimeout + time.Second}, false,
			"1 requests, 0 failed: rs1 1"},
		{"failed, nothing withheld", Result{Start: t0, End: end, Err: timeout}, false,
			"1 requests, 1 failed"},
		{"failed, withheld just the timeout", Result{Start: t0, End: end, Err: timeout, Withheld: RequestTimeout}, false,
			"1 requests, 1 failed"},
		{"failed, withheld most of it", Result{Start: t0, End: end, Err: timeout, Withheld: RequestTimeout * 9 / 10}, false,
			"1 requests, 1 failed"},
		{"failed, withheld beyond the timeout", Result{Start: t0, End: end, Err: timeout, Withheld: RequestTimeout + time.Millisecond}, true,
			"1 requests, 0 failed, 1 starved"},
		{"failed at its deadline, all but 80 ms withheld", Result{Start: t0, End: t0.Add(RequestTimeout + 80*time.Millisecond), Err: timeout, Withheld: RequestTimeout}, true,
			"1 requests, 0 failed, 1 starved"},
		{"failed at its deadline, given just the second", Result{Start: t0, End: t0.Add(RequestTimeout), Err: timeout, Withheld: RequestTimeout - Unstarved}, false,
			"1 requests, 1 failed"},
		{"failed, withheld 9.5 s of a 12 s window", Result{Start: t0, End: end, Err: timeout, Withheld: RequestTimeout - Unstarved/2}, false,
			"1 requests, 1 failed"},
		{"refused at once, nothing withheld", Result{Start: t0, End: t0.Add(time.Millisecond), Err: syscall.ECONNREFUSED}, false,
			"1 requests, 1 failed"},
		{"refused, withheld beyond the timeout", Result{Start: t0, End: end, Err: syscall.ECONNREFUSED, Withheld: RequestTimeout + time.Second}, true,
			"1 requests, 0 failed, 1 starved"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.r.Starved(); got != c.starved {
				t.Errorf("Starved() = %v, want %v", got, c.starved)
			}
			tl := Count([]Result{c.r}, nil)
			if got := tl.String(); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
			if c.r.Err != nil && (len(tl.Failures) != 1 || !strings.Contains(tl.Describe(), c.r.Err.Error())) {
				t.Errorf("the failure is not described: %q", tl.Describe())
			}
			if c.r.Err != nil && !c.starved && !errors.Is(tl.FirstError, c.r.Err) {
				t.Errorf("first error %v, want %v", tl.FirstError, c.r.Err)
			}
			if c.starved && tl.FirstError != nil {
				t.Errorf("a starved request is the first error: %v", tl.FirstError)
			}
		})
	}
}

// TestActiveConfigSaysWhatTheLabAssumes: the active-active file is clean
// for all three directors (no error, no warning): no VRRP instance, the
// sync daemons without one (so both run all along), mh on the client's
// port, the VIP announced to the router with BFD.
func TestActiveConfigSaysWhatTheLabAssumes(t *testing.T) {
	for _, id := range []string{"lb1", "lb2", "lb3"} {
		t.Run(id, func(t *testing.T) {
			cfg, diags := config.Parse("active.conf", ActiveConfig(RealAddrs), nil, config.Options{ConfigID: id, Hostname: id})
			for _, d := range diags {
				t.Errorf("%s", d)
			}
			if len(cfg.Instances) != 0 || len(cfg.VirtualServers) != 1 {
				t.Fatalf("%d instances, %d virtual servers", len(cfg.Instances), len(cfg.VirtualServers))
			}
			if sd := cfg.Global.SyncDaemon; sd == nil || sd.Instance != "" || sd.Interface != "eth0" || sd.SyncID != 51 {
				t.Errorf("lvs_sync_daemon %+v, want eth0 without an instance, id 51", sd)
			}
			vs := cfg.VirtualServers[0]
			if vs.Addr != ServiceAddress || vs.Scheduler != "mh" || vs.Method.Kind != config.DR || len(vs.RealServers) != len(RealAddrs) {
				t.Fatalf("virtual server %v %s %s with %d real servers", vs.Addr, vs.Scheduler, vs.Method.Kind, len(vs.RealServers))
			}
			if !slices.Contains(vs.SchedFlags, "mh-port") || !slices.Contains(vs.SchedFlags, "mh-fallback") || vs.Announce == nil {
				t.Errorf("flags %v, announce %+v; the lab assumes mh-port, mh-fallback (TestDigests holds a failed real server at weight 0) and announce bgp", vs.SchedFlags, vs.Announce)
			}
			b := cfg.Global.BGP
			if b == nil || b.LocalAS != DirectorAS || len(b.Neighbors) != 1 {
				t.Fatalf("bgp %+v", b)
			}
			if n := b.Neighbors[0]; n.Addr != RouterInside || n.RemoteAS != RouterAS || n.BFD == nil || n.BFD.Interval != 300*time.Millisecond || n.BFD.Multiplier != 10 {
				t.Errorf("neighbor %+v, BFD %+v", n, n.BFD)
			}
		})
	}
}
