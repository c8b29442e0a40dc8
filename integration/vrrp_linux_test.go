package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/directord/directord/internal/nstest"
)

var binary string

// TestMain builds the directord binary the tests run.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "directord-integration")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "directord")
	out, err := exec.Command("go", "build", "-o", binary, "../cmd/directord").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build directord: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func startDirectord(t *testing.T, ns *nstest.NS, text string) *nstest.Process {
	t.Helper()
	file := filepath.Join(t.TempDir(), "keepalived.conf")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return nstest.Start(t, ns, binary, "-n", "-l", "-f", file)
}

// TestDirectordBesideKeepalived runs the directord binary as master (150)
// beside keepalived (100), VRRPv3 at 100 ms, and ends it two ways: SIGTERM
// hands the VIP over within Skew_Time and leaves none behind; SIGKILL is
// noticed by keepalived after Master_Down_Interval (a dead process cannot
// remove its VIP: the guardian of a later issue will).
func TestDirectordBesideKeepalived(t *testing.T) {
	nstest.RequireRoot(t)
	for i, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			a := nstest.New(t, fmt.Sprintf("dd-int-a%d", i))
			b := nstest.New(t, fmt.Sprintf("dd-int-b%d", i))
			nstest.Link(t, a, b, "dda", "ddb", "192.0.2.1/24", "192.0.2.2/24")
			d := startDirectord(t, a, nstest.Instance("dda", 150, 3, "0.1", "192.0.2.100/24", ""))
			nstest.Keepalived(t, b, nstest.Instance("ddb", 100, 3, "0.1", "192.0.2.100/24", ""))
			converged := func() bool { return a.HasAddr(t, "dda", "192.0.2.100") && !b.HasAddr(t, "ddb", "192.0.2.100") }
			nstest.WaitFor(t, 5*time.Second, "directord holds the VIP", converged)
			nstest.HoldFor(t, 500*time.Millisecond, "directord master, keepalived backup", converged)
			start := time.Now()
			d.Signal(sig)
			took := nstest.WaitFor(t, 3*time.Second, "keepalived takes the VIP", func() bool {
				return b.HasAddr(t, "ddb", "192.0.2.100")
			})
			if !d.Wait(5 * time.Second) {
				t.Fatal("directord did not exit")
			}
			// keepalived's priority 100 at 100 ms: Skew_Time 60.9 ms,
			// Master_Down_Interval 360.9 ms; the host gets 60 ms more.
			bound := 156 * 100 * time.Millisecond / 256
			if sig == syscall.SIGKILL {
				bound += 300 * time.Millisecond
			}
			if took > bound+60*time.Millisecond {
				t.Errorf("keepalived took the VIP %v after %v, bound %v", took, sig, bound)
			}
			t.Logf("%v: keepalived master %v later (bound %v); since the signal %v", sig, took, bound, time.Since(start))
			if sig == syscall.SIGTERM && a.HasAddr(t, "dda", "192.0.2.100") {
				t.Error("directord left its VIP behind after SIGTERM")
			}
		})
	}
}

// TestDirectordKilled: two directord peers; the master killed with SIGKILL
// is replaced after Master_Down_Interval (the backup's, priority 100 at
// 100 ms: 360.9 ms), measured from the master's last advert as the backup
// received it.
func TestDirectordKilled(t *testing.T) {
	nstest.RequireRoot(t)
	a := nstest.New(t, "dd-kill-a")
	b := nstest.New(t, "dd-kill-b")
	nstest.Link(t, a, b, "dda", "ddb", "192.0.2.1/24", "192.0.2.2/24")
	arps := nstest.WatchARP(t, a, "dda")
	adverts := nstest.WatchVRRP(t, b, "ddb")
	master := startDirectord(t, a, nstest.Instance("dda", 150, 3, "0.1", "192.0.2.100/24", ""))
	startDirectord(t, b, nstest.Instance("ddb", 100, 3, "0.1", "192.0.2.100/24", ""))
	nstest.WaitFor(t, 5*time.Second, "a holds the VIP", func() bool { return a.HasAddr(t, "dda", "192.0.2.100") })
	nstest.HoldFor(t, 500*time.Millisecond, "a alone holds the VIP", func() bool {
		return a.HasAddr(t, "dda", "192.0.2.100") && !b.HasAddr(t, "ddb", "192.0.2.100")
	})
	kill := time.Now()
	master.Signal(syscall.SIGKILL)
	nstest.WaitFor(t, 3*time.Second, "b announces the VIP", func() bool { return arps.Count("192.0.2.100", kill) > 0 })
	took := arps.First("192.0.2.100", kill).Sub(adverts.Last("192.0.2.1", kill))
	if bound := 300*time.Millisecond + 156*100*time.Millisecond/256; took < bound || took > bound+20*time.Millisecond {
		t.Errorf("b announced %v after a's last advert, want Master_Down_Interval %v (+20 ms)", took, bound)
	}
	t.Logf("takeover %v after the last advert", took)
}
