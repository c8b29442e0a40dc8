package vrrp

import (
	"context"
	"net/netip"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// member is a sync group member as Node's instance is one: its own
// transitions to master, and from master to backup, force the others.
type member struct {
	d       *Driver
	others  []*member
	forcing bool // set around forced transitions, on d's goroutine

	mu    sync.Mutex
	moves int
}

func (m *member) SendAdvert(uint8) {}
func (m *member) SendGARP(int)     {}
func (m *member) Transition(from, to State) {
	m.mu.Lock()
	m.moves++
	m.mu.Unlock()
	if !m.forcing && (to == Master || (from == Master && to == Backup)) {
		for _, o := range m.others {
			o.d.Force(to, func(f bool) { o.forcing = f })
		}
	}
}

// TestSyncGroupNoDeadlock: two members of a sync group that move at the
// same moment, each forcing the other while the other's event queue is
// full (a peer's adverts flooding in), both get where they are going,
// round after round. With forcing posted into the event queue, the two
// goroutines each waited for the other's room forever.
func TestSyncGroupNoDeadlock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := Params{Version: 3, VRID: 1, Priority: 100, AdvertInt: 100 * time.Millisecond, Preempt: true}
		a, b := &member{}, &member{}
		p.Primary = netip.MustParseAddr("192.0.2.1")
		a.d = NewDriver(p, a)
		p.Primary = netip.MustParseAddr("192.0.2.2")
		b.d = NewDriver(p, b)
		a.others, b.others = []*member{b}, []*member{a}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		defer wg.Wait()
		defer cancel()
		for _, m := range []*member{a, b} {
			wg.Add(1)
			go func() { defer wg.Done(); m.d.Run(ctx, false) }()
		}
		peer := netip.MustParseAddr("192.0.2.9")
		flood := func(prio uint8) {
			adv := &Advert{Version: 3, VRID: 1, Priority: prio, Interval: 10, Addrs: []netip.Addr{netip.MustParseAddr("192.0.2.100")}}
			var fw sync.WaitGroup
			for _, m := range []*member{a, b} {
				fw.Add(1)
				go func() {
					defer fw.Done()
					for range 3 * cap(m.d.events) {
						m.d.Receive(adv, peer)
					}
				}()
			}
			fw.Wait()
		}
		both := func(round int, want State, after time.Duration) {
			t.Helper()
			time.Sleep(after) // fake time
			for name, m := range map[string]*member{"a": a, "b": b} {
				sctx, stop := context.WithTimeout(context.Background(), time.Minute)
				st, err := m.d.Status(sctx)
				stop()
				if err != nil {
					t.Fatalf("round %d: %s does not answer (deadlocked): %v", round, name, err)
				}
				if st.State != want {
					t.Fatalf("round %d: %s is %v, want %v", round, name, st.State, want)
				}
			}
		}
		// Master_Down_Interval at 100 ms is 360.9 ms, Skew_Time 60.9 ms.
		both(0, Master, time.Second) // both time out as backups at the same instant
		for round := 1; round <= 100; round++ {
			flood(200) // a higher priority master: both give up at once
			both(round, Backup, 10*time.Millisecond)
			flood(0) // it stops: both take over after Skew_Time, at once
			both(round, Master, 100*time.Millisecond)
		}
		cancel()
		wg.Wait()
		if a.moves < 200 || b.moves < 200 {
			t.Errorf("transitions: a %d, b %d, want at least 200 each", a.moves, b.moves)
		}
	})
}
