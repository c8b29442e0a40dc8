package bgp

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/directord/directord/config"
)

// fakeWorld records the speaker's and the addresses' calls in one log, in
// the order they happen, with the fake clock's time.
type fakeWorld struct {
	mu      sync.Mutex
	start   time.Time
	calls   []string
	failAdd bool
}

func (w *fakeWorld) rec(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls = append(w.calls, fmt.Sprintf("%s ", time.Since(w.start))+fmt.Sprintf(format, args...))
}

func (w *fakeWorld) restart() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.start = time.Now()
}

func (w *fakeWorld) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.calls
	w.calls = nil
	if c == nil {
		c = []string{}
	}
	return c
}

type fakeSpeaker struct{ w *fakeWorld }

func (s fakeSpeaker) Start(context.Context, *config.BGP) error     { return nil }
func (s fakeSpeaker) Configure(context.Context, *config.BGP) error { return nil }
func (s fakeSpeaker) Announce(_ context.Context, p netip.Prefix) error {
	s.w.rec("announce %s", p)
	return nil
}
func (s fakeSpeaker) Withdraw(_ context.Context, p netip.Prefix) error {
	s.w.rec("withdraw %s", p)
	return nil
}
func (s fakeSpeaker) Neighbors(context.Context) ([]NeighborStatus, error) { return nil, nil }
func (s fakeSpeaker) Stop(context.Context) error                          { return nil }

type fakeAddrs struct{ w *fakeWorld }

func (a fakeAddrs) Add(p netip.Prefix, dev string) error {
	a.w.mu.Lock()
	fail := a.w.failAdd
	a.w.mu.Unlock()
	if fail {
		a.w.rec("add %s %s failed", p, dev)
		return errors.New("no such device")
	}
	a.w.rec("add %s %s", p, dev)
	return nil
}
func (a fakeAddrs) Remove(p netip.Prefix, dev string) error {
	a.w.rec("remove %s %s", p, dev)
	return nil
}

func TestAnnouncer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &fakeWorld{start: time.Now()}
		a := NewAnnouncer(fakeSpeaker{w}, fakeAddrs{w}, 2*time.Second, nil)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go a.Run(ctx)
		step := func(in Inputs, want ...string) {
			t.Helper()
			if err := a.Wait(ctx, a.Set(in)); err != nil {
				t.Fatal(err)
			}
			if want == nil {
				want = []string{}
			}
			if d := cmp.Diff(want, w.take()); d != "" {
				t.Errorf("calls (-want +got):\n%s", d)
			}
			w.restart()
		}
		up := Inputs{Services: []Service{svc("TCP 10.1.0.100:443", vip1, true, true)}}
		step(up, "0s add 10.1.0.100/32 lo", "0s announce 10.1.0.100/32")
		step(up)
		step(Inputs{Services: []Service{svc("TCP 10.1.0.100:443", vip1, true, false)}}, "0s withdraw 10.1.0.100/32")
		if st := a.Status(); len(st) != 1 || st[0].Announced || st[0].Reason != "no-quorum" || st[0].Dev != "lo" ||
			st[0].Detail != "TCP 10.1.0.100:443 has no quorum" {
			t.Errorf("status %+v", st)
		}
		step(up, "0s announce 10.1.0.100/32")
		drained := up
		drained.Drained = true
		step(drained, "0s withdraw 10.1.0.100/32")
		step(up, "0s announce 10.1.0.100/32")
		// The configuration loses the address: the route goes, then after
		// bgp_withdraw_wait the address.
		step(Inputs{}, "0s withdraw 10.1.0.100/32", "2s remove 10.1.0.100/32 lo")
		step(up, "0s add 10.1.0.100/32 lo", "0s announce 10.1.0.100/32")
		if err := a.Stop(ctx, up); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff([]string{"0s withdraw 10.1.0.100/32", "2s remove 10.1.0.100/32 lo"}, w.take()); d != "" {
			t.Errorf("stop (-want +got):\n%s", d)
		}
	})
}

// TestAnnouncerRetries: an address that cannot be added is not announced,
// and is tried again after RetryAfter.
func TestAnnouncerRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &fakeWorld{start: time.Now(), failAdd: true}
		a := NewAnnouncer(fakeSpeaker{w}, fakeAddrs{w}, time.Second, nil)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go a.Run(ctx)
		a.Wait(ctx, a.Set(Inputs{Services: []Service{svc("a", vip1, true, true)}}))
		if d := cmp.Diff([]string{"0s add 10.1.0.100/32 lo failed"}, w.take()); d != "" {
			t.Errorf("(-want +got):\n%s", d)
		}
		w.mu.Lock()
		w.failAdd = false
		w.mu.Unlock()
		time.Sleep(a.RetryAfter)
		synctest.Wait()
		if d := cmp.Diff([]string{"5s add 10.1.0.100/32 lo", "5s announce 10.1.0.100/32"}, w.take()); d != "" {
			t.Errorf("retry (-want +got):\n%s", d)
		}
	})
}
