// Package fuzztest holds what the fuzz targets share: a bound on the time
// one input may take, so that a slow input is a failure the fuzzer records
// (with the input) instead of a stall that shows only as "execs: 0/sec".
package fuzztest

import (
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"
)

// Limit is the time one input of any target may take. Every target's
// inputs are bounded in size, and each is read in time linear in it; the
// ones we know take milliseconds. Ten seconds leaves room for a machine
// shared with other work, and still catches an input that loops or blows
// up.
const Limit = 10 * time.Second

// Bound fails the process when the current input runs longer than Limit:
// it prints every goroutine's stack and exits, which the fuzzing engine
// reports as a crash and saves the input for ("fuzzing process hung or
// terminated unexpectedly"). t.Fatal cannot do it, as the input's own
// goroutine is the one that does not return. The timer stops when the
// input ends.
func Bound(t testing.TB) {
	name := t.Name()
	timer := time.AfterFunc(Limit, func() {
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		fmt.Fprintf(os.Stderr, "%s: one input took longer than %v:\n%s\n", name, Limit, buf[:n])
		os.Exit(2)
	})
	t.Cleanup(func() { timer.Stop() })
}
