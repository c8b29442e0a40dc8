package healthcheck

import (
	"sync/atomic"
	"time"
)

// Clock is the time of a Runner's checks. A nil *Clock is the process's
// clock (time.Now), as a prober made alone (NewHTTP, a test's) has.
//
// Now is the time from one reading of the monotonic clock, where time.Now
// reads two (the wall clock's and the monotonic): where there is no vDSO
// (the benchmark's User-Mode Linux guest, some virtual machines) each is
// a system call, and they were most of a check's CPU there. The time of
// day is base's plus the monotonic time since base, which the scheduler
// reads again every second (Run): a stepped wall clock shows within a
// second. Durations between its times are the monotonic clock's.
//
// A base older than a minute (no wake-up of the scheduler for that long)
// is read again; so is one of another clock: testing/synctest's bubbles
// have a clock of their own, decades away from the process's.
type Clock struct {
	base atomic.Pointer[time.Time]
	// epoch is the origin of the schedule's times: mono(t) is the
	// monotonic time from epoch to t, in nanoseconds, which a step of the
	// wall clock (NTP setting it at boot) does not move. The wall clock's
	// time would have started every check at once after a step forward,
	// and none for as long after a step back.
	epoch time.Time
	// coarse is the checks' latest reading of the time (UnixNano), for
	// what needs the time of day but not to the microsecond: TLS (its
	// session tickets' age, certificates' validity). crypto/tls reads the
	// clock several times a handshake: in the guest, the clock was most
	// of a check's CPU. The scheduler sets it at every wake-up and every
	// probe at its end, so it is at most one probe's duration old while
	// probes run.
	coarse atomic.Int64
}

// NewClock returns a Clock whose epoch is a nanosecond ago: no reading
// of it is 0 on the schedule's scale, which means "not scheduled yet"
// (Check.due).
func NewClock() *Clock {
	c := &Clock{}
	c.epoch = c.rebase().Add(-time.Nanosecond)
	return c
}

// Now is the time (see Clock).
func (c *Clock) Now() time.Time {
	if c == nil {
		return time.Now()
	}
	b := c.base.Load()
	if d := time.Since(*b); d >= 0 && d < time.Minute {
		return b.Add(d)
	}
	return c.rebase()
}

// rebase reads the wall clock as Now's base, and returns it.
func (c *Clock) rebase() time.Time {
	t := time.Now()
	c.base.Store(&t)
	return t
}

// sinceBase is how long ago the base was read, as of t.
func (c *Clock) sinceBase(t time.Time) time.Duration { return t.Sub(*c.base.Load()) }

// mono is t on the schedule's scale.
func (c *Clock) mono(t time.Time) int64 { return int64(t.Sub(c.epoch)) }

// setCoarse makes t the latest reading.
func (c *Clock) setCoarse(t time.Time) {
	if c != nil {
		c.coarse.Store(t.UnixNano())
	}
}

// Coarse is the latest reading, or the clock's own before any: crypto/tls's
// Config.Time.
func (c *Clock) Coarse() time.Time {
	if c != nil {
		if ns := c.coarse.Load(); ns != 0 {
			return time.Unix(0, ns)
		}
	}
	return time.Now()
}

// done is r ended now, started at start: one reading of the clock gives
// its latency and its time.
func (c *Clock) done(r Result, start time.Time) Result {
	r.At = c.Now()
	r.Latency = r.At.Sub(start)
	return r
}

// clocked is a prober's clock: its Runner's, given by setClock (nil, the
// process's, for a prober made alone).
type clocked struct{ clock *Clock }

func (c *clocked) setClock(k *Clock) { c.clock = k }
