package lvs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/directord/directord/internal/nstest"
)

// TestHASuspendBackupDoesNotCheck: two directors with ha_suspend on their
// virtual server, whose address is the VRRP VIP. As keepalived's, the
// backup, without the VIP, runs no MISC_CHECK script and no notify
// script; the master runs them. When the master stops, the backup takes
// the VIP and its checks start.
//
// A busy guest (CI runs the other packages' tests beside it) only makes
// scripts run later and fewer: the waits' limits are ones only the
// failure reaches (a director that never checks never writes), and what
// is refused is a script where none may run, which no starvation causes.
// How soon the checks start after the VIP is logged, not bounded: it is
// keepalived's next delay_loop, a second here, and the guest's slowness.
func TestHASuspendBackupDoesNotCheck(t *testing.T) {
	bin := binary(t)
	l := newLAN(t)
	dirs := [2]*nstest.NS{nstest.New(t, name(t, "lb")), nstest.New(t, name(t, "lb"))}
	l.sw.Plug(t, dirs[0], "eth0", "10.1.0.1/24")
	l.sw.Plug(t, dirs[1], "eth0", "10.1.0.4/24")
	tmp := t.TempDir()
	var runs, notes [2]string
	var procs [2]*nstest.Process
	for i, prio := range []int{150, 100} {
		runs[i], notes[i] = filepath.Join(tmp, fmt.Sprint("runs", i)), filepath.Join(tmp, fmt.Sprint("notes", i))
		conf := strings.Replace(directorConf(prio, ""), "    protocol TCP\n", "    protocol TCP\n    ha_suspend\n", 1)
		conf = strings.Replace(conf, "        weight 1\n", fmt.Sprintf(`        weight 1
        notify_up "/bin/sh -c 'echo up >> %s'"
        notify_down "/bin/sh -c 'echo down >> %s'"
        MISC_CHECK {
            misc_path "/bin/sh -c 'echo x >> %s'"
            delay_loop 1
            warmup 0
        }
`, notes[i], notes[i], runs[i]), 1)
		procs[i] = start(t, bin, dirs[i], conf)
	}
	waitMaster(t, dirs[0])
	size := func(f string) int {
		b, _ := os.ReadFile(f)
		return len(b)
	}
	nstest.WaitFor(t, 30*time.Second, "the master's checks", func() bool { return size(runs[0]) > 0 })
	// The second director may have been master for a moment before the
	// first one's adverts came (each starts as backup, and the guest is
	// slow to start them): from when it lacks the VIP it runs nothing,
	// but for one probe that may have been under way ("x\n").
	nstest.WaitFor(t, 30*time.Second, "the backup without the VIP", func() bool { return !dirs[1].HasAddr(t, "eth0", vip) })
	was, wasNotes := size(runs[1]), size(notes[1])
	nstest.HoldFor(t, 4*time.Second, "no script on the backup", func() bool { return size(runs[1]) <= was+2 && size(notes[1]) == wasNotes })
	was = size(runs[1])
	if grew := size(runs[0]); grew == 0 {
		t.Error("the master's checks stopped")
	}

	procs[0].Signal(syscall.SIGTERM)
	if !procs[0].Wait(15 * time.Second) {
		t.Fatal("the master did not stop")
	}
	nstest.WaitFor(t, 30*time.Second, "the VIP on the backup", func() bool { return dirs[1].HasAddr(t, "eth0", vip) })
	took := nstest.WaitFor(t, 30*time.Second, "the new master's checks", func() bool { return size(runs[1]) > was })
	t.Logf("the new master's checks began %v after it held the VIP (delay_loop 1 s)", took.Round(time.Millisecond))
	if n := size(notes[1]); n != wasNotes {
		b, _ := os.ReadFile(notes[1])
		t.Errorf("notify scripts on the new master: %q (the real server was up all along)", b)
	}
}
