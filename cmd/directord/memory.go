package main

import "runtime/debug"

// releaseMemory returns the heap's free pages to the system at once, in a
// goroutine of its own, after the start's first sync, after each resync
// that read the kernel's table back (every 30 s), and after each reload,
// both once the reload has dropped the old configuration and once the
// data plane's sync has applied it (LVS.AfterFullSync), whichever is
// last. Each leaves garbage far larger than what stays live (the
// configuration's parse, the thousands of netlink messages of a dump),
// which Go's collector frees but its scavenger returns to the system only
// over minutes: an idle daemon's RSS stayed at the start's peak, and
// after the first resyncs rose to the heap's goal, twice the live heap.
// This is a touch of the garbage collector's, on top of a smaller
// representation (docs/benchmarks.md, "Memory"); it costs one collection
// more at each: at 1,000 x 20, a collection of about 10 MB of live heap
// every 30 s, beside a resync that reads 20,000 destinations.
func releaseMemory() { go debug.FreeOSMemory() }
