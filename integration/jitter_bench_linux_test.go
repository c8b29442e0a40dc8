package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"testing"
	"time"

	"github.com/directord/directord/internal/nstest"
)

// BenchmarkAdvertInterval measures how regular a master's adverts are
// (VRRPv3, advert_int 100 ms) while every core is kept busy, for directord
// (by default at nice -15, and with vrrp_rt_priority 1) and for keepalived
// in the same run: the 99th
// percentile of the gap between adverts, as its excess over 100 ms. A
// master that falls behind loses its VIP to a false failover.
func BenchmarkAdvertInterval(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root for network namespaces")
	}
	for _, who := range []string{"directord", "directord-rt", "keepalived"} {
		b.Run("master="+who, func(b *testing.B) {
			var p99s []time.Duration
			for i := 0; i < b.N; i++ {
				p99s = append(p99s, advertGapP99(b, who))
			}
			sort.Slice(p99s, func(i, j int) bool { return p99s[i] < p99s[j] })
			b.ReportMetric(float64(p99s[len(p99s)/2].Microseconds())/1000, "ms-p99-over-100ms")
			b.ReportMetric(0, "ns/op")
		})
	}
}

func advertGapP99(b *testing.B, who string) time.Duration {
	tb := &nstest.Scope{TB: b}
	defer tb.Close()
	a := nstest.New(tb, "dd-jit-a")
	c := nstest.New(tb, "dd-jit-b")
	nstest.Link(tb, a, c, "dda", "ddb", "192.0.2.1/24", "192.0.2.2/24")
	adverts := nstest.WatchVRRP(tb, c, "ddb")
	text := nstest.Instance("dda", 150, 3, "0.1", "192.0.2.100/24", "")
	if who == "directord-rt" {
		// keepalived's vrrp_rt_priority: SCHED_RR, priority 1.
		text = "global_defs {\n    vrrp_rt_priority 1\n}\n" + text
	}
	if who != "keepalived" {
		file := filepath.Join(tb.TempDir(), "d.conf")
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
		nstest.Start(tb, a, binary, "-n", "-l", "-f", file)
	} else {
		nstest.Keepalived(tb, a, text)
	}
	nstest.WaitFor(tb, 10*time.Second, "master", func() bool { return a.HasAddr(tb, "dda", "192.0.2.100") })
	// Every core busy for 20 s (200 adverts: a 99th percentile that is not
	// just the largest gap), with processes of their own.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := 0; i < runtime.NumCPU(); i++ {
		burn := exec.CommandContext(ctx, "/bin/sh", "-c", "while :; do :; done")
		if err := burn.Start(); err != nil {
			b.Fatal(err)
		}
		defer burn.Wait()
	}
	start := time.Now()
	<-ctx.Done()
	return adverts.GapP99(b, "192.0.2.1", start, 100*time.Millisecond)
}
