package lvs

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/directord/directord/internal/nstest"
	"github.com/directord/directord/internal/testconf"
)

// BenchmarkAdvertsUnderChecks measures how regular a master's adverts are
// (VRRPv3, advert_int 100 ms) while the same daemon runs health checks:
// directord (one process) and keepalived (its VRRP and checker processes)
// in turn, each with BENCH_ADV_VS x BENCH_ADV_RS real servers (default
// 4 x 5) checked by SSL_GET every 2 s against a local HTTPS server, in the
// guest (keepalived's checker needs IPVS). The figure is the 99th
// percentile of the gap between adverts seen by the peer over 20 s, less
// the 100 ms interval, the median of BENCH_ADV_ROUNDS (3) rounds; a master
// that falls behind loses its VIP to a false failover.
func BenchmarkAdvertsUnderChecks(b *testing.B) {
	bin := binary(b)
	nVS, nRS := envInt("BENCH_ADV_VS", 4), envInt("BENCH_ADV_RS", 5)
	for _, who := range []string{"directord", "keepalived"} {
		b.Run("master="+who, func(b *testing.B) {
			for b.Loop() {
				// The guest's timing is noisy: the median of rounds.
				var p99s []time.Duration
				for range envInt("BENCH_ADV_ROUNDS", 3) {
					p99s = append(p99s, advertsUnderChecks(b, who, bin, nVS, nRS))
				}
				sort.Slice(p99s, func(i, j int) bool { return p99s[i] < p99s[j] })
				b.ReportMetric(float64(p99s[len(p99s)/2].Microseconds())/1000, "ms-p99-over-100ms")
			}
		})
	}
}

func advertsUnderChecks(b *testing.B, who, bin string, nVS, nRS int) time.Duration {
	s := &nstest.Scope{TB: b}
	defer s.Close()
	a := nstest.New(s, name(b, "ava"))
	c := nstest.New(s, name(b, "avb"))
	nstest.Link(s, a, c, "dda", "ddb", "192.0.2.1/24", "192.0.2.2/24")
	adverts := nstest.WatchVRRP(s, c, "ddb")
	f := newFarm(b, s, a)
	dir := s.TempDir()
	file := filepath.Join(dir, "keepalived.conf")
	conf := nstest.Instance("dda", 150, 3, "0.1", "192.0.2.100/24", "") + testconf.Checked(nVS, nRS)
	if err := os.WriteFile(file, []byte(conf), 0o644); err != nil {
		b.Fatal(err)
	}
	argv := []string{bin, "-n", "-l", "-f", file}
	if who == "keepalived" {
		argv = []string{"keepalived", "-n", "-l", "-D", "-f", file, "-p", filepath.Join(dir, "k.pid"),
			"-r", filepath.Join(dir, "v.pid"), "-c", filepath.Join(dir, "c.pid")}
	}
	// BENCH_WRAP: as in BenchmarkChecksBesideKeepalived.
	if w := os.Getenv("BENCH_WRAP"); w != "" {
		argv = append(strings.Fields(strings.ReplaceAll(w, "{who}", who)), argv...)
	}
	p := nstest.Start(s, a, argv...)
	defer p.Stop(30 * time.Second)
	nstest.WaitFor(s, 20*time.Second, "master", func() bool { return a.HasAddr(s, "dda", "192.0.2.100") })
	// Every real server checked once: the checks are at their pace.
	nstest.WaitFor(s, time.Minute, "every real server checked", func() bool { return f.served.Load() >= int64(nVS*nRS) })
	start := time.Now()
	time.Sleep(20 * time.Second) // 200 adverts: a 99th percentile that is not just the largest gap
	return adverts.GapP99(b, "192.0.2.1", start, 100*time.Millisecond)
}
