package vrrp

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// lan connects drivers as a multicast segment does: an advert one sends
// reaches all the others, as encoded and decoded on the wire.
type lan struct {
	mu    sync.Mutex
	peers []*peer
}

type peer struct {
	lan  *lan
	addr netip.Addr
	p    Params
	d    *Driver

	mu          sync.Mutex
	transitions []transition
	adverts     int
}

type transition struct {
	at       time.Time
	from, to State
}

func (l *lan) add(addr string, p Params) *peer {
	pr := &peer{lan: l, addr: netip.MustParseAddr(addr), p: p}
	pr.p.Primary = pr.addr
	pr.d = NewDriver(pr.p, pr)
	l.mu.Lock()
	l.peers = append(l.peers, pr)
	l.mu.Unlock()
	return pr
}

func (p *peer) SendAdvert(prio uint8) {
	p.mu.Lock()
	p.adverts++
	p.mu.Unlock()
	interval := uint16(p.p.AdvertInt / (10 * time.Millisecond))
	if p.p.Version == 2 {
		interval = uint16(p.p.AdvertInt / time.Second)
	}
	a := Advert{Version: p.p.Version, VRID: p.p.VRID, Priority: prio, Interval: interval,
		Addrs: []netip.Addr{netip.MustParseAddr("192.0.2.100")}}
	dst := netip.MustParseAddr("224.0.0.18")
	b, err := a.AppendMarshal(nil, p.addr, dst, PseudoHeader)
	if err != nil {
		panic(err)
	}
	p.lan.mu.Lock()
	peers := append([]*peer(nil), p.lan.peers...)
	p.lan.mu.Unlock()
	for _, o := range peers {
		if o == p {
			continue
		}
		var got Advert
		if err := got.Unmarshal(b, p.addr, dst); err != nil {
			panic(err)
		}
		e := Expect{Version: o.p.Version, Interval: interval}
		if got.Check(255, p.addr, &e) == DropNone {
			go o.d.Receive(&got, p.addr)
		}
	}
}

func (p *peer) SendGARP(int) {}

func (p *peer) Transition(from, to State) {
	p.mu.Lock()
	p.transitions = append(p.transitions, transition{time.Now(), from, to})
	p.mu.Unlock()
}

func (p *peer) state(t *testing.T) State {
	t.Helper()
	s, err := p.d.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s.State
}

// becameMaster returns when p last became master.
func (p *peer) becameMaster() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.transitions) - 1; i >= 0; i-- {
		if p.transitions[i].to == Master {
			return p.transitions[i].at
		}
	}
	return time.Time{}
}

// TestFailoverTimes runs two peers and measures, in synctest's exact time,
// how long the backup takes over after the master stops cleanly (Skew_Time)
// and after it dies (Master_Down_Interval from its last advert).
func TestFailoverTimes(t *testing.T) {
	for _, tc := range []struct {
		name      string
		params    Params
		clean     bool
		wantAfter time.Duration // from the master's end to the takeover
		tolerance time.Duration
	}{
		{"v2 clean stop", v2params(0), true, 156 * time.Second / 256, 0},
		{"v3 100ms clean stop", v3params(0, 100*time.Millisecond), true, 156 * 100 * time.Millisecond / 256, 0},
		// Killed right after an advert: Master_Down_Interval from it.
		{"v2 kill", v2params(0), false, 3*time.Second + 156*time.Second/256, 0},
		{"v3 100ms kill", v3params(0, 100*time.Millisecond), false, 300*time.Millisecond + 156*100*time.Millisecond/256, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := &lan{}
				hi, lo := tc.params, tc.params
				hi.Priority, lo.Priority = 200, 100
				a := l.add("192.0.2.1", hi)
				b := l.add("192.0.2.2", lo)
				ctxA, stopA := context.WithCancel(context.Background())
				ctxB, stopB := context.WithCancel(context.Background())
				defer stopB()
				go a.d.Run(ctxA, tc.clean)
				go b.d.Run(ctxB, true)
				time.Sleep(10 * tc.params.AdvertInt) // synctest: virtual time
				synctest.Wait()
				if a.state(t) != Master || b.state(t) != Backup {
					t.Fatalf("before: a %s, b %s", a.state(t), b.state(t))
				}
				// End a just after one of its adverts.
				a.mu.Lock()
				n := a.adverts
				a.mu.Unlock()
				for {
					time.Sleep(time.Millisecond)
					a.mu.Lock()
					m := a.adverts
					a.mu.Unlock()
					if m > n {
						break
					}
				}
				end := time.Now()
				stopA()
				time.Sleep(5 * tc.params.AdvertInt)
				synctest.Wait()
				if b.state(t) != Master {
					t.Fatalf("b is %s after the master left", b.state(t))
				}
				// The advert was sent within the millisecond before end.
				got := b.becameMaster().Sub(end)
				if got < tc.wantAfter-time.Millisecond || got > tc.wantAfter+tc.tolerance {
					t.Errorf("takeover %v after the master's end, want %v", got, tc.wantAfter)
				}
			})
		})
	}
}

// TestOneMasterAfterPartition: two peers that both became master while cut
// off from each other converge on the higher priority one when the link
// heals, within one advert.
func TestOneMasterAfterPartition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &lan{}
		p := v3params(0, 100*time.Millisecond)
		hi, lo := p, p
		hi.Priority, lo.Priority = 150, 100
		// Partitioned: each on a lan of its own.
		a := l.add("192.0.2.1", hi)
		l2 := &lan{}
		b := l2.add("192.0.2.2", lo)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go a.d.Run(ctx, true)
		go b.d.Run(ctx, true)
		time.Sleep(time.Second)
		synctest.Wait()
		if a.state(t) != Master || b.state(t) != Master {
			t.Fatalf("partitioned: a %s, b %s", a.state(t), b.state(t))
		}
		// Heal: one segment again.
		l.mu.Lock()
		l.peers = append(l.peers, b)
		l.mu.Unlock()
		b.lan = l
		time.Sleep(100 * time.Millisecond) // one advert interval
		synctest.Wait()
		if a.state(t) != Master || b.state(t) != Backup {
			t.Fatalf("healed: a %s, b %s", a.state(t), b.state(t))
		}
	})
}

// TestStatusOfAStoppedDriver: a status asked of a machine that stops
// before it reads the request is answered at once (it used to wait for the
// caller's deadline: a reload that restarted VRRP held directorctl status
// for 5 s).
func TestStatusOfAStoppedDriver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := NewDriver(v2params(100), &recorder{at: new(time.Duration)})
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		got := make(chan error, 1)
		go func() {
			sctx, scancel := context.WithTimeout(t.Context(), time.Hour)
			defer scancel()
			_, err := d.Status(sctx)
			got <- err
		}()
		synctest.Wait() // the request is queued
		d.Run(ctx, false)
		synctest.Wait()
		select {
		case err := <-got:
			if errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("status waited for its deadline: %v", err)
			}
		default:
			t.Error("status still waiting after the machine stopped")
		}
	})
}
