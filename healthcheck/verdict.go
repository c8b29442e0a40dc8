package healthcheck

import (
	"time"
)

// Outcome is what one probe found.
type Outcome uint8

// The outcomes. Unknown is a fault of the director itself (no route, no
// descriptor, no memory, a bindto address it lacks): it says nothing of
// the real server and never counts against it.
const (
	Up Outcome = iota + 1
	Down
	Unknown
)

func (o Outcome) String() string {
	switch o {
	case Up:
		return "up"
	case Down:
		return "down"
	case Unknown:
		return "unknown"
	}
	return "none"
}

// Result is one probe's finding.
type Result struct {
	Outcome Outcome
	Reason  string        // why, for a person: "status 500", "connect: connection refused"
	Latency time.Duration // from the start of the probe to its verdict
	// Weight is what a MISC_CHECK with misc_dynamic asks for (its exit
	// code less 2), or -1.
	Weight int
	// Silent is a failure without any answer from the real server (a
	// timeout, an unreachable host): the kind this director's own broken
	// link would cause too.
	Silent bool
	// Waited is how long the probe waited for this director: to start
	// after it was due (set by the Runner), and for a TLS handshake slot.
	Waited time.Duration
	// At is when the verdict came, if the probe read the clock there
	// (see done), and then At less Latency is when it started; zero, the
	// Runner reads the clock at the end and takes its own reading from
	// before the probe as the start.
	At time.Time
}

// Verdict turns a checker's probe results into its state, as keepalived
// does: a checker that is up goes down after retry+1 consecutive failures,
// the retries spaced by delay_before_retry instead of delay_loop; one
// success brings it back. Rise and Fall, a directord extension, ask for
// that many consecutive successes and failures instead (Fall replaces
// retry+1). Unknown results change nothing and are tried again after
// delay_before_retry.
//
// A checker that starts up (without alpha) is up on no evidence: as in
// keepalived (check_data.c sets retry_it to retry before the first run),
// its first failure takes it down at once, before any success has shown
// the real server works; the retries (or Fall) count only after one.
type Verdict struct {
	Retry      int
	Rise, Fall int // 0: keepalived's behaviour
	up         bool
	fails      int  // consecutive failures
	successes  int  // consecutive successes
	proven     bool // a success or a failure was seen: the start's assumption is over
}

// NewVerdict starts a checker up, or down with alpha.
func NewVerdict(retry, rise, fall int, alpha bool) *Verdict {
	return &Verdict{Retry: retry, Rise: rise, Fall: fall, up: !alpha}
}

// Up tells whether the checker is up.
func (v *Verdict) Up() bool { return v.up }

// Next takes a probe's result and says whether the checker's state
// changed, and whether the next probe is a retry (after
// delay_before_retry) rather than the next cycle (after delay_loop).
func (v *Verdict) Next(o Outcome) (changed, retry bool) {
	switch o {
	case Up:
		v.proven = true
		v.fails = 0
		v.successes++
		if !v.up && v.successes >= max(v.Rise, 1) {
			v.up = true
			return true, false
		}
		// Rising: the next success is wanted soon.
		return false, !v.up
	case Down:
		v.successes = 0
		v.fails++
		first := !v.proven
		v.proven = true
		if !v.up {
			return false, false
		}
		need := v.Retry + 1
		if v.Fall > 0 {
			need = v.Fall
		}
		if first {
			need = 1
		}
		if v.fails >= need {
			v.up = false
			return true, false
		}
		return false, true
	}
	return false, true
}
