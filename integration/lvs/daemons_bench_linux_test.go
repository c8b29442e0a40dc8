package lvs

import (
	"net/netip"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/directord/directord/internal/nstest"
	"github.com/directord/directord/internal/testconf"
	"github.com/directord/directord/ipvs"
)

// BenchmarkDaemonsBesideKeepalived runs directord -C and keepalived -C in
// turn on the same table of virtual servers without checkers, in the
// guest's real IPVS, and measures each daemon's IPVS work end to end:
//
//   - start: from the start of the daemon to the whole table in the
//     kernel (BENCH_TABLE_VS x BENCH_TABLE_RS, default 1,000 x 10);
//   - reload: from SIGHUP with one real server's weight changed in the
//     file to that weight in the kernel, and the CPU the daemon spent on
//     it (its processes, until it is done);
//   - memory: the resident memory of the idle daemon (all its processes)
//     holding BENCH_IDLE_VS x BENCH_IDLE_RS (default 1,000 x 20, the
//     configuration benchmark's 20,000 real servers), once its table is
//     in the kernel and 5 s have passed.
func BenchmarkDaemonsBesideKeepalived(b *testing.B) {
	bin := binary(b)
	tv, tr := envInt("BENCH_TABLE_VS", 1000), envInt("BENCH_TABLE_RS", 10)
	iv, ir := envInt("BENCH_IDLE_VS", 1000), envInt("BENCH_IDLE_RS", 20)
	for _, who := range []string{"directord", "keepalived"} {
		b.Run("table/"+who, func(b *testing.B) {
			for b.Loop() {
				start, reload, cpuReload := tableOnce(b, who, bin, tv, tr)
				b.ReportMetric(start.Seconds(), "start-s")
				b.ReportMetric(reload.Seconds(), "reload-s")
				b.ReportMetric(cpuReload.Seconds(), "reload-cpu-s")
			}
		})
		b.Run("idle/"+who, func(b *testing.B) {
			for b.Loop() {
				b.ReportMetric(idleOnce(b, who, bin, iv, ir), "rss-MB")
			}
		})
	}
}

// daemon starts who (-C, on file) in ns.
func daemon(s *nstest.Scope, ns *nstest.NS, who, bin, file string) *nstest.Process {
	if who == "directord" {
		return nstest.Start(s, ns, bin, "-C", "-n", "-l", "-f", file)
	}
	dir := filepath.Dir(file)
	return nstest.Start(s, ns, "keepalived", "-C", "-n", "-l", "-f", file,
		"-p", filepath.Join(dir, "k.pid"), "-c", filepath.Join(dir, "c.pid"))
}

// waitTable waits until every virtual server of testconf.Table(vs, rs)
// has its rs destinations in the kernel, reading as little as it can (a
// daemon programs a service before its destinations): the number of
// services, then each service's destinations, the last first.
func waitTable(b *testing.B, k *ipvs.Client, vs, rs int, limit time.Duration) {
	deadline := time.Now().Add(limit)
	next := vs - 1
	for next >= 0 {
		if time.Now().After(deadline) {
			b.Fatalf("the table is not in the kernel after %v (%d services left)", limit, next+1)
		}
		svcs, err := k.Services()
		if err != nil || len(svcs) < vs {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		for next >= 0 {
			ds, err := k.Destinations(tableKey(next))
			if err != nil || len(ds) < rs {
				break
			}
			next--
		}
		if next >= 0 {
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func tableKey(v int) ipvs.ServiceKey {
	return ipvs.AddrKey(ipvs.TCP, netip.MustParseAddrPort(testconf.CheckedVS(v)+":443"))
}

// tableScope is a namespace with testconf.Table(vs, rs, false) in a file
// and an IPVS client into the namespace, for one round.
func tableScope(b *testing.B, role string, vs, rs int) (s *nstest.Scope, ns *nstest.NS, file string, k *ipvs.Client) {
	s = &nstest.Scope{TB: b}
	ns = nstest.New(s, name(b, role))
	file = filepath.Join(s.TempDir(), "keepalived.conf")
	if err := os.WriteFile(file, []byte(testconf.Table(vs, rs, false)), 0o644); err != nil {
		s.Close()
		b.Fatal(err)
	}
	k, err := ipvs.Dial(&ipvs.Options{NetNS: int(ns.NS)})
	if err != nil {
		s.Close()
		b.Fatal(err)
	}
	s.Cleanup(func() { k.Close() })
	return s, ns, file, k
}

func tableOnce(b *testing.B, who, bin string, vs, rs int) (start, reload, cpuReload time.Duration) {
	s, ns, file, k := tableScope(b, "tb", vs, rs)
	defer s.Close()
	t0 := time.Now()
	p := daemon(s, ns, who, bin, file)
	waitTable(b, k, vs, rs, 5*time.Minute)
	start = time.Since(t0)

	// One weight changed, then SIGHUP to the daemon (its main process).
	cv, cr := testconf.TableChanged(vs, rs)
	rsAddr := netip.MustParseAddr(testconf.TableRS(cv*rs + cr))
	weight := func() int32 {
		ds, _ := k.Destinations(tableKey(cv))
		for _, d := range ds {
			if d.Addr == rsAddr {
				return d.Weight
			}
		}
		return -1
	}
	time.Sleep(2 * time.Second) // settled: a start's last work is not a reload's
	if err := os.WriteFile(file, []byte(testconf.Table(vs, rs, true)), 0o644); err != nil {
		b.Fatal(err)
	}
	pid := p.Cmd.Process.Pid
	c0, t1 := cpu(pid), time.Now()
	syscall.Kill(pid, syscall.SIGHUP)
	nstest.WaitFor(b, 5*time.Minute, "the changed weight in the kernel", func() bool {
		return weight() == 2
	})
	reload = time.Since(t1)
	// The CPU of the reload: until the daemon is idle again (keepalived
	// goes on after the change reaches the kernel), or 2 minutes.
	prev := cpu(pid)
	for i := 0; i < 240; i++ {
		time.Sleep(500 * time.Millisecond)
		now := cpu(pid)
		if now == prev {
			break
		}
		prev = now
	}
	cpuReload = prev - c0
	p.Stop(2 * time.Minute)
	return start, reload, cpuReload
}

func idleOnce(b *testing.B, who, bin string, vs, rs int) float64 {
	s, ns, file, k := tableScope(b, "id", vs, rs)
	defer s.Close()
	p := daemon(s, ns, who, bin, file)
	waitTable(b, k, vs, rs, 5*time.Minute)
	time.Sleep(5 * time.Second)
	mb := rss(p.Cmd.Process.Pid)
	p.Stop(2 * time.Minute)
	return mb
}
