package main

import "runtime/debug"

// releaseMemory returns the heap's free pages to the system at once, in a
// goroutine of its own, after the start's first sync and after each
// reload. Both leave garbage far larger than what stays live (the
// configuration's parse, the thousands of netlink messages of the first
// sync), which Go's collector frees but its scavenger returns to the
// system only over minutes: an idle daemon's RSS stayed at the start's
// peak. This is a touch of the garbage collector's, not a smaller
// representation (docs/benchmarks.md, "Memory"); it costs one collection
// more at each.
func releaseMemory() { go debug.FreeOSMemory() }
