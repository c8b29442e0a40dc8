package vrrp

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/directord/directord/internal/nstest"
)

// TestTrackProcessBesideKeepalived: directord (priority 150) tracks a
// process with weight -60 and terminate_delay 1, keepalived (100) is its
// peer. Without the process directord runs at 90 and keepalived is
// master; started, directord is back at 150 and preempts; killed,
// directord keeps 150 for terminate_delay, then drops to 90 and
// keepalived takes the VIP.
func TestTrackProcessBesideKeepalived(t *testing.T) {
	nstest.RequireRoot(t)
	a, b := peers(t, "dd-tp")
	dir := t.TempDir()
	name := fmt.Sprintf("ddtk%d", os.Getpid()%1000000)
	sleep := trackedCopy(t, dir, "/bin/sleep", name)
	const delay = time.Second
	conf := fmt.Sprintf("vrrp_track_process tp {\n    process %s\n    weight -60\n    terminate_delay 1\n}\n", name) +
		nstest.Instance("dda", 150, 2, "1", "192.0.2.100/24", "track_process {\n        tp\n    }")
	nstest.Keepalived(t, b, nstest.Instance("ddb", 100, 2, "1", "192.0.2.100/24", ""))
	nd := startNode(t, a, conf)
	nstest.WaitFor(t, 10*time.Second, "keepalived master, directord backup at 90", func() bool {
		st := nd.status(t)
		return st.State == Backup && st.Priority == 90 && b.HasAddr(t, "ddb", "192.0.2.100")
	})
	p := startProc(t, exec.Command(sleep, "1000"))
	nstest.WaitFor(t, 10*time.Second, "directord master at 150, keepalived backup", func() bool {
		st := nd.status(t)
		return st.State == Master && st.Priority == 150 && a.HasAddr(t, "dda", "192.0.2.100") && !b.HasAddr(t, "ddb", "192.0.2.100")
	})
	killed := time.Now()
	endProc(t, p)
	nstest.WaitFor(t, 10*time.Second, "directord at 90", func() bool { return nd.status(t).Priority == 90 })
	if took := time.Since(killed); took < delay {
		t.Errorf("priority 90 %v after the kill, before terminate_delay %v", took, delay)
	}
	nstest.WaitFor(t, 10*time.Second, "keepalived master again", func() bool {
		return nd.status(t).State == Backup && b.HasAddr(t, "ddb", "192.0.2.100") && !a.HasAddr(t, "dda", "192.0.2.100")
	})
}

// TestTrackProcessFault: an instance tracking a process with weight 0
// and quorum 2 is in FAULT until two such processes run, keepalived
// holding the VIP; then master; one of them killed, FAULT at once (no
// delay), keepalived master again.
func TestTrackProcessFault(t *testing.T) {
	nstest.RequireRoot(t)
	a, b := peers(t, "dd-tpf")
	dir := t.TempDir()
	name := fmt.Sprintf("ddtf%d", os.Getpid()%1000000)
	sleep := trackedCopy(t, dir, "/bin/sleep", name)
	conf := fmt.Sprintf("vrrp_track_process tp {\n    process %s\n    quorum 2\n}\n", name) +
		nstest.Instance("dda", 150, 2, "1", "192.0.2.100/24", "track_process {\n        tp\n    }")
	nstest.Keepalived(t, b, nstest.Instance("ddb", 100, 2, "1", "192.0.2.100/24", ""))
	nd := startNode(t, a, conf)
	nstest.WaitFor(t, 10*time.Second, "directord in fault, keepalived master", func() bool {
		return nd.state(t) == Fault && b.HasAddr(t, "ddb", "192.0.2.100")
	})
	startProc(t, exec.Command(sleep, "1000"))
	nstest.HoldFor(t, 500*time.Millisecond, "one process: still in fault", func() bool { return nd.state(t) == Fault })
	p := startProc(t, exec.Command(sleep, "1000"))
	nstest.WaitFor(t, 10*time.Second, "directord master, keepalived backup", func() bool {
		return nd.state(t) == Master && a.HasAddr(t, "dda", "192.0.2.100") && !b.HasAddr(t, "ddb", "192.0.2.100")
	})
	endProc(t, p)
	nstest.WaitFor(t, 10*time.Second, "directord in fault, keepalived master again", func() bool {
		return nd.state(t) == Fault && !a.HasAddr(t, "dda", "192.0.2.100") && b.HasAddr(t, "ddb", "192.0.2.100")
	})
}

// TestTrackProcessSyncGroup: a sync group's track_process (weight 0)
// holds both members in FAULT while the process is missing, keepalived
// holding both VIPs, and lets both take them when it runs.
func TestTrackProcessSyncGroup(t *testing.T) {
	nstest.RequireRoot(t)
	a, b := peers(t, "dd-tpg")
	dir := t.TempDir()
	name := fmt.Sprintf("ddtg%d", os.Getpid()%1000000)
	sleep := trackedCopy(t, dir, "/bin/sleep", name)
	pair := func(iface string, prio int, track string) string {
		return fmt.Sprintf(`vrrp_sync_group G {
    group {
        VI_1
        VI_2
    }
    %[3]s
}
vrrp_instance VI_1 {
    interface %[1]s
    virtual_router_id 51
    priority %[2]d
    advert_int 1
    virtual_ipaddress {
        192.0.2.100/24
    }
}
vrrp_instance VI_2 {
    interface %[1]s
    virtual_router_id 52
    priority %[2]d
    advert_int 1
    virtual_ipaddress {
        192.0.2.200/24
    }
}
`, iface, prio, track)
	}
	conf := fmt.Sprintf("vrrp_track_process tp {\n    process %s\n}\n", name) + pair("dda", 150, "track_process {\n        tp\n    }")
	nstest.Keepalived(t, b, pair("ddb", 100, ""))
	nd := startNode(t, a, conf)
	both := func(ns *nstest.NS, ifn string) bool {
		return ns.HasAddr(t, ifn, "192.0.2.100") && ns.HasAddr(t, ifn, "192.0.2.200")
	}
	states := func(want State) bool {
		st, err := nd.n.Status(context.Background())
		if err != nil || len(st) != 2 {
			t.Fatalf("status: %v", err)
		}
		return st[0].State == want && st[1].State == want
	}
	nstest.WaitFor(t, 10*time.Second, "both members in FAULT, keepalived holding both", func() bool {
		return states(Fault) && both(b, "ddb")
	})
	p := startProc(t, exec.Command(sleep, "1000"))
	nstest.WaitFor(t, 10*time.Second, "both members master", func() bool {
		return states(Master) && both(a, "dda") && !b.HasAddr(t, "ddb", "192.0.2.100") && !b.HasAddr(t, "ddb", "192.0.2.200")
	})
	endProc(t, p)
	nstest.WaitFor(t, 10*time.Second, "both in FAULT again", func() bool { return states(Fault) && both(b, "ddb") })
}
