package vrrp

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/directord/directord/config"
	"github.com/directord/directord/internal/notifyfifo"
	"github.com/directord/directord/internal/nstest"
	"github.com/directord/directord/internal/script"
)

// TestTrackFileMovesPriority: directord peers in namespaces; the master
// tracks a file with weight -60: writing 1 to it makes its priority 90
// and the backup (100) takes over, writing 0 gives it back; a weight 0
// file with a nonzero value puts it in FAULT, 0 takes it out.
func TestTrackFileMovesPriority(t *testing.T) {
	nstest.RequireRoot(t)
	a, b := peers(t, "dd-tf")
	dir := t.TempDir()
	prio, fault := filepath.Join(dir, "prio"), filepath.Join(dir, "fault")
	files := fmt.Sprintf(`track_file prio {
    file %s
    weight -60
}
track_file fault {
    file %s
}
`, prio, fault)
	conf := files + nstest.Instance("dda", 150, 3, "0.1", "192.0.2.100/24", "track_file {\n        prio\n        fault weight 0\n    }")
	nodeA := startNode(t, a, conf) // the files do not exist yet: 0
	nb := startNode(t, b, nstest.Instance("ddb", 100, 3, "0.1", "192.0.2.100/24", ""))
	status := func() InstanceStatus {
		st, err := nodeA.n.Status(context.Background())
		if err != nil || len(st) == 0 {
			t.Fatalf("status: %v", err)
		}
		return st[0]
	}
	nstest.WaitFor(t, 5*time.Second, "a master at 150", func() bool {
		return status().State == Master && status().Priority == 150 && nb.state(t) == Backup
	})
	write := func(p, v string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(prio, "1")
	nstest.WaitFor(t, 5*time.Second, "a at 90, b master", func() bool {
		s := status()
		return s.State == Backup && s.Priority == 90 && nb.state(t) == Master
	})
	write(prio, "0")
	nstest.WaitFor(t, 5*time.Second, "a preempts at 150", func() bool {
		s := status()
		return s.State == Master && s.Priority == 150 && nb.state(t) == Backup
	})
	write(fault, "1")
	nstest.WaitFor(t, 5*time.Second, "a in fault", func() bool { return status().State == Fault && nb.state(t) == Master })
	write(fault, "0")
	nstest.WaitFor(t, 5*time.Second, "a master again", func() bool { return status().State == Master && nb.state(t) == Backup })
}

// TestNotifyPriorityChangesLines: with notify_priority_changes, a change
// of effective priority writes MASTER_PRIORITY (as master) or
// BACKUP_PRIORITY to the FIFO, before the transitions it causes.
func TestNotifyPriorityChangesLines(t *testing.T) {
	nstest.RequireRoot(t)
	a, b := peers(t, "dd-npc")
	dir := t.TempDir()
	prio, path := filepath.Join(dir, "prio"), filepath.Join(dir, "vrrp.fifo")
	conf := fmt.Sprintf(`global_defs {
    vrrp_notify_fifo %s
    vrrp_notify_priority_changes
}
track_file prio {
    file %s
    weight -60
}
`, path, prio) + nstest.Instance("dda", 150, 3, "0.1", "192.0.2.100/24", "track_file {\n        prio\n    }")
	var set *notifyfifo.Set
	na := startNodeWith(t, a, conf, func(n *Node, cfg *config.Config) {
		set = notifyfifo.OpenSet(&cfg.Global, script.NewRunner(&cfg.Global), nil)
		n.NotifyFIFO(set.WriteVRRP)
	})
	defer set.Close()
	lines := fifoLines(t, path)
	nb := startNode(t, b, nstest.Instance("ddb", 100, 3, "0.1", "192.0.2.100/24", ""))
	nstest.WaitFor(t, 5*time.Second, "a master", func() bool { return na.state(t) == Master && nb.state(t) == Backup })
	write := func(v string) {
		t.Helper()
		if err := os.WriteFile(prio, []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("1")
	nstest.WaitFor(t, 5*time.Second, "b master", func() bool { return nb.state(t) == Master && na.state(t) == Backup })
	write("0")
	nstest.WaitFor(t, 5*time.Second, "a master again", func() bool { return na.state(t) == Master && nb.state(t) == Backup })
	na.stop()
	got := strings.Join(expectLines(t, lines, 7, 5*time.Second), "")
	want := "INSTANCE \"VI_1\" BACKUP 150\nINSTANCE \"VI_1\" MASTER 150\nINSTANCE \"VI_1\" MASTER_PRIORITY 90\n" +
		"INSTANCE \"VI_1\" BACKUP 90\nINSTANCE \"VI_1\" BACKUP_PRIORITY 150\nINSTANCE \"VI_1\" MASTER 150\nINSTANCE \"VI_1\" STOP 150\n"
	if got != want {
		t.Errorf("lines:\n%s\nwant:\n%s", got, want)
	}
}
