package lab

import (
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
	Server     string
	Err        error
}

// Tally sums up results.
type Tally struct {
	Requests int
	Failed   int
	ByServer map[string]int // the answered requests by real server
	// Slowest is the longest an answered request took.
	Slowest time.Duration
	// FirstError is the first failure's reason.
	FirstError error
}

// OK is the count of answered requests.
func (t Tally) OK() int { return t.Requests - t.Failed }

// String reads "120 requests, 0 failed: rs1 40, rs2 40, rs3 40".
func (t Tally) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d requests, %d failed", t.Requests, t.Failed)
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
