package healthcheck

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestDynamicWeightAsKeepalived: keepalived's check_misc.c gives the
// configured weight back on exit 0 after a dynamic code, and leaves the
// dynamic weight alone through failures while retries remain; only the
// failure that takes the checker down drops it.
func TestDynamicWeightAsKeepalived(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := parse(t, `
virtual_server 192.0.2.1 80 {
    lb_algo wrr
    lb_kind DR
    protocol TCP
    real_server 10.0.0.1 80 {
        weight 5
        MISC_CHECK {
            misc_path /bin/true
            misc_dynamic
            delay_loop 4
            retry 2
            delay_before_retry 1
            warmup 0
        }
    }
}
`)
		rec := &recorder{}
		r := newRunner(t, cfg, rec.emit, nil)
		r.Egress, r.Jitter = nil, 0
		var code atomic.Int64 // the script's exit code
		code.Store(14)
		r.Checks()[0].Prober = proberFunc(func(context.Context) Result {
			switch c := int(code.Load()); {
			case c == 0:
				return Result{Outcome: Up, Reason: "exit 0", Weight: -1}
			case c == 1:
				return Result{Outcome: Down, Reason: "exit 1", Weight: -1}
			default:
				return Result{Outcome: Up, Reason: fmt.Sprintf("exit %d", c), Weight: c - 2}
			}
		})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { r.Run(ctx); close(done) }()
		events := func(what string, d time.Duration, want string) {
			t.Helper()
			time.Sleep(d)
			synctest.Wait()
			rec.mu.Lock()
			defer rec.mu.Unlock()
			var got []string
			for _, e := range rec.events {
				got = append(got, fmt.Sprintf("%v/%d", e.Alive, e.Weight))
			}
			if g := strings.Join(got, " "); g != want {
				t.Errorf("%s: events %q, want %q", what, g, want)
			}
			rec.events = nil
		}
		// First probe at 1 s (warmup 0): exit 14, weight 12.
		events("exit 14", 1500*time.Millisecond, "true/12")
		// At 5 s: exit 0 gives the configured weight back.
		code.Store(0)
		events("exit 0", 4*time.Second, "true/5")
		code.Store(14)
		events("exit 14 again", 4*time.Second, "true/12")
		// At 13 s a failure, at 14 s another: retries left, weight kept.
		code.Store(1)
		events("failures within the retries", 4*time.Second+500*time.Millisecond, "")
		// At 15 s the third: down, the contribution dropped.
		events("retries spent", time.Second, "false/5")
		cancel()
		<-done
	})
}
