package healthcheck

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestStartAsKeepalived: keepalived (check_api.c register_checkers_thread)
// probes first BOOTSTRAP_DELAY (1 s) plus a random part of the warmup,
// which defaults to delay_loop; and without alpha one failure takes a
// checker down before its first success (check_data.c: retry_it =
// retry), so after a restart a dead real server leaves the pool within
// 1 s + warmup + its probe, not after its retries.
func TestStartAsKeepalived(t *testing.T) {
	tests := []struct {
		name           string
		timing         string
		earliest, last time.Duration // bounds of the first probes
	}{
		{"warmup defaults to delay_loop", "connect_timeout 1\n delay_loop 10\n retry 3\n delay_before_retry 2", time.Second, 11 * time.Second},
		{"warmup 0", "connect_timeout 1\n delay_loop 10\n retry 3\n delay_before_retry 2\n warmup 0", time.Second, time.Second},
		{"warmup 4", "connect_timeout 1\n delay_loop 10\n retry 3\n delay_before_retry 2\n warmup 4", time.Second, 5 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const n = 50
				cfg := parse(t, poolConf(n, tt.timing))
				rec := &recorder{}
				r := newRunner(t, cfg, rec.emit, nil)
				r.Egress = nil
				start := time.Now()
				var mu sync.Mutex
				first := map[int]time.Duration{}
				for i, c := range r.Checks() {
					c.Prober = proberFunc(func(context.Context) Result {
						mu.Lock()
						defer mu.Unlock()
						if _, ok := first[i]; !ok {
							first[i] = time.Since(start)
						}
						return Result{Outcome: Down, Reason: "connect: connection refused", Weight: -1}
					})
				}
				ctx, cancel := context.WithCancel(t.Context())
				done := make(chan struct{})
				go func() { r.Run(ctx); close(done) }()
				time.Sleep(tt.last + time.Millisecond)
				synctest.Wait()
				cancel()
				<-done
				mu.Lock()
				defer mu.Unlock()
				if len(first) != n {
					t.Fatalf("%d checks probed by %s, want %d", len(first), tt.last, n)
				}
				lo, hi := time.Hour, time.Duration(0)
				for _, d := range first {
					lo, hi = min(lo, d), max(hi, d)
				}
				if lo < tt.earliest || hi > tt.last {
					t.Errorf("first probes from %s to %s, want within [%s, %s]", lo, hi, tt.earliest, tt.last)
				}
				if tt.last > tt.earliest && hi-lo < (tt.last-tt.earliest)/2 {
					t.Errorf("first probes from %s to %s: not spread over the warmup", lo, hi)
				}
				rec.mu.Lock()
				defer rec.mu.Unlock()
				if len(rec.events) != n {
					t.Fatalf("%d events, want %d (each real server down at its first failure)", len(rec.events), n)
				}
				for k, e := range rec.events {
					if at := rec.at[k].Sub(start); e.Alive || at != first[e.Real] {
						t.Errorf("real server %d: alive %v at %s, want down at its first probe (%s)", e.Real, e.Alive, at, first[e.Real])
					}
				}
			})
		})
	}
}
