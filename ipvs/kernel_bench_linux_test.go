package ipvs_test

// Benchmarks against the kernel's IPVS, in the User-Mode Linux guest
// (make bench runs them there), each beside ipvsadm doing the same work
// in the same run: timings on these machines mean something only as
// ratios.

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/directord/directord/internal/ipvstest"
	"github.com/directord/directord/internal/nstest"
	"github.com/directord/directord/ipvs"
)

func benchNS(b *testing.B) (*nstest.Scope, *nstest.NS, *ipvs.Client) {
	b.Helper()
	s := &nstest.Scope{TB: b}
	ns := nstest.New(s, fmt.Sprintf("ipvsb-%d-%d", os.Getpid(), nsSeq.Add(1)))
	c, err := ipvs.Dial(&ipvs.Options{NetNS: int(ns.NS)})
	if err != nil {
		b.Fatal(err)
	}
	s.Cleanup(func() { c.Close() })
	return s, ns, c
}

// loadedTable is a namespace whose table holds 1,000 services of 10
// destinations, with the reconciler that put them there.
func loadedTable(b *testing.B) (ipvs.Table, *nstest.NS, *ipvs.Reconciler) {
	b.Helper()
	ipvstest.Require(b)
	ipvstest.RequireRoot(b)
	ipvstest.RequireCommand(b, "ipvsadm")
	want := bigTable(1000, 10)
	s, ns, c := benchNS(b)
	b.Cleanup(s.Close)
	r := ipvs.NewReconciler(c)
	if _, err := r.Sync(want); err != nil {
		b.Fatal(err)
	}
	return want, ns, r
}

// restoreRules is the table as ipvsadm -R reads it.
func restoreRules(t ipvs.Table) string {
	var sb strings.Builder
	for _, k := range t.Keys() {
		vs := t[k]
		ap := netip.AddrPortFrom(k.Addr, k.Port)
		fmt.Fprintf(&sb, "-A -t %s -s %s\n", ap, vs.Scheduler)
		for _, d := range vs.SortedDests() {
			fmt.Fprintf(&sb, "-a -t %s -r %s -g -w %d\n", ap, d.AddrPort(), d.Weight)
		}
	}
	return sb.String()
}

// BenchmarkKernelFullApply programs 1,000 services of 10 DR destinations
// into an empty table, and ipvsadm -R restores the same table into
// another, each round.
func BenchmarkKernelFullApply(b *testing.B) {
	ipvstest.Require(b)
	ipvstest.RequireRoot(b)
	ipvstest.RequireCommand(b, "ipvsadm")
	want := bigTable(1000, 10)
	rules := restoreRules(want)
	var ours, theirs time.Duration
	for b.Loop() {
		b.StopTimer()
		s, _, c := benchNS(b)
		b.StartTimer()
		start := time.Now()
		res, err := ipvs.NewReconciler(c).Sync(want)
		ours += time.Since(start)
		if err != nil || len(res.Ops) != 11000 {
			b.Fatalf("%v, %d ops", err, len(res.Ops))
		}
		b.StopTimer()
		s.Close()

		s, ns, _ := benchNS(b)
		cmd := exec.Command("ip", "netns", "exec", ns.Name, "ipvsadm", "-R")
		cmd.Stdin = strings.NewReader(rules)
		start = time.Now()
		out, err := cmd.CombinedOutput()
		theirs += time.Since(start)
		if err != nil {
			b.Fatalf("ipvsadm -R: %v\n%s", err, out)
		}
		s.Close()
		b.StartTimer()
	}
	b.ReportMetric(ours.Seconds()/float64(b.N), "directord-s/op")
	b.ReportMetric(theirs.Seconds()/float64(b.N), "ipvsadm-R-s/op")
	b.ReportMetric(ours.Seconds()/theirs.Seconds(), "ratio")
}

// BenchmarkKernelOneChange (its ms/change; ns/op also holds the read that
// follows ipvsadm's change) changes one destination's weight in a table of
// 1,000 services of 10 destinations: through SyncServices (what a health
// check's verdict costs: the changed pool's diff and one operation) and
// through Sync (a diff of the whole table). The reference is ipvsadm -e
// making the same change (most of it is starting a program).
func BenchmarkKernelOneChange(b *testing.B) {
	want, ns, r := loadedTable(b)
	key := want.Keys()[500]
	d := want[key].SortedDests()[3]
	i := 0             // across both modes: each change flips the weight
	const changes = 25 // per round, for a steadier figure
	for _, mode := range []string{"SyncServices", "Sync"} {
		b.Run(mode, func(b *testing.B) {
			var ours, theirs time.Duration
			for b.Loop() {
				for range changes {
					i++
					d.Weight = int32(100 + i%2)
					want[key].AddDest(d)
					var res ipvs.Result
					var err error
					start := time.Now()
					if mode == "Sync" {
						res, err = r.Sync(want)
					} else {
						res, err = r.SyncServices(want, []ipvs.ServiceKey{key})
					}
					ours += time.Since(start)
					if err != nil || len(res.Ops) != 1 {
						b.Fatalf("%v, %d ops", err, len(res.Ops))
					}
				}
				start := time.Now()
				out, err := exec.Command("ip", "netns", "exec", ns.Name, "ipvsadm", "-e", "-t",
					netip.AddrPortFrom(key.Addr, key.Port).String(), "-r", d.AddrPort().String(), "-g", "-w", "100").CombinedOutput()
				theirs += time.Since(start)
				if err != nil {
					b.Fatalf("ipvsadm -e: %v\n%s", err, out)
				}
				r.Invalidate() // ipvsadm changed it behind our back
				if _, err := r.Sync(want); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(ours.Seconds()*1e3/float64(b.N*changes), "ms/change")
			b.ReportMetric(theirs.Seconds()*1e3/float64(b.N), "ipvsadm-e-ms/change")
		})
	}
}

// BenchmarkKernelRead is a resync's cost: reading back the whole table
// of 1,000 services of 10 destinations (nothing to change), beside
// ipvsadm -Sn printing it.
func BenchmarkKernelRead(b *testing.B) {
	want, ns, r := loadedTable(b)
	var theirs time.Duration
	for b.Loop() {
		r.Invalidate()
		if res, err := r.Sync(want); err != nil || len(res.Ops) != 0 || !res.Read {
			b.Fatalf("%v, %d ops", err, len(res.Ops))
		}
		b.StopTimer()
		start := time.Now()
		if out, err := exec.Command("ip", "netns", "exec", ns.Name, "ipvsadm", "-Sn").CombinedOutput(); err != nil {
			b.Fatalf("ipvsadm -Sn: %v\n%s", err, out)
		}
		theirs += time.Since(start)
		b.StartTimer()
	}
	b.ReportMetric(theirs.Seconds()*1e3/float64(b.N), "ipvsadm-Sn-ms/op")
}
