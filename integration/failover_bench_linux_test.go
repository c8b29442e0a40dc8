package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/directord/directord/internal/nstest"
)

// BenchmarkFailover measures, for a backup run by directord and one run by
// keepalived in the same run, the time from the master's last advert to
// the backup's first gratuitous ARP for the VIP: after SIGKILL of the
// master (bound Master_Down_Interval) and after SIGTERM (its last advert
// is the priority 0 one; bound Skew_Time), VRRPv2 at 1 s and VRRPv3 at
// 100 ms. The master is keepalived in every case, so that
// only the backup differs. Run with -benchtime Nx; it reports the median.
func BenchmarkFailover(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root for network namespaces")
	}
	type proto struct {
		name     string
		version  int
		interval string
		down     time.Duration // Master_Down_Interval of the backup (priority 100)
		skew     time.Duration
	}
	protos := []proto{
		{"v2-1s", 2, "1", 3*time.Second + 156*time.Second/256, 156 * time.Second / 256},
		{"v3-100ms", 3, "0.1", 300*time.Millisecond + 156*100*time.Millisecond/256, 156 * 100 * time.Millisecond / 256},
	}
	for _, p := range protos {
		for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
			for _, master := range []string{"keepalived", "directord"} {
				for _, backup := range []string{"directord", "keepalived"} {
					if master == "directord" && sig == syscall.SIGTERM {
						continue // the stop's hand-over is the same as keepalived's: TestDirectordBesideKeepalived
					}
					name := fmt.Sprintf("%s/%s/master=%s/backup=%s", p.name, map[syscall.Signal]string{syscall.SIGKILL: "kill", syscall.SIGTERM: "stop"}[sig], master, backup)
					b.Run(name, func(b *testing.B) {
						var takes []time.Duration
						for i := 0; i < b.N; i++ {
							takes = append(takes, failoverOnce(b, p.version, p.interval, sig, master, backup))
						}
						sort.Slice(takes, func(i, j int) bool { return takes[i] < takes[j] })
						bound := p.down
						if sig == syscall.SIGTERM || master == "directord" {
							// directord's guardian speaks for a killed daemon.
							bound = p.skew
						}
						b.ReportMetric(float64(takes[len(takes)/2].Microseconds())/1000, "ms-median")
						b.ReportMetric(float64(bound.Microseconds())/1000, "ms-bound")
						b.ReportMetric(0, "ns/op")
					})
				}
			}
		}
	}
}

func failoverOnce(b *testing.B, version int, interval string, sig syscall.Signal, masterIs, backup string) time.Duration {
	tb := &nstest.Scope{TB: b}
	defer tb.Close()
	a := nstest.New(tb, "dd-fo-a")
	c := nstest.New(tb, "dd-fo-b")
	nstest.Link(tb, a, c, "dda", "ddb", "192.0.2.1/24", "192.0.2.2/24")
	arps := nstest.WatchARP(tb, a, "dda")
	adverts := nstest.WatchVRRP(tb, c, "ddb") // as the backup receives them
	var master *nstest.Process
	if masterIs == "directord" {
		file := filepath.Join(tb.TempDir(), "m.conf")
		if err := os.WriteFile(file, []byte(nstest.Instance("dda", 150, version, interval, "192.0.2.100/24", "")), 0o644); err != nil {
			b.Fatal(err)
		}
		master = nstest.Start(tb, a, binary, "-n", "-l", "-f", file)
	} else {
		master = nstest.Keepalived(tb, a, nstest.Instance("dda", 150, version, interval, "192.0.2.100/24", ""))
	}
	if backup == "directord" {
		file := filepath.Join(tb.TempDir(), "d.conf")
		if err := os.WriteFile(file, []byte(nstest.Instance("ddb", 100, version, interval, "192.0.2.100/24", "")), 0o644); err != nil {
			b.Fatal(err)
		}
		nstest.Start(tb, c, binary, "-n", "-l", "-f", file)
	} else {
		nstest.Keepalived(tb, c, nstest.Instance("ddb", 100, version, interval, "192.0.2.100/24", ""))
	}
	nstest.WaitFor(tb, 10*time.Second, "the master", func() bool {
		return a.HasAddr(tb, "dda", "192.0.2.100")
	})
	ivl, _ := time.ParseDuration(interval + "s")
	time.Sleep(3 * ivl) // the backup has heard the master
	end := time.Now()
	master.Signal(sig)
	nstest.WaitFor(tb, 10*time.Second, "the backup's gratuitous ARP", func() bool {
		return arps.Count("192.0.2.100", end) > 0
	})
	garp := arps.First("192.0.2.100", end)
	// The master's last advert: before the kill, or its priority 0 one.
	last := adverts.Last("192.0.2.1", garp)
	if last.IsZero() {
		b.Fatal("no advert from the master seen")
	}
	return garp.Sub(last)
}
