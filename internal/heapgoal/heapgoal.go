// Package heapgoal bounds the garbage collector's headroom when the live
// heap is large.
//
// Go's collector lets the heap grow to twice what the last collection
// found live (GOGC 100) before it collects again. For a daemon whose live
// heap is small (an idle director at 1,000 x 20 holds about 10 MB) that
// doubling is a few megabytes; for one that holds 10,000 kept TLS
// connections it is 47 MB of garbage on top of 47 MB of state, of which
// crypto/tls's own buffers and ciphers are 31 MB that no representation of
// ours can shrink (docs/benchmarks.md, "Memory"). Such a director's RSS is
// then set by the headroom, not by what it holds.
//
// A Pacer, after each collection, sets the collector's percentage so that
// the headroom is Floor (12 MiB) or a quarter of the live heap, whichever
// is larger, and never more than Go's default: below Floor of live heap
// nothing changes. At 47 MB live the heap's goal is 59 MB instead of 94 MB,
// for about a sixth more CPU per check (docs/benchmarks.md).
//
// It is a setting of the collector's, decided here alone, and the operator's
// word comes first: when GOGC or GOMEMLIMIT is in the environment, Wanted
// says no and the daemon leaves the collector as the runtime set it.
package heapgoal

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// Floor is the headroom, in bytes, that the collector always keeps: Go's
// default (GOGC 100) while the live heap is at most Floor.
const Floor = 12 << 20

// MinPercent is the lowest percentage Percent gives: a quarter of the
// live heap, beyond 4 x Floor of it.
const MinPercent = 25

// Percent is the collector's percentage (GOGC) for a live heap of live
// bytes: 100 up to Floor, then the headroom Floor or live/4, whichever is
// larger, as a percentage of live, rounded up.
func Percent(live uint64) int {
	if live <= Floor {
		return 100
	}
	head := max(uint64(Floor), live/4)
	return int((head*100 + live - 1) / live)
}

// Wanted reports whether a Pacer should run, given the environment's
// lookup (os.LookupEnv): not when the operator has set GOGC or
// GOMEMLIMIT to a value.
func Wanted(lookup func(string) (string, bool)) bool {
	gogc, _ := lookup("GOGC") // empty: Go's default, as unset
	limit, _ := lookup("GOMEMLIMIT")
	return gogc == "" && limit == ""
}

// A Pacer sets the collector's percentage after each collection. Its zero
// value is not usable: make one with New, or fill Live and Set for a test.
type Pacer struct {
	// Live is the live heap the last collection found, in bytes.
	Live func() uint64
	// Set sets the collector's percentage and returns the one before
	// (debug.SetGCPercent).
	Set func(int) int

	current int // the percentage Set was last given; 0 before
	stopped atomic.Bool
}

// New is a Pacer of this process's collector.
func New() *Pacer { return &Pacer{Live: liveHeap, Set: debug.SetGCPercent} }

// Start arms the Pacer: from the next collection on, after each one, it
// sets the percentage Percent gives for the live heap that collection
// found, when that differs from the one it set last.
func (p *Pacer) Start() { p.arm() }

// Stop ends the Pacer after the next collection, for good (Start does
// not arm it again). The percentage it set last stays.
func (p *Pacer) Stop() { p.stopped.Store(true) }

// sentinel is what a collection frees so that the Pacer hears of it: it
// holds a pointer, so that the runtime never packs it with other small
// objects (a tiny allocation's cleanup may never run).
type sentinel struct{ _ *sentinel }

// arm drops a new sentinel, whose cleanup runs once a collection has
// found it unreachable: the first one after its allocation, or the next
// when it was allocated during a collection's mark.
func (p *Pacer) arm() {
	runtime.AddCleanup(new(sentinel), (*Pacer).collected, p)
}

// collected runs on the runtime's cleanup goroutine after a collection:
// it must be short, and it arms the next sentinel.
func (p *Pacer) collected() {
	if p.stopped.Load() {
		return
	}
	if want := Percent(p.Live()); want != p.current {
		p.Set(want)
		p.current = want
	}
	p.arm()
}

// liveHeap is the heap the last collection marked live.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0 // an unknown metric: Go's default
	}
	return s[0].Value.Uint64()
}
