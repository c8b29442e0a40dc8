package vrrp

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/directord/directord/config"
	"github.com/directord/directord/internal/nstest"
)

// reloadNode replaces nd's Node by one for conf as the daemon's reload
// does: the new Node adopts the old one's instances, runs, then the old
// one stops.
func reloadNode(t *testing.T, nd *node, oldCfg *config.Config, conf string) (*node, *config.Config) {
	t.Helper()
	cfg, diags := config.Parse("/test.conf", conf, nil, config.Options{Hostname: nd.ns.Name})
	if diags.HasErrors() {
		t.Fatalf("config: %s", diags.Errors())
	}
	var n *Node
	var err error
	log := slog.New(slog.NewTextHandler(testWriter{t, nd.ns.Name}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	nd.ns.Do(t, func() { n, err = NewNode(cfg, nd.ns.NL, log) })
	if err != nil {
		t.Fatal(err)
	}
	n.Adopt(nd.n, PlanReload(oldCfg, cfg))
	ctx, cancel := context.WithCancel(context.Background())
	next := &node{ns: nd.ns, n: n, cancel: cancel, done: make(chan error, 1)}
	go func() { next.done <- n.Run(ctx) }()
	t.Cleanup(next.stop)
	nd.stop()
	return next, cfg
}

func parseConf(t *testing.T, ns *nstest.NS, conf string) *config.Config {
	t.Helper()
	cfg, diags := config.Parse("/test.conf", conf, nil, config.Options{Hostname: ns.Name})
	if diags.HasErrors() {
		t.Fatalf("config: %s", diags.Errors())
	}
	return cfg
}

func statusOf(t *testing.T, nd *node, name string) InstanceStatus {
	t.Helper()
	st, err := nd.n.Status(context.Background())
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	for _, s := range st {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no instance %s in %+v", name, st)
	return InstanceStatus{}
}

// sampleVIP reads, through netlink every 10 ms until stop is called,
// whether ifn in ns holds addr; count is the samples so far, stop returns
// them and how many lacked it.
func sampleVIP(t *testing.T, ns *nstest.NS, ifn string, addr netip.Addr) (count func() int64, stop func() (samples, missing int)) {
	var wg sync.WaitGroup
	done := make(chan struct{})
	var n, miss int
	var taken atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			ok, err := Has(ns.NL, ifn, addr)
			n++
			if err != nil || !ok {
				miss++
			}
			taken.Add(1)
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return taken.Load, func() (int, int) { close(done); wg.Wait(); return n, miss }
}

const reloadTwoInstances = `global_defs {
    router_id %s
}
vrrp_instance VI_1 {
    interface dda
    virtual_router_id 51
    priority 150
    version 3
    advert_int 0.1
    notify "/bin/sh -c 'echo \"$0 $*\" >> %s' %s"
    virtual_ipaddress {
        192.0.2.100/24
    }
}
vrrp_instance VI_2 {
    interface dda
    virtual_router_id 52
    priority %d
    version 3
    advert_int 0.1
    virtual_ipaddress {
        192.0.2.101/24
    }
}
`

// TestNamespaceReloadKeepsLoneMaster: a lone master (its peer away)
// reloaded with another router_id, another notify script and another
// priority on its other instance makes no transition, and its VIP is on
// the interface at every 10 ms sample taken through the reload; the
// changed instance keeps its state too. keepalived keeps masters at a
// reload (vrrp_complete_init, restore_vrrp_state).
func TestNamespaceReloadKeepsLoneMaster(t *testing.T) {
	nstest.RequireRoot(t)
	a, _ := peers(t, "dd-rl")
	dir := t.TempDir()
	notes := filepath.Join(dir, "notes")
	conf := fmt.Sprintf(reloadTwoInstances, "one", notes, "first", 120)
	na := startNode(t, a, conf)
	cfg := parseConf(t, a, conf)
	nstest.WaitFor(t, 3*time.Second, "a master of both", func() bool {
		return statusOf(t, na, "VI_1").State == Master && statusOf(t, na, "VI_2").State == Master &&
			a.HasAddr(t, "dda", "192.0.2.100")
	})
	before := statusOf(t, na, "VI_1").Transitions
	before2 := statusOf(t, na, "VI_2").Transitions

	count, stop := sampleVIP(t, a, "dda", netip.MustParseAddr("192.0.2.100"))
	// Samples before the reload, and after it.
	nstest.WaitFor(t, 5*time.Second, "20 samples", func() bool { return count() >= 20 })
	conf2 := fmt.Sprintf(reloadTwoInstances, "two", notes, "second", 90)
	na2, _ := reloadNode(t, na, cfg, conf2)
	after := count()
	nstest.WaitFor(t, 5*time.Second, "40 samples after the reload", func() bool { return count() >= after+40 })
	samples, missing := stop()
	if samples < 50 {
		t.Errorf("%d samples, want 50 or more", samples)
	}
	if missing > 0 {
		t.Errorf("the VIP was missing at %d of %d samples through the reload", missing, samples)
	}
	s1, s2 := statusOf(t, na2, "VI_1"), statusOf(t, na2, "VI_2")
	if s1.State != Master || s2.State != Master {
		t.Errorf("after the reload VI_1 %v, VI_2 %v; want both MASTER", s1.State, s2.State)
	}
	if s1.Transitions != before || s2.Transitions != before2 {
		t.Errorf("transitions VI_1 %d -> %d, VI_2 %d -> %d: want none", before, s1.Transitions, before2, s2.Transitions)
	}
	if s2.Priority != 90 {
		t.Errorf("VI_2 priority %d after the reload, want 90", s2.Priority)
	}
	if !a.HasAddr(t, "dda", "192.0.2.101") {
		t.Error("VI_2's VIP is gone")
	}
	na2.stop()
	// The first notify ran for the start, the second only for the stop:
	// nothing in between.
	wantFile(t, notes, "notify calls",
		"first INSTANCE VI_1 BACKUP 150\nfirst INSTANCE VI_1 MASTER 150\nsecond INSTANCE VI_1 STOP 150\n")
}

// TestNamespaceReloadPriorityInPlace: a master's priority changed by a
// reload stays master while it is still the highest, and hands over when
// it is below its preempting peer (the peer preempts, as the protocol
// says); a removed instance's notify is told DELETED with notify_deleted,
// FAULT without.
func TestNamespaceReloadPriorityInPlace(t *testing.T) {
	nstest.RequireRoot(t)
	a, b := peers(t, "dd-rp")
	notes := filepath.Join(t.TempDir(), "notes")
	extra := func(p int) string {
		return fmt.Sprintf(`vrrp_instance VI_9 {
    interface dda
    virtual_router_id 59
    priority 100
    version 3
    advert_int 0.1
    notify_deleted "/bin/sh -c 'echo deleted9 >> %[1]s'"
    notify "/bin/sh -c 'echo \"$0 $*\" >> %[1]s' n"
    virtual_ipaddress {
        192.0.2.109/24
    }
}
vrrp_instance VI_8 {
    interface dda
    virtual_router_id 58
    priority 100
    version 3
    advert_int 0.1
    notify_fault "/bin/sh -c 'echo fault8 >> %[1]s'"
    notify "/bin/sh -c 'echo \"$0 $*\" >> %[1]s' m"
    virtual_ipaddress {
        192.0.2.108/24
    }
}
`, notes) + nstest.Instance("dda", p, 3, "0.1", "192.0.2.100/24", "")
	}
	conf := extra(200)
	na := startNode(t, a, conf)
	cfg := parseConf(t, a, conf)
	nb := startNode(t, b, nstest.Instance("ddb", 150, 3, "0.1", "192.0.2.100/24", ""))
	aMaster := func() bool {
		return statusOf(t, na, "VI_1").State == Master && nb.state(t) == Backup
	}
	nstest.WaitFor(t, 3*time.Second, "a master", func() bool {
		return aMaster() && statusOf(t, na, "VI_9").State == Master && statusOf(t, na, "VI_8").State == Master
	})
	tr := statusOf(t, na, "VI_1").Transitions

	// 200 -> 180: still above b's 150.
	conf = nstest.Instance("dda", 180, 3, "0.1", "192.0.2.100/24", "")
	na, cfg = reloadNode(t, na, cfg, conf)
	nstest.HoldFor(t, time.Second, "a master at 180", aMaster)
	if s := statusOf(t, na, "VI_1"); s.Transitions != tr || s.Priority != 180 {
		t.Errorf("after the reload to 180: %d transitions (was %d), priority %d", s.Transitions, tr, s.Priority)
	}
	if a.HasAddr(t, "dda", "192.0.2.109") {
		t.Error("the removed instance's VIP is still there")
	}
	got, _ := os.ReadFile(notes)
	// keepalived's clear_diff_vrrp: DELETED with notify_deleted (and its
	// script), FAULT (and notify_fault) without.
	// Each instance's scripts run in order; the two instances' may
	// interleave, so each is read on its own lines.
	for _, c := range []struct{ prefixes, want []string }{
		{[]string{"deleted9", "n "}, []string{"deleted9", "n INSTANCE VI_9 DELETED 100"}},
		{[]string{"fault8", "m "}, []string{"fault8", "m INSTANCE VI_8 FAULT 100"}},
	} {
		var lines []string
		for _, l := range strings.Split(strings.TrimSpace(string(got)), "\n") {
			for _, p := range c.prefixes {
				if strings.HasPrefix(l, p) {
					lines = append(lines, l)
				}
			}
		}
		if len(lines) < 2 || strings.Join(lines[len(lines)-2:], "\n") != strings.Join(c.want, "\n") {
			t.Errorf("the removed instances' notify calls:\n%s\nwant last %q", got, c.want)
		}
	}
	if strings.Contains(string(got), "STOP") {
		t.Errorf("a removed instance was told STOP:\n%s", got)
	}

	// 180 -> 100: below b's 150; b preempts within Master_Down_Interval.
	na, _ = reloadNode(t, na, cfg, nstest.Instance("dda", 100, 3, "0.1", "192.0.2.100/24", ""))
	// b's Master_Down_Interval is 3 * 100 ms + skew 41 ms; allow the host
	// a margin.
	took := nstest.WaitFor(t, 2*time.Second, "b preempts a at 100", func() bool {
		return nb.state(t) == Master && statusOf(t, na, "VI_1").State == Backup && b.HasAddr(t, "ddb", "192.0.2.100")
	})
	if a.HasAddr(t, "dda", "192.0.2.100") {
		t.Error("a kept the VIP as backup")
	}
	t.Logf("b took over %v after the reload", took)
}

// TestNamespaceReloadChangesVIPs: a master's address list changed by a
// reload changes in place, as keepalived's clear_diff_vrrp_vip and
// restore_vrrp_state: the address it keeps never leaves (every 10 ms
// sample), the one dropped is removed, the one added is added and
// announced (a gratuitous ARP), with no transition.
func TestNamespaceReloadChangesVIPs(t *testing.T) {
	nstest.RequireRoot(t)
	a, b := peers(t, "dd-rv")
	routes := func(lead string, dst ...string) string {
		return lead + "virtual_routes {\n " + strings.Join(dst, "\n ") + "\n }"
	}
	conf := nstest.Instance("dda", 150, 3, "0.1", "192.0.2.100/24\n 192.0.2.102/24",
		routes("", "198.51.100.0/24 dev dda", "203.0.113.0/24 dev dda"))
	hasRoute := func(dst string) bool {
		_, n, _ := net.ParseCIDR(dst)
		list, err := a.NL.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Dst: n}, netlink.RT_FILTER_DST)
		return err == nil && len(list) > 0
	}
	na := startNode(t, a, conf)
	nstest.WaitFor(t, 3*time.Second, "a master", func() bool {
		return na.state(t) == Master && a.HasAddr(t, "dda", "192.0.2.102")
	})
	tr := na.status(t).Transitions
	arp := nstest.WatchARP(t, b, "ddb")
	count, stop := sampleVIP(t, a, "dda", netip.MustParseAddr("192.0.2.100"))
	nstest.WaitFor(t, 5*time.Second, "20 samples", func() bool { return count() >= 20 })
	since := time.Now()
	// The kept route moves to another line of the file.
	na, _ = reloadNode(t, na, parseConf(t, a, conf), nstest.Instance("dda", 150, 3, "0.1", "192.0.2.100/24\n 192.0.2.103/24",
		routes("\n\n\n", "198.51.100.0/24 dev dda", "192.0.2.128/25 dev dda")))
	after := count()
	nstest.WaitFor(t, 5*time.Second, "30 samples after the reload", func() bool { return count() >= after+30 })
	samples, missing := stop()
	if missing > 0 {
		t.Errorf("the kept VIP was missing at %d of %d samples", missing, samples)
	}
	if a.HasAddr(t, "dda", "192.0.2.102") {
		t.Error("the dropped VIP is still there")
	}
	if !a.HasAddr(t, "dda", "192.0.2.103") {
		t.Error("the added VIP is not there")
	}
	if !hasRoute("198.51.100.0/24") || !hasRoute("192.0.2.128/25") || hasRoute("203.0.113.0/24") {
		t.Errorf("routes after the reload: kept %v, added %v, dropped still there %v",
			hasRoute("198.51.100.0/24"), hasRoute("192.0.2.128/25"), hasRoute("203.0.113.0/24"))
	}
	nstest.WaitFor(t, 2*time.Second, "a gratuitous ARP for the added VIP", func() bool { return arp.Count("192.0.2.103", since) > 0 })
	if s := na.status(t); s.State != Master || s.Transitions != tr {
		t.Errorf("after the reload: %v with %d transitions (was %d)", s.State, s.Transitions, tr)
	}
	na.stop()
	if a.HasAddr(t, "dda", "192.0.2.100") || a.HasAddr(t, "dda", "192.0.2.103") {
		t.Error("the stop left a VIP behind")
	}
	if hasRoute("198.51.100.0/24") || hasRoute("192.0.2.128/25") {
		t.Error("the stop left a route behind")
	}
}
