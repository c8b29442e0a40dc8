package integration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/directord/directord/internal/control"
	"github.com/directord/directord/internal/nstest"
)

// TestReloadDoesNotWaitForNotifyScripts: a reload that replaces an
// instance (another VRID: another virtual router) runs the old one's
// notify_deleted, and returns while that script still runs: the daemon's lock is not held for scripts, so a slow script cannot
// hold a reload past systemd's watchdog. The script blocks on a FIFO
// until the test lets it go: the events are the reload's end, seen in the
// status, and the script still blocked then.
func TestReloadDoesNotWaitForNotifyScripts(t *testing.T) {
	nstest.RequireRoot(t)
	a := nstest.New(t, "dd-scr-a")
	b := nstest.New(t, "dd-scr-b")
	nstest.Link(t, a, b, "dda", "ddb", "192.0.2.1/24", "192.0.2.2/24")
	dir := t.TempDir()
	fifo, log, release := filepath.Join(dir, "fifo"), filepath.Join(dir, "log"), filepath.Join(dir, "released")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	notify := `notify_deleted "/bin/sh -c 'echo started >> ` + log + `; [ -e ` + release + ` ] || read x < ` + fifo + `; echo done >> ` + log + `'"`
	conf := nstest.Instance("dda", 150, 3, "0.1", "192.0.2.100/24", notify)
	file, sock := filepath.Join(dir, "keepalived.conf"), filepath.Join(dir, "d.sock")
	if err := os.WriteFile(file, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	d := nstest.Start(t, a, binary, "-n", "-l", "-f", file, "--control-socket", sock)
	c := control.Dial(sock)
	nstest.WaitFor(t, 5*time.Second, "directord running", func() bool {
		st, err := c.Status(context.Background())
		return err == nil && len(st.Instances) == 1
	})

	changed := strings.Replace(conf, "virtual_router_id 51", "virtual_router_id 52", 1)
	if changed == conf {
		t.Fatal("the instance's VRID is not 51")
	}
	if err := os.WriteFile(file, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	d.Signal(syscall.SIGHUP)
	var st control.Status
	var err error
	// Without the fix the reload waits for the script's 30 s timeout.
	nstest.WaitFor(t, 5*time.Second, "the reload, while notify_deleted runs", func() bool {
		st, err = c.Status(context.Background())
		return err == nil && st.ReloadsOK+st.ReloadsFailed == 1
	})
	if st.ReloadsOK != 1 {
		t.Fatalf("the reload failed: %+v", st.LastReload)
	}
	nstest.WaitFor(t, 5*time.Second, "notify_deleted started", func() bool {
		b, _ := os.ReadFile(log)
		return strings.Contains(string(b), "started")
	})
	if b, _ := os.ReadFile(log); strings.Contains(string(b), "done") {
		t.Fatalf("notify_deleted ended before the test let it: %q", b)
	}
	// The script is still blocked on the FIFO: let it go.
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.WriteString("go\n")
	w.Close()
	nstest.WaitFor(t, 5*time.Second, "notify_deleted done", func() bool {
		b, _ := os.ReadFile(log)
		return strings.Contains(string(b), "done")
	})
	// The new instance is still served.
	if st, err := c.Status(context.Background()); err != nil || len(st.Instances) != 1 {
		t.Errorf("status after the reload: %+v, %v", st, err)
	}
}
