package nstest

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Starvation measures how much CPU this machine (or guest) withheld from
// an ordinary process while a test ran: a thread of its own sleeps Period
// again and again and records how late each wake-up comes. A wake-up late
// by 800 ms means that, for those 800 ms, a process at nice 0 (a real
// server, the client, a peer's TLS handshake) could not run either:
// whatever bound a test holds it to, it lost that much. What a test
// counts against a timer (a check's connect_timeout, Master_Down_Interval)
// is then the machine's doing, not the code's; the meter tells the two
// apart without moving any bound.
//
// It also reads /proc/stat at start and when asked: in the User-Mode
// Linux guest, CPU ticks that wall time has but /proc/stat lacks are time
// the host did not run the guest at all.
type Starvation struct {
	// Period is the meter's sleep.
	Period time.Duration

	mu    sync.Mutex
	start time.Time
	late  []lateWake // the wake-ups later than Period
	due   time.Time  // when the next wake-up is due
	n     int        // wake-ups
	ticks int64      // /proc/stat's total at start
	stop  chan struct{}
}

type lateWake struct {
	at   time.Time // when it woke
	late time.Duration
}

// starveSlack is how late a wake-up may be and still count as on time:
// a timer's granularity and one scheduling round on an idle machine.
const starveSlack = 5 * time.Millisecond

// WatchStarvation starts the meter, sleeping period (20 ms if zero), and
// stops it when t's cleanups run. When t failed, it logs what the machine
// withheld during the test (Report).
func WatchStarvation(t TB, period time.Duration) *Starvation {
	if period <= 0 {
		period = 20 * time.Millisecond
	}
	s := &Starvation{Period: period, start: time.Now(), ticks: cpuTicks(), stop: make(chan struct{})}
	s.due = s.start.Add(period)
	done := make(chan struct{})
	go func() {
		defer close(done)
		// A thread of its own: the Go scheduler's queue of this test's
		// goroutines must not count as the machine's starvation.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tm := time.NewTimer(period)
		defer tm.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-tm.C:
				now := time.Now() // the channel's time is the timer's, not the wake-up's
				s.mu.Lock()
				s.n++
				if d := now.Sub(s.due); d > starveSlack {
					s.late = append(s.late, lateWake{at: now, late: d})
				}
				s.due = now.Add(period)
				s.mu.Unlock()
				tm.Reset(period)
			}
		}
	}()
	meters.Store(t, s)
	t.Cleanup(func() {
		meters.Delete(t)
		close(s.stop)
		<-done
		if t.Failed() {
			t.Logf("what the machine withheld from the test: %s", s.Report())
		}
	})
	return s
}

// meters are the running meters by test, for the waits' messages.
var meters sync.Map // TB → *Starvation

// StarvedDuring says what t's meter, if it has one, saw since start: for
// the message of a wait that ran out of time, so that it tells a machine
// that withheld the CPU from code that did not do its part.
func StarvedDuring(t TB, start time.Time) string {
	m, ok := meters.Load(t)
	if !ok {
		return ""
	}
	return "; meanwhile the machine's scheduler: " + m.(*Starvation).Between(start, time.Time{}).String()
}

// Lateness is what the meter saw in a window of time.
type Lateness struct {
	From, To time.Time
	Max      time.Duration // the latest wake-up
	MaxAt    time.Time     // when it woke
	Lost     time.Duration // the sum of every wake-up's lateness: time no ordinary process ran
	Late     int           // wake-ups later than a timer's granularity
}

// Between is what the meter saw from from to to (zero: now).
func (s *Starvation) Between(from, to time.Time) Lateness {
	if to.IsZero() {
		to = time.Now()
	}
	l := Lateness{From: from, To: to}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.late {
		// A wake-up's lateness is the time just before it.
		if w.at.Before(from) || w.at.Add(-w.late).After(to) {
			continue
		}
		l.Late++
		l.Lost += w.late
		if w.late > l.Max {
			l.Max, l.MaxAt = w.late, w.at
		}
	}
	return l
}

// Withheld is how much of the window from from to to the machine spent
// in the meter's late wake-ups, each cut to the window: the time within
// it that no ordinary process ran. A wake-up still due counts as late
// from its due time to now: a caller that the machine held up with the
// meter may run before the meter does.
func (s *Starvation) Withheld(from, to time.Time) time.Duration {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	stalls := s.late
	if now.Sub(s.due) > starveSlack {
		stalls = append(stalls[:len(stalls):len(stalls)], lateWake{at: now, late: now.Sub(s.due)})
	}
	return withheld(stalls, from, to)
}

// withheld sums the stalls' overlaps with [from, to].
func withheld(stalls []lateWake, from, to time.Time) time.Duration {
	var d time.Duration
	for _, w := range stalls {
		b, e := w.at.Add(-w.late), w.at
		if b.Before(from) {
			b = from
		}
		if e.After(to) {
			e = to
		}
		if e.After(b) {
			d += e.Sub(b)
		}
	}
	return d
}

// Starved reports whether, in l's window, a process at nice 0 could not
// run for longer than allow at a stretch: a bound that gives the machine
// allow cannot have held, whatever the code did.
func (l Lateness) Starved(allow time.Duration) bool { return l.Max > allow }

func (l Lateness) String() string {
	span := l.To.Sub(l.From)
	if l.Late == 0 {
		return fmt.Sprintf("every wake-up on time over %v", span.Round(time.Millisecond))
	}
	return fmt.Sprintf("over %v, %d wake-ups late, %v lost in all (%.0f%%), the latest %v late at %s",
		span.Round(time.Millisecond), l.Late, l.Lost.Round(time.Millisecond),
		100*l.Lost.Seconds()/max(span.Seconds(), 1e-9), l.Max.Round(time.Millisecond), l.MaxAt.Format("15:04:05.000"))
}

// Report says what the machine withheld over the whole test: the meter's
// lateness and the CPU time /proc/stat accounted against wall time.
func (s *Starvation) Report() string {
	l := s.Between(s.start, time.Time{})
	wall := l.To.Sub(s.start)
	ticks := cpuTicks() - s.ticks
	acc := time.Duration(ticks) * time.Second / userHZ / time.Duration(runtime.NumCPU())
	return fmt.Sprintf("a %v sleep: %v; /proc/stat accounted %v of %v wall time per CPU (%d CPU)",
		s.Period, l, acc.Round(10*time.Millisecond), wall.Round(10*time.Millisecond), runtime.NumCPU())
}

// cpuTicks is the sum of /proc/stat's first line: every CPU's time, busy
// or idle, in USER_HZ.
func cpuTicks() int64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	var sum int64
	for _, v := range f[1:min(len(f), 9)] { // user..steal, not guest (counted in user)
		n, _ := strconv.ParseInt(v, 10, 64)
		sum += n
	}
	return sum
}
