package director

import (
	"strings"
	"sync"
	"testing"
	"testing/synctest"
)

// TestLVSFIFOLines: the lvs_notify_fifo lines, keepalived's, where the
// quorum and real server scripts run: the start with quorum, a real
// server lost (and the quorum with it), back, and at stop, with omega,
// each live real server then the virtual server DOWN.
func TestLVSFIFOLines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := parse(t, quorumConf("    omega\n"))
		l := newLVS(t, cfg, newFakeKernel())
		var mu sync.Mutex
		var lines []string
		l.FIFO = func(s string) { mu.Lock(); lines = append(lines, s); mu.Unlock() }
		ctx, stop := running(t, l)
		flap(ctx, l)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		want := "VS [192.0.2.1]:tcp:80 UP\n" +
			"RS [10.0.0.1]:tcp:80 [192.0.2.1]:tcp:80 DOWN\n" +
			"VS [192.0.2.1]:tcp:80 DOWN\n" +
			"RS [10.0.0.1]:tcp:80 [192.0.2.1]:tcp:80 UP\n" +
			"VS [192.0.2.1]:tcp:80 UP\n" +
			"RS [10.0.0.1]:tcp:80 [192.0.2.1]:tcp:80 DOWN\n" +
			"RS [10.0.0.2]:tcp:80 [192.0.2.1]:tcp:80 DOWN\n" +
			"VS [192.0.2.1]:tcp:80 DOWN\n"
		mu.Lock()
		defer mu.Unlock()
		if got := strings.Join(lines, ""); got != want {
			t.Errorf("lines:\n%s\nwant:\n%s", got, want)
		}
	})
}
