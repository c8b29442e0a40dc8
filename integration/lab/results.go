package lab

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Result is one request of the client: when it started and ended, and
// which real server answered, or why it failed (it reached nothing, or no
// answer came within RequestTimeout).
type Result struct {
	Start, End time.Time
	// Withheld is how much of the request's own time, Start to End, the
	// machine ran no ordinary process (the lab's starvation meter,
	// nstest.Starvation.Withheld).
	Withheld time.Duration
	// Connected is when TCP's connect completed (zero: it did not), and
	// Port the client's port then.
	Connected time.Time
	Port      uint16
	Server    string
	Err       error
}

// Starved reports whether r failed while the machine withheld the CPU,
// within r's own window, for longer than the request's timeout; or for
// all of the timeout and of the window but less than Unstarved, so that
// the request was given less than that in all. Either way no client,
// however right the path to a real server, had the time to be answered.
// Only that failure is the machine's; any other is counted as failed,
// however busy the machine was.
//
// The second clause is for a window that ends at its deadline, where
// the withheld time passes RequestTimeout by no more than the deadline's
// own late wake-up. In one run the client connected after 5.7 s, had
// the CPU next after its 10 s deadline, and failed its TLS handshake's
// first write, given 80 ms of its 10.08 s.
func (r Result) Starved() bool {
	if r.Err == nil {
		return false
	}
	given := r.End.Sub(r.Start) - r.Withheld
	return r.Withheld > RequestTimeout || (r.Withheld > RequestTimeout-Unstarved && given < Unstarved)
}

// Tally sums up results.
type Tally struct {
	Requests int
	// Failed counts the failures that are not Starved, which a test
	// holds against the product; Starved the others.
	Failed  int
	Starved int
	// Failures are the failed requests, starved or not, in order.
	Failures []Result
	ByServer map[string]int // the answered requests by real server
	// Slowest is the longest an answered request took.
	Slowest time.Duration
	// FirstError is the first failure's reason, of a failure not starved.
	FirstError error
}

// OK is the count of answered requests.
func (t Tally) OK() int { return t.Requests - t.Failed - t.Starved }

// String reads "120 requests, 0 failed: rs1 40, rs2 40, rs3 40", with
// ", 2 starved" after the failed when some were.
func (t Tally) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d requests, %d failed", t.Requests, t.Failed)
	if t.Starved > 0 {
		fmt.Fprintf(&b, ", %d starved", t.Starved)
	}
	for i, s := range slices.Sorted(maps.Keys(t.ByServer)) {
		sep := ", "
		if i == 0 {
			sep = ": "
		}
		fmt.Fprintf(&b, "%s%s %d", sep, s, t.ByServer[s])
	}
	return b.String()
}

// Count tallies the results that keep accepts (all when nil).
func Count(rs []Result, keep func(Result) bool) Tally {
	t := Tally{ByServer: map[string]int{}}
	for _, r := range rs {
		if keep != nil && !keep(r) {
			continue
		}
		t.Requests++
		if r.Err != nil {
			t.Failures = append(t.Failures, r)
			if r.Starved() {
				t.Starved++
				continue
			}
			t.Failed++
			if t.FirstError == nil {
				t.FirstError = r.Err
			}
			continue
		}
		t.ByServer[r.Server]++
		t.Slowest = max(t.Slowest, r.End.Sub(r.Start))
	}
	return t
}

// StartedIn accepts the results started in [from, to); a zero bound is
// open.
func StartedIn(from, to time.Time) func(Result) bool {
	return func(r Result) bool {
		return !r.Start.Before(from) && (to.IsZero() || r.Start.Before(to))
	}
}

// EndedIn accepts the results that ended in [from, to); a zero bound is
// open.
func EndedIn(from, to time.Time) func(Result) bool {
	return func(r Result) bool {
		return !r.End.Before(from) && (to.IsZero() || r.End.Before(to))
	}
}

// showFailures is how many failures Tally.Describe lists.
const showFailures = 5

// Describe says of a few failures when each began, how long it took to
// connect and to fail, why, and how much of its time the machine
// withheld; "" when none failed. Those not starved come first, the least
// withheld first: the likeliest to be the product's.
func (t Tally) Describe() string {
	var b strings.Builder
	fs := slices.Clone(t.Failures)
	slices.SortStableFunc(fs, func(x, y Result) int { return cmp.Compare(x.Withheld, y.Withheld) })
	shown := 0
	for _, starved := range []bool{false, true} {
		for _, r := range fs {
			if r.Starved() != starved {
				continue
			}
			if shown == showFailures {
				fmt.Fprintf(&b, "\n\t(%d more)", len(t.Failures)-shown)
				return b.String()
			}
			shown++
			conn := "never connected"
			if !r.Connected.IsZero() {
				conn = fmt.Sprintf("port %d connected after %v", r.Port, r.Connected.Sub(r.Start).Round(time.Millisecond))
			}
			verdict := "FAILED"
			if starved {
				verdict = "STARVED"
			}
			fmt.Fprintf(&b, "\n\t%s begun %s, %s, ended after %v, the machine withholding %v of it: %v",
				verdict, r.Start.Format("15:04:05.000"), conn, r.End.Sub(r.Start).Round(time.Millisecond),
				r.Withheld.Round(time.Millisecond), r.Err)
		}
	}
	return b.String()
}
