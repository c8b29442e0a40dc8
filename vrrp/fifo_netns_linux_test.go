package vrrp

import (
	"bufio"
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

// fifoLines reads the lines of a FIFO, in a goroutine, into a channel.
func fifoLines(t *testing.T, path string) <-chan string {
	t.Helper()
	r, err := os.Open(path) // the node's side holds it open: no wait
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	ch := make(chan string, 100)
	go func() {
		defer close(ch)
		br := bufio.NewReader(r)
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				return
			}
			ch <- l
		}
	}()
	return ch
}

// expectLines takes n lines from ch within d.
func expectLines(t *testing.T, ch <-chan string, n int, d time.Duration) []string {
	t.Helper()
	var got []string
	timeout := time.After(d)
	for len(got) < n {
		select {
		case l, ok := <-ch:
			if !ok {
				t.Fatalf("the FIFO closed after %q, want %d lines", got, n)
			}
			got = append(got, l)
		case <-timeout:
			t.Fatalf("after %v: lines %q, want %d", d, got, n)
		}
	}
	return got
}

// TestNotifyFIFOLines: a directord master and backup in namespaces; the
// master's vrrp_notify_fifo gets keepalived's lines for each transition
// of its instance and of its sync group, with the effective priority,
// and STOP at the end; a FIFO nobody reads holds nothing up.
func TestNotifyFIFOLines(t *testing.T) {
	nstest.RequireRoot(t)
	a, b := peers(t, "dd-fifo")
	dir := t.TempDir()
	path := filepath.Join(dir, "vrrp.fifo")
	unread := filepath.Join(dir, "unread.fifo")
	flag := filepath.Join(dir, "healthy")
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	conf := fmt.Sprintf(`global_defs {
    vrrp_notify_fifo %s
    notify_fifo %s
}
vrrp_script chk {
    script "/bin/sh -c 'test -e %s'"
    interval 1
    weight -60
}
vrrp_sync_group G {
    group {
        VI_1
    }
}
`, path, unread, flag)
	var set *notifyfifo.Set
	na := startNodeWith(t, a, conf+nstest.Instance("dda", 150, 3, "0.1", "192.0.2.100/24", "track_script {\n        chk\n    }"),
		func(n *Node, cfg *config.Config) {
			set = notifyfifo.OpenSet(&cfg.Global, script.NewRunner(&cfg.Global), nil)
			n.NotifyFIFO(set.WriteVRRP)
		})
	defer set.Close()
	lines := fifoLines(t, path)
	nb := startNode(t, b, nstest.Instance("ddb", 100, 3, "0.1", "192.0.2.100/24", ""))
	nstest.WaitFor(t, 5*time.Second, "a master", func() bool { return na.state(t) == Master && nb.state(t) == Backup })
	// A sync group member's weights are 0 (no sync_group_tracking_weight):
	// the failing script puts a in FAULT.
	os.Remove(flag)
	nstest.WaitFor(t, 5*time.Second, "a in fault, b master", func() bool { return nb.state(t) == Master && na.state(t) == Fault })
	na.stop()
	got := expectLines(t, lines, 8, 5*time.Second)
	var inst, group []string
	for _, l := range got {
		if strings.HasPrefix(l, "GROUP") {
			group = append(group, l)
		} else {
			inst = append(inst, l)
		}
	}
	wantInst := "INSTANCE \"VI_1\" BACKUP 150\nINSTANCE \"VI_1\" MASTER 150\nINSTANCE \"VI_1\" FAULT 150\nINSTANCE \"VI_1\" STOP 150\n"
	wantGroup := "GROUP \"G\" BACKUP 0\nGROUP \"G\" MASTER 0\nGROUP \"G\" FAULT 0\nGROUP \"G\" STOP 0\n"
	if s := strings.Join(inst, ""); s != wantInst {
		t.Errorf("instance lines:\n%s\nwant:\n%s", s, wantInst)
	}
	if s := strings.Join(group, ""); s != wantGroup {
		t.Errorf("group lines:\n%s\nwant:\n%s", s, wantGroup)
	}
	if set.Global == nil || set.Global.Dropped() != 0 {
		t.Errorf("notify_fifo, which nobody reads: %+v; want open, nothing dropped (8 lines fit)", set.Global)
	}
}
