package bgp

import (
	"net/netip"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/directord/directord/internal/frrtest"
	"github.com/directord/directord/internal/nstest"
)

// BenchmarkFailoverBGP: two directors announce the VIP to FRR with BFD
// (100 ms x 3 on both sides, hold time 9 s); director 0's cable is cut
// at the switch (the router's own link stays up: only BFD can tell), and
// the time is from the cut to the router's kernel changing the route so
// that director 0 is no longer a next hop, taken from the kernel's own
// notification (a netlink route event in the router's namespace, read as
// it arrives), not by polling. make bench puts it beside VRRP's failover
// (integration's BenchmarkFailover) of the same run. The bound is BFD's
// detection time, interval x multiplier, counted from director 0's last
// BFD packet, at most one interval before the cut.
func BenchmarkFailoverBGP(b *testing.B) {
	frrtest.Require(b)
	b.Run("bfd-100ms-x3/cut", func(b *testing.B) {
		var takes []time.Duration
		for i := 0; i < b.N; i++ {
			took, why := bgpCutOnce(b)
			b.Logf("round %d: %s, the router's reason %q", i, took.Round(100*time.Microsecond), why)
			takes = append(takes, took)
		}
		sort.Slice(takes, func(i, j int) bool { return takes[i] < takes[j] })
		b.ReportMetric(float64(takes[len(takes)/2].Microseconds())/1000, "ms-median")
		b.ReportMetric(float64(takes[len(takes)-1].Microseconds())/1000, "ms-max")
		b.ReportMetric(300, "ms-bound")
		b.ReportMetric(0, "ns/op")
	})
}

// bgpCutOnce returns how long the route took, and why the router says
// the session ended.
func bgpCutOnce(b *testing.B) (time.Duration, string) {
	scope := &nstest.Scope{TB: b}
	defer scope.Close()
	l := newLAN(scope, 2, " receive-interval 100\n transmit-interval 100\n detect-multiplier 3")
	d0 := startDirector(scope, l.dirs[0], writeDirectorConf(scope, 0, "1", 9, "100 3", 1))
	d1 := startDirector(scope, l.dirs[1], writeDirectorConf(scope, 1, "1", 9, "100 3", 1))
	d0.waitEstablished()
	d1.waitEstablished()
	l.frr.WaitNextHops(30*time.Second, vip, allDirectors(2)...)
	nstest.WaitFor(scope, 10*time.Second, "BFD up on both sides", func() bool {
		return d0.status().Neighbors[0].BFD == "up" && l.neighbor(scope, directorAddr(0)).BFD.Status == "Up"
	})
	updates := make(chan netlink.RouteUpdate, 64)
	done := make(chan struct{})
	defer close(done)
	if err := netlink.RouteSubscribeWithOptions(updates, done, netlink.RouteSubscribeOptions{Namespace: &l.router.NS}); err != nil {
		b.Fatalf("watch the router's routes: %v", err)
	}
	start := time.Now()
	l.cut(scope, 0)
	timeout := time.After(15 * time.Second)
	for {
		select {
		case u, ok := <-updates:
			if !ok {
				b.Fatal("the router's route events ended")
			}
			at := time.Now()
			if u.Dst == nil || u.Dst.String() != vip.String() {
				continue
			}
			if u.Type == unix.RTM_DELROUTE || !slices.Contains(gateways(u.Route), directorAddr(0)) {
				return at.Sub(start), l.neighbor(scope, directorAddr(0)).LastNotification
			}
		case <-timeout:
			b.Fatalf("the route through director 0 still there 15 s after the cut: %v", l.frr.NextHops(vip))
		}
	}
}

// gateways are a route's next hops.
func gateways(r netlink.Route) []netip.Addr {
	var out []netip.Addr
	if a, ok := netip.AddrFromSlice(r.Gw); ok {
		out = append(out, a.Unmap())
	}
	for _, nh := range r.MultiPath {
		if a, ok := netip.AddrFromSlice(nh.Gw); ok {
			out = append(out, a.Unmap())
		}
	}
	return out
}
