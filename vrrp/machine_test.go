package vrrp

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// recorder is an Actions that writes down what the machine asked for, with
// the time offset the test says it is.
type recorder struct {
	at  *time.Duration
	log []string
}

func (r *recorder) add(format string, args ...any) {
	r.log = append(r.log, fmt.Sprintf("%v ", *r.at)+fmt.Sprintf(format, args...))
}
func (r *recorder) SendAdvert(prio uint8)     { r.add("advert %d", prio) }
func (r *recorder) SendGARP(n int)            { r.add("garp %d", n) }
func (r *recorder) Transition(from, to State) { r.add("%s->%s", from, to) }

// sim drives a Machine through time: steps move the clock forward, running
// every timer due on the way, in order.
type sim struct {
	t   *testing.T
	m   *Machine
	rec *recorder
	t0  time.Time
	now time.Duration
}

func newSim(t *testing.T, p Params) *sim {
	s := &sim{t: t, t0: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s.rec = &recorder{at: &s.now}
	s.m = NewMachine(p, s.rec)
	return s
}

func (s *sim) start() { s.m.Start(s.t0.Add(s.now)) }

// until advances to offset d, firing the machine's timers at their times.
func (s *sim) until(d time.Duration) {
	for {
		dl := s.m.Deadline()
		if dl.IsZero() || dl.Sub(s.t0) > d {
			break
		}
		s.now = dl.Sub(s.t0)
		s.m.Tick(dl)
	}
	s.now = d
}

func (s *sim) advert(d time.Duration, prio uint8, src string, intervalCS uint16) {
	s.until(d)
	a := &Advert{Version: s.m.p.Version, VRID: s.m.p.VRID, Priority: prio, Interval: intervalCS}
	s.m.Advert(s.t0.Add(s.now), a, netip.MustParseAddr(src))
}

func (s *sim) want(lines ...string) {
	s.t.Helper()
	got := strings.Join(s.rec.log, "\n")
	if want := strings.Join(lines, "\n"); got != want {
		s.t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	s.rec.log = nil
}

func v2params(prio uint8) Params {
	return Params{Version: 2, VRID: 1, Priority: prio, AdvertInt: time.Second, Preempt: true, InitMaster: prio == 255,
		Primary: netip.MustParseAddr("192.0.2.1"), Garp: GarpParams{Repeat: 5, Delay: 5 * time.Second}}
}

func v3params(prio uint8, interval time.Duration) Params {
	p := v2params(prio)
	p.Version, p.AdvertInt = 3, interval
	return p
}

func TestMasterDownInterval(t *testing.T) {
	tests := []struct {
		p    Params
		want time.Duration
	}{
		{v2params(100), 3*time.Second + 156*time.Second/256}, // 3.609375 s
		{v2params(254), 3*time.Second + 2*time.Second/256},   // skew 7.8 ms
		{v3params(100, time.Second), 3*time.Second + 156*time.Second/256},
		{v3params(100, 100*time.Millisecond), 300*time.Millisecond + 156*100*time.Millisecond/256}, // 360.9 ms
	}
	for _, tt := range tests {
		m := NewMachine(tt.p, &recorder{at: new(time.Duration)})
		if got := m.MasterDownInterval(); got != tt.want {
			t.Errorf("v%d prio %d interval %v: %v, want %v", tt.p.Version, tt.p.Priority, tt.p.AdvertInt, got, tt.want)
		}
	}
}

func TestBackupTakesOverAfterMasterDownInterval(t *testing.T) {
	s := newSim(t, v2params(100))
	s.start()
	s.until(10 * time.Second)
	s.want(
		"0s INIT->BACKUP",
		"3.609375s advert 100", "3.609375s BACKUP->MASTER", "3.609375s garp 5",
		"4.609375s advert 100", "5.609375s advert 100", "6.609375s advert 100", "7.609375s advert 100",
		"8.609375s advert 100", "8.609375s garp 5", "9.609375s advert 100",
	)
}

func TestAddressOwnerIsMasterAtOnce(t *testing.T) {
	s := newSim(t, v2params(255))
	s.start()
	s.want("0s advert 255", "0s INIT->MASTER", "0s garp 5")
}

func TestBackupStaysWhileMasterSpeaks(t *testing.T) {
	s := newSim(t, v2params(100))
	s.start()
	for i := 1; i <= 10; i++ {
		s.advert(time.Duration(i)*time.Second, 200, "192.0.2.2", 1)
	}
	s.until(13 * time.Second) // 10 s + 3.609 s: not yet
	s.want("0s INIT->BACKUP")
	s.until(14 * time.Second)
	s.want("13.609375s advert 100", "13.609375s BACKUP->MASTER", "13.609375s garp 5")
}

func TestPriorityZeroHandsOverAfterSkewTime(t *testing.T) {
	s := newSim(t, v3params(100, time.Second))
	s.start()
	s.advert(1*time.Second, 200, "192.0.2.2", 100)
	s.advert(2*time.Second, 0, "192.0.2.2", 100)
	s.until(3 * time.Second)
	s.want("0s INIT->BACKUP", "2.609375s advert 100", "2.609375s BACKUP->MASTER", "2.609375s garp 5")
}

func TestMasterAnswersPriorityZero(t *testing.T) {
	s := newSim(t, v2params(255))
	s.start()
	s.advert(300*time.Millisecond, 0, "192.0.2.2", 1)
	s.until(1500 * time.Millisecond)
	s.want("0s advert 255", "0s INIT->MASTER", "0s garp 5", "300ms advert 255", "1.3s advert 255")
}

func TestMasterYields(t *testing.T) {
	tests := []struct {
		name  string
		prio  uint8
		src   string
		yield bool
	}{
		{"higher priority", 201, "192.0.2.0", true},
		{"equal priority, higher address", 200, "192.0.2.2", true},
		{"equal priority, lower address", 200, "192.0.2.0", false},
		{"lower priority", 199, "192.0.2.9", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSim(t, v2params(200))
			s.start()
			s.until(4 * time.Second)
			s.rec.log = nil
			s.advert(4100*time.Millisecond, tt.prio, tt.src, 1)
			if tt.yield {
				s.want("4.1s MASTER->BACKUP")
				if s.m.MasterAddr() != netip.MustParseAddr(tt.src) {
					t.Errorf("master address %s", s.m.MasterAddr())
				}
			} else {
				s.want("4.1s advert 200")
			}
		})
	}
}

// TestTwoAddressOwners: a master at priority 255 that hears another
// address owner drops to 254, as keepalived does, and so yields whatever
// the addresses.
func TestTwoAddressOwners(t *testing.T) {
	s := newSim(t, v2params(255))
	s.start()
	s.until(1500 * time.Millisecond)
	s.rec.log = nil
	s.advert(1600*time.Millisecond, 255, "192.0.2.0", 1) // a lower address
	s.want("1.6s MASTER->BACKUP")
	if p := s.m.Priority(); p != 254 {
		t.Errorf("priority %d after the conflict, want 254", p)
	}
}

func TestHigherPrioSendAdvert(t *testing.T) {
	p := v2params(200)
	p.HigherPrioSendAdvert = true
	s := newSim(t, p)
	s.start()
	s.until(4 * time.Second)
	s.rec.log = nil
	s.advert(4100*time.Millisecond, 250, "192.0.2.9", 1)
	s.want("4.1s advert 200", "4.1s MASTER->BACKUP")
}

func TestPreemptAndNopreempt(t *testing.T) {
	for _, preempt := range []bool{true, false} {
		t.Run(fmt.Sprint("preempt=", preempt), func(t *testing.T) {
			p := v2params(200)
			p.Preempt = preempt
			s := newSim(t, p)
			s.start()
			for i := 1; i <= 8; i++ {
				s.advert(time.Duration(i)*time.Second, 100, "192.0.2.2", 1)
			}
			s.until(9 * time.Second)
			if preempt {
				// The lower priority master is ignored: the down timer set
				// at start expires.
				// Once master, it answers each lower priority advert at
				// once (and its own timer restarts from there).
				s.want("0s INIT->BACKUP", "3.21875s advert 200", "3.21875s BACKUP->MASTER", "3.21875s garp 5",
					"4s advert 200", "5s advert 200", "5s advert 200", "6s advert 200", "6s advert 200",
					"7s advert 200", "7s advert 200", "8s advert 200", "8s advert 200", "8.21875s garp 5",
					"9s advert 200")
			} else {
				s.want("0s INIT->BACKUP")
			}
		})
	}
}

func TestPreemptDelay(t *testing.T) {
	p := v2params(200)
	p.PreemptDelay = 5 * time.Second
	s := newSim(t, p)
	s.start()
	for i := 1; i <= 20; i++ {
		s.advert(time.Duration(i)*time.Second, 100, "192.0.2.2", 1)
	}
	// Adverts are taken until 5 s after start (the last at 5 s sets the
	// down timer to 8.21875 s); after that they are ignored.
	if got := s.m.State(); got != Master {
		t.Fatalf("state %s", got)
	}
	if !strings.Contains(strings.Join(s.rec.log, "\n"), "8.21875s BACKUP->MASTER") {
		t.Errorf("log:\n%s", strings.Join(s.rec.log, "\n"))
	}
}

func TestV3BackupAdoptsMasterInterval(t *testing.T) {
	s := newSim(t, v3params(100, time.Second))
	s.start()
	s.advert(500*time.Millisecond, 200, "192.0.2.2", 50) // the master sends every 0.5 s
	if got, want := s.m.MasterDownInterval(), 1500*time.Millisecond+156*500*time.Millisecond/256; got != want {
		t.Errorf("Master_Down_Interval %v, want %v", got, want)
	}
	s.until(3 * time.Second)
	s.want("0s INIT->BACKUP", "2.3046875s advert 100", "2.3046875s BACKUP->MASTER", "2.3046875s garp 5")
}

func TestFault(t *testing.T) {
	s := newSim(t, v2params(255))
	s.start()
	s.until(500 * time.Millisecond)
	s.m.SetFault(s.t0.Add(s.now), true)
	s.until(3 * time.Second) // nothing is sent in fault
	s.m.SetFault(s.t0.Add(s.now), false)
	s.want("0s advert 255", "0s INIT->MASTER", "0s garp 5", "500ms advert 0", "500ms MASTER->FAULT",
		"3s advert 255", "3s FAULT->MASTER", "3s garp 5")
}

func TestFaultBeforeStart(t *testing.T) {
	s := newSim(t, v2params(100))
	s.m.SetFault(s.t0, true)
	s.start()
	s.until(10 * time.Second)
	s.want("0s INIT->FAULT")
}

func TestStopSendsPriorityZero(t *testing.T) {
	s := newSim(t, v2params(255))
	s.start()
	s.until(time.Second)
	s.m.Stop()
	s.until(5 * time.Second)
	s.want("0s advert 255", "0s INIT->MASTER", "0s garp 5", "1s advert 255", "1s advert 0", "1s MASTER->INIT")
}

// garps keeps the gratuitous ARP lines of the log.
func (s *sim) garps() {
	var garps []string
	for _, l := range s.rec.log {
		if strings.Contains(l, "garp") {
			garps = append(garps, l)
		}
	}
	s.rec.log = garps
}

// TestGarpRefresh: garp_master_refresh counts from becoming master, apart
// from garp_master_delay's second burst, and goes with the first advert
// due after its time, as keepalived's timers do.
func TestGarpRefresh(t *testing.T) {
	for _, c := range []struct {
		name  string
		delay time.Duration
		want  []string
	}{
		{"no delay", 0, []string{"0s garp 2", "10s garp 1", "20s garp 1"}},
		{"with garp_master_delay", 5 * time.Second, []string{"0s garp 2", "5s garp 2", "10s garp 1", "20s garp 1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := v2params(255)
			p.Garp = GarpParams{Repeat: 2, Delay: c.delay, Refresh: 10 * time.Second, RefreshRepeat: 1}
			s := newSim(t, p)
			s.start()
			s.until(25 * time.Second)
			s.garps()
			s.want(c.want...)
		})
	}
	// With adverts 4 s apart the refresh due at 10 s waits for the advert
	// at 12 s.
	p := v2params(255)
	p.AdvertInt = 4 * time.Second
	p.Garp = GarpParams{Repeat: 2, Refresh: 10 * time.Second, RefreshRepeat: 1}
	s := newSim(t, p)
	s.start()
	s.until(25 * time.Second)
	s.garps()
	s.want("0s garp 2", "12s garp 1", "24s garp 1")
}

func TestEffectivePriority(t *testing.T) {
	m := NewMachine(v2params(100), &recorder{at: new(time.Duration)})
	m.SetPriority(0)
	if m.Priority() != 1 {
		t.Errorf("clamped low: %d", m.Priority())
	}
	m.SetPriority(255)
	if m.Priority() != 254 {
		t.Errorf("clamped high: %d", m.Priority())
	}
	owner := NewMachine(v2params(255), &recorder{at: new(time.Duration)})
	owner.SetPriority(100)
	if owner.Priority() != 255 {
		t.Errorf("owner adjusted: %d", owner.Priority())
	}
}

func TestForce(t *testing.T) {
	s := newSim(t, v2params(100))
	s.start()
	s.until(time.Second)
	s.m.Force(s.t0.Add(s.now), Master) // a group member became master
	s.until(1500 * time.Millisecond)
	s.m.Force(s.t0.Add(s.now), Backup) // and gave it up
	s.m.SetFault(s.t0.Add(s.now), true)
	s.m.Force(s.t0.Add(s.now), Master) // a fault is not overridden
	s.want("0s INIT->BACKUP", "1s advert 100", "1s BACKUP->MASTER", "1s garp 5", "1.5s MASTER->BACKUP", "1.5s BACKUP->FAULT")
}

func TestGarpLowerPrio(t *testing.T) {
	p := v2params(200)
	p.Garp = GarpParams{Repeat: 1, LowerPrioRep: 2, LowerPrioDelay: 3 * time.Second}
	p.LowerPrioNoAdvert = true
	s := newSim(t, p)
	s.start()
	s.until(4 * time.Second)
	s.rec.log = nil
	s.advert(5*time.Second, 100, "192.0.2.9", 1)
	s.until(10 * time.Second)
	var garps []string
	for _, l := range s.rec.log {
		if strings.Contains(l, "garp") {
			garps = append(garps, l)
		}
	}
	s.rec.log = garps
	s.want("5s garp 2", "8s garp 2")
}

// TestGarpLowerPrioDuringDelay: a lower priority advert heard before
// garp_master_delay's burst leaves that burst in place: keepalived runs
// each on a timer of its own.
func TestGarpLowerPrioDuringDelay(t *testing.T) {
	p := v2params(255)
	p.Garp = GarpParams{Repeat: 3, Delay: 5 * time.Second, LowerPrioRep: 2, LowerPrioDelay: 3 * time.Second}
	s := newSim(t, p)
	s.start()
	s.advert(time.Second, 100, "192.0.2.9", 1)
	s.until(10 * time.Second)
	s.garps()
	s.want("0s garp 3", "1s garp 2", "4s garp 2", "5s garp 3")
}

// TestYield: an operator's hand-over. The master (150) sends priority 0
// and becomes backup; the peer (100) takes over and this one stays backup
// behind it, not preempting; resumed, it preempts at its own priority.
// With no peer at all, a yielding instance becomes master again after
// Master_Down_Interval: a hand-over never leaves the VIP without a holder.
func TestYield(t *testing.T) {
	s := newSim(t, v3params(150, time.Second))
	s.start()
	s.until(4 * time.Second) // master at 3.4 s
	s.rec.log = nil
	s.m.Yield(s.t0.Add(s.now), true)
	s.want("4s advert 0", "4s MASTER->BACKUP")
	if s.m.Priority() != 1 || !s.m.Yielding() || s.m.MasterAddr().IsValid() {
		t.Errorf("yielding: priority %d, yielding %v, master %v", s.m.Priority(), s.m.Yielding(), s.m.MasterAddr())
	}
	// The peer takes over and speaks; a lower priority than our own, but
	// we do not preempt while yielding.
	for i := range 5 {
		s.advert(time.Duration(4*time.Second)+time.Duration(i)*time.Second+600*time.Millisecond, 100, "192.0.2.2", 100)
	}
	s.want()
	if s.m.State() != Backup || s.m.MasterAddr() != netip.MustParseAddr("192.0.2.2") {
		t.Errorf("state %v master %v, want backup behind 192.0.2.2", s.m.State(), s.m.MasterAddr())
	}
	// Its sync group moving to master does not take it along.
	s.m.Force(s.t0.Add(s.now), Master)
	if s.m.State() != Backup {
		t.Errorf("forced to %v while yielding, want backup", s.m.State())
	}
	// Tracking changes the priority underneath; Yield still rules.
	s.m.SetPriority(140)
	if s.m.Priority() != 1 {
		t.Errorf("priority %d while yielding", s.m.Priority())
	}
	s.m.Yield(s.t0.Add(s.now), false)
	if s.m.Priority() != 140 {
		t.Errorf("priority %d after resume, want 140", s.m.Priority())
	}
	// Resumed: the peer's next adverts are ignored (preempt), so the
	// down timer takes us back to master.
	s.advert(9600*time.Millisecond, 100, "192.0.2.2", 100)
	s.until(14 * time.Second)
	if s.m.State() != Master {
		t.Errorf("after resume state %v, want master again (preempt)", s.m.State())
	}

	// Alone: yield, and nobody answers.
	a := newSim(t, v3params(150, time.Second))
	a.start()
	a.until(4 * time.Second)
	a.m.Yield(a.t0.Add(a.now), true)
	a.rec.log = nil
	a.until(8 * time.Second)
	// Master_Down_Interval at priority 1: 3 s + 255/256 s.
	a.want("7.99609375s advert 1", "7.99609375s BACKUP->MASTER", "7.99609375s garp 5")
}
