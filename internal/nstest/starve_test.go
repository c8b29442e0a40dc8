package nstest

import (
	"strings"
	"testing"
	"time"
)

// TestStarvationWindows: a window counts the wake-ups whose lateness
// overlaps it, and Starved compares the longest with what a bound allows.
func TestStarvationWindows(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	s := &Starvation{Period: 20 * time.Millisecond, start: t0, late: []lateWake{
		{at(1000), 10 * time.Millisecond},
		{at(3000), 1200 * time.Millisecond}, // stalled from 1.8 s to 3 s
		{at(5000), 50 * time.Millisecond},
	}}
	for _, c := range []struct {
		name        string
		from, to    time.Time
		late        int
		lost, worst time.Duration
		starved     bool // beyond 1 s
	}{
		{"all", at(0), at(6000), 3, 1260 * time.Millisecond, 1200 * time.Millisecond, true},
		{"the stall overlaps the window's end", at(1500), at(2000), 1, 1200 * time.Millisecond, 1200 * time.Millisecond, true},
		{"after the stall", at(3001), at(6000), 1, 50 * time.Millisecond, 50 * time.Millisecond, false},
		{"before any", at(0), at(900), 0, 0, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := s.Between(c.from, c.to)
			if l.Late != c.late || l.Lost != c.lost || l.Max != c.worst || l.Starved(time.Second) != c.starved {
				t.Errorf("got %d late, %v lost, worst %v, starved %v; want %d, %v, %v, %v",
					l.Late, l.Lost, l.Max, l.Starved(time.Second), c.late, c.lost, c.worst, c.starved)
			}
		})
	}
	if got := s.Between(at(0), at(900)).String(); !strings.Contains(got, "on time") {
		t.Errorf("an empty window: %q", got)
	}
}

// TestStarvationWithheld: what a window was withheld is the stalls cut
// to it, and a wake-up still overdue counts up to now.
func TestStarvationWithheld(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	stalls := []lateWake{
		{at(1000), 10 * time.Millisecond},   // 0.99 s to 1 s
		{at(3000), 1200 * time.Millisecond}, // 1.8 s to 3 s
		{at(5000), 50 * time.Millisecond},   // 4.95 s to 5 s
	}
	for _, c := range []struct {
		name     string
		from, to time.Time
		want     time.Duration
	}{
		{"all", at(0), at(6000), 1260 * time.Millisecond},
		{"inside the stall", at(2000), at(2500), 500 * time.Millisecond},
		{"the stall's end", at(2500), at(6000), 550 * time.Millisecond},
		{"the stall's start", at(995), at(2000), 205 * time.Millisecond},
		{"between stalls", at(3000), at(4950), 0},
		{"an empty window", at(2000), at(2000), 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := withheld(stalls, c.from, c.to); got != c.want {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}

	// A wake-up overdue by a second is counted before the meter wakes.
	now := time.Now()
	s := &Starvation{Period: 20 * time.Millisecond, start: now.Add(-2 * time.Second), due: now.Add(-time.Second)}
	if got := s.Withheld(now.Add(-2*time.Second), now.Add(time.Hour)); got < time.Second {
		t.Errorf("an overdue wake-up of 1 s: %v withheld", got)
	}
	if got := s.Withheld(now.Add(-2*time.Second), now.Add(-time.Second)); got != 0 {
		t.Errorf("before it was due: %v withheld", got)
	}
}

// TestStarvationReportsOnFailure: the meter runs, stops with the test, and
// its report names the sleep and /proc/stat's account.
func TestStarvationReportsOnFailure(t *testing.T) {
	var s *Starvation
	t.Run("meter", func(t *testing.T) {
		s = WatchStarvation(t, 10*time.Millisecond)
		if _, ok := meters.Load(TB(t)); !ok {
			t.Error("the meter is not registered for its test")
		}
	})
	if r := s.Report(); !strings.Contains(r, "a 10ms sleep") || !strings.Contains(r, "/proc/stat accounted") {
		t.Errorf("report: %q", r)
	}
	if strings.Contains(StarvedDuring(t, time.Now()), "scheduler") {
		t.Error("a test without a meter got a meter's words")
	}
}
