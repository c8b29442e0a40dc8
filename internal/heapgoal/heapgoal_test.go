package heapgoal

import (
	"runtime"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, 100},
		{5 * mib, 100},
		{Floor, 100},
		{Floor + 1, 100}, // rounded up: never below the floor's headroom
		{16 * mib, 75},
		{24 * mib, 50},
		{47 * 1000 * 1000, 27}, // 10,000 kept TLS connections: 12 MiB of headroom
		{48 * mib, MinPercent},
		{64 * mib, MinPercent},
		{4 << 30, MinPercent},
	} {
		got := Percent(c.live)
		if got != c.want {
			t.Errorf("Percent(%d) = %d, want %d", c.live, got, c.want)
		}
		// What the percentage promises: the headroom is at least Floor
		// (or all of Go's default) and at least a quarter of live.
		head := c.live * uint64(got) / 100
		if got < 100 && (head+1 < Floor || head+1 < c.live/4) {
			t.Errorf("Percent(%d) = %d: headroom %d below max(Floor, live/4)", c.live, got, head)
		}
	}
}

func TestWanted(t *testing.T) {
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	if !Wanted(env(nil)) {
		t.Error("Wanted with neither GOGC nor GOMEMLIMIT = false")
	}
	for _, k := range []string{"GOGC", "GOMEMLIMIT"} {
		if !Wanted(env(map[string]string{k: ""})) {
			t.Errorf("Wanted with %s empty = false: Go reads it as unset", k)
		}
		if Wanted(env(map[string]string{k: "50"})) {
			t.Errorf("Wanted with %s set = true: the operator's setting comes first", k)
		}
	}
}

// TestPacerFollowsCollections drives a Pacer by collections alone: after
// each, it sets Percent of what Live reports, only when that changed, and
// nothing after Stop.
func TestPacerFollowsCollections(t *testing.T) {
	live := make(chan uint64, 1)
	set := make(chan int, 16)
	var last uint64
	p := &Pacer{
		Live: func() uint64 {
			select {
			case last = <-live:
			default:
			}
			return last
		},
		Set: func(v int) int { set <- v; return 100 },
	}
	p.Start()
	// collect runs collections until Set is called or wanted is
	// false and n collections have passed without a call.
	collect := func(wantCall bool) (int, bool) {
		for range 200 {
			runtime.GC()
			select {
			case v := <-set:
				return v, true
			case <-time.After(50 * time.Millisecond): // the cleanup goroutine's turn
			}
			if !wantCall {
				return 0, false
			}
		}
		return 0, false
	}
	for _, c := range []struct {
		live uint64
		want int
	}{{48 << 20, 25}, {24 << 20, 50}, {1 << 20, 100}} {
		live <- c.live
		got, ok := collect(true)
		if !ok {
			t.Fatalf("live %d: no percentage set after 200 collections", c.live)
		}
		if got != c.want {
			t.Fatalf("live %d: set %d, want %d", c.live, got, c.want)
		}
	}
	// The same live heap again: nothing to set.
	live <- 1 << 20
	for range 3 {
		if v, ok := collect(false); ok {
			t.Fatalf("unchanged live heap: set %d again", v)
		}
	}
	p.Stop()
	live <- 48 << 20
	for range 3 {
		if v, ok := collect(false); ok {
			t.Fatalf("after Stop: set %d", v)
		}
	}
}

// TestLiveHeap reads the runtime's metric: after a collection, at least
// what this test holds.
func TestLiveHeap(t *testing.T) {
	hold := make([]byte, 8<<20)
	for i := range hold {
		hold[i] = byte(i)
	}
	runtime.GC()
	if got := liveHeap(); got < uint64(len(hold)) {
		t.Errorf("liveHeap() = %d after a collection, holding %d", got, len(hold))
	}
	runtime.KeepAlive(hold)
}
