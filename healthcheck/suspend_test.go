package healthcheck

import (
	"context"
	"net/netip"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

const haConf = `
virtual_server_group web {
    192.0.2.10-20 80
    fwmark 5
}
virtual_server 192.0.2.1 80 {
    lb_algo rr
    lb_kind DR
    protocol TCP
    ha_suspend
    real_server 10.0.0.1 80 {
        MISC_CHECK {
            misc_path /bin/true
            delay_loop 5
        }
    }
}
virtual_server group web {
    lb_algo rr
    lb_kind DR
    protocol TCP
    ha_suspend
    real_server 10.0.0.2 80 {
        TCP_CHECK {
            delay_loop 5
        }
    }
}
virtual_server 192.0.2.2 80 {
    lb_algo rr
    lb_kind DR
    protocol TCP
    real_server 10.0.0.3 80 {
        TCP_CHECK {
            delay_loop 5
        }
    }
}
`

// TestHASuspend: as keepalived's update_checker_activity, the checks of
// a virtual server with ha_suspend do not run (no probe, no MISC_CHECK
// script, no verdict, so no notify script) while none of its addresses
// is on this host, and start again within a delay_loop of one coming
// back; a virtual server without ha_suspend is checked all along. The
// real server's state is kept through the suspension.
func TestHASuspend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := parse(t, haConf)
		rec := &recorder{}
		r := newRunner(t, cfg, rec.emit, nil)
		r.Egress = nil
		if !r.UsesHASuspend() {
			t.Fatal("UsesHASuspend false")
		}
		var probes [3]atomic.Int64
		var down atomic.Bool
		for i, c := range r.Checks() {
			c.Prober = proberFunc(func(context.Context) Result {
				probes[i].Add(1)
				if down.Load() {
					return Result{Outcome: Down, Reason: "exit 1", Weight: -1}
				}
				return Result{Outcome: Up, Reason: "exit 0", Weight: -1}
			})
		}
		count := func() [3]int64 { return [3]int64{probes[0].Load(), probes[1].Load(), probes[2].Load()} }
		// A backup: neither address (nor any of the group's) here.
		r.SetLocal([]netip.Addr{netip.MustParseAddr("192.0.2.2"), netip.MustParseAddr("192.0.2.21")})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { r.Run(ctx); close(done) }()
		down.Store(true) // dead real servers: the backup must not say so
		time.Sleep(time.Minute)
		synctest.Wait()
		if got := count(); got[0] != 0 || got[1] != 0 || got[2] < 10 {
			t.Errorf("suspended: probes %v, want none for the ha_suspend virtual servers, about 12 for the other", got)
		}
		rec.mu.Lock()
		for _, e := range rec.events {
			if e.Pool != 2 {
				t.Errorf("event of a suspended virtual server: %+v", e)
			}
		}
		rec.events = nil
		rec.mu.Unlock()
		for _, c := range r.Checks()[:2] {
			if !c.Suspended() {
				t.Errorf("check of pool %d not Suspended()", c.srv.pool.idx)
			}
		}

		// Taking over: the VIP of the first and one of the group's come.
		down.Store(false)
		r.SetLocal([]netip.Addr{netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("::ffff:192.0.2.15")})
		before := count()
		time.Sleep(5*time.Second + time.Millisecond)
		synctest.Wait()
		if got := count(); got[0] == before[0] || got[1] == before[1] {
			t.Errorf("resumed: probes %v after %v, want each within a delay_loop", got, before)
		}
		// Up all along (it never was judged down): no event.
		rec.mu.Lock()
		for _, e := range rec.events {
			if e.Pool != 2 {
				t.Errorf("event on resume: %+v", e)
			}
		}
		rec.mu.Unlock()

		// Losing the addresses again suspends again.
		r.SetLocal(nil)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		before = count()
		time.Sleep(time.Minute)
		synctest.Wait()
		if got := count(); got[0] != before[0] || got[1] != before[1] {
			t.Errorf("suspended again: probes %v after %v", got, before)
		}
		cancel()
		<-done
	})
}
