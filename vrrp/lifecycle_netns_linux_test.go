package vrrp

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/directord/directord/internal/nstest"
)

// Namespace tests of the lifecycle keywords: each fails if its keyword is
// ignored.

// TestUnicastFaultNoPeer: an instance with unicast_fault_no_peer and no
// peer is in FAULT and holds no VIP, as in keepalived; one whose only peer
// is its own address is not (keepalived 2.2.7 runs it and it becomes
// master, checked in a namespace); without the keyword an instance
// without peers falls back to multicast and becomes master.
func TestUnicastFaultNoPeer(t *testing.T) {
	nstest.RequireRoot(t)
	a, _ := peers(t, "dd-unp")
	conf := func(extra string) string {
		return nstest.Instance("dda", 100, 3, "0.1", "192.0.2.100/24", extra) +
			strings.ReplaceAll(strings.ReplaceAll(nstest.Instance("dda", 100, 3, "0.1", "192.0.2.101/24", "unicast_fault_no_peer\n unicast_src_ip 192.0.2.1\n unicast_peer {\n 192.0.2.1\n }"), "VI_1", "VI_3"), "51", "53")
	}
	na := startNode(t, a, conf("unicast_fault_no_peer"))
	nstest.WaitFor(t, 3*time.Second, "VI_1 (no peer at all) in FAULT, VI_3 (only itself) master", func() bool {
		return statusOf(t, na, "VI_1").State == Fault && statusOf(t, na, "VI_3").State == Master
	})
	nstest.HoldFor(t, 600*time.Millisecond, "VI_1 in FAULT without its VIP", func() bool {
		return statusOf(t, na, "VI_1").State == Fault && !a.HasAddr(t, "dda", "192.0.2.100") &&
			a.HasAddr(t, "dda", "192.0.2.101")
	})
	na.stop()
	nb := startNode(t, a, nstest.Instance("dda", 100, 3, "0.1", "192.0.2.100/24", ""))
	nstest.WaitFor(t, 3*time.Second, "without the keyword: master over multicast", func() bool {
		return nb.state(t) == Master && a.HasAddr(t, "dda", "192.0.2.100")
	})
}

// TestStartupDelayKeyword: with vrrp_startup_delay 1 the address owner,
// alone, is still backup half a second in and master after the second,
// as in keepalived; without the delay it is master at once.
func TestStartupDelayKeyword(t *testing.T) {
	nstest.RequireRoot(t)
	a, _ := peers(t, "dd-sd")
	start := time.Now()
	na := startNode(t, a, "global_defs {\n vrrp_startup_delay 1\n}\n"+nstest.Instance("dda", 255, 3, "0.1", "192.0.2.100/24", ""))
	nstest.HoldFor(t, 500*time.Millisecond, "backup during the delay", func() bool {
		return na.state(t) == Backup && !a.HasAddr(t, "dda", "192.0.2.100")
	})
	nstest.WaitFor(t, 2*time.Second, "master after the delay", func() bool { return na.state(t) == Master })
	if took := time.Since(start); took < time.Second {
		t.Errorf("master %v after the start, before the 1 s delay", took)
	}
	na.stop()
	nb := startNode(t, a, nstest.Instance("dda", 255, 3, "0.1", "192.0.2.100/24", ""))
	nstest.WaitFor(t, 300*time.Millisecond, "master at once without the delay", func() bool { return nb.state(t) == Master })
}

// promoteSecondaries reads dev's promote_secondaries in ns.
func promoteSecondaries(t *testing.T, ns *nstest.NS, dev string) string {
	t.Helper()
	return confSysctl(t, ns, dev, "promote_secondaries")
}

// confSysctl reads dev's IPv4 sysctl name (net.ipv4.conf.DEV.NAME) in ns.
func confSysctl(t *testing.T, ns *nstest.NS, dev, name string) string {
	t.Helper()
	var b []byte
	var err error
	ns.Do(t, func() { b, err = os.ReadFile("/proc/sys/net/ipv4/conf/" + dev + "/" + name) })
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func setPromoteSecondaries(t *testing.T, ns *nstest.NS, dev, v string) {
	t.Helper()
	var err error
	ns.Do(t, func() { err = os.WriteFile("/proc/sys/net/ipv4/conf/"+dev+"/promote_secondaries", []byte(v), 0o644) })
	if err != nil {
		t.Fatal(err)
	}
}

// TestPromoteSecondaries: an instance with promote_secondaries sets it on
// its interface (here one with IPv6 VIPs only, where directord would not
// set it by itself), keeps it through a reload, and puts the interface's
// value back when it stops, as keepalived does; without the keyword the
// interface is left alone. An interface taking IPv4 VIPs is set and
// restored likewise.
func TestPromoteSecondaries(t *testing.T) {
	nstest.RequireRoot(t)
	a := nstest.New(t, "dd-ps-a")
	b := nstest.New(t, "dd-ps-b")
	nstest.Link(t, a, b, "dda", "ddb", "192.0.2.1/24 2001:db8::1/64", "192.0.2.2/24 2001:db8::2/64")
	for _, c := range []struct {
		name, extra, vip, during string
	}{
		{"keyword, IPv6", "promote_secondaries", "2001:db8::100/64", "1"},
		{"no keyword, IPv6", "", "2001:db8::100/64", "0"},
		{"no keyword, IPv4", "", "192.0.2.100/24", "1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			setPromoteSecondaries(t, a, "dda", "0")
			conf := nstest.Instance("dda", 100, 3, "0.1", c.vip, c.extra)
			nd := startNode(t, a, conf)
			if got := promoteSecondaries(t, a, "dda"); got != c.during {
				t.Errorf("promote_secondaries %s while running, want %s", got, c.during)
			}
			nd, _ = reloadNode(t, nd, parseConf(t, a, conf), strings.Replace(conf, "priority 100", "priority 110", 1))
			if got := promoteSecondaries(t, a, "dda"); got != c.during {
				t.Errorf("promote_secondaries %s after a reload, want %s", got, c.during)
			}
			nd.stop()
			if got := promoteSecondaries(t, a, "dda"); got != "0" {
				t.Errorf("promote_secondaries %s after the stop, want 0 as before", got)
			}
		})
	}
}

// TestStateKeyword: an address owner configured state BACKUP waits
// Master_Down_Interval before becoming master, where state MASTER (the
// owner's default) is master at once.
func TestStateKeyword(t *testing.T) {
	nstest.RequireRoot(t)
	a, _ := peers(t, "dd-st")
	// Master_Down_Interval at 1 s and priority 255: 3.004 s.
	na := startNode(t, a, nstest.Instance("dda", 255, 3, "1", "192.0.2.100/24", "state BACKUP"))
	nstest.HoldFor(t, 2*time.Second, "state BACKUP: backup for Master_Down_Interval", func() bool { return na.state(t) == Backup })
	nstest.WaitFor(t, 3*time.Second, "master after it", func() bool { return na.state(t) == Master })
	na.stop()
	nb := startNode(t, a, nstest.Instance("dda", 255, 3, "1", "192.0.2.100/24", "state MASTER"))
	nstest.WaitFor(t, 300*time.Millisecond, "state MASTER: master at once", func() bool { return nb.state(t) == Master })
}
