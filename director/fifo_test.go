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
		cfg := parse(t, `
virtual_server 192.0.2.1 80 {
    lb_algo rr
    lb_kind DR
    protocol TCP
    quorum 2
    omega
    real_server 10.0.0.1 80 {
        TCP_CHECK { }
    }
    real_server 10.0.0.2 80 {
        TCP_CHECK { }
    }
}
`)
		l, err := NewLVS(cfg, newFakeKernel(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var lines []string
		l.FIFO = func(s string) { mu.Lock(); lines = append(lines, s); mu.Unlock() }
		ctx, stop := running(t, l)
		l.Report(ctx, 0, 0, RealState{Alive: false, Weight: 1})
		synctest.Wait()
		l.Report(ctx, 0, 0, RealState{Alive: true, Weight: 1})
		synctest.Wait()
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
