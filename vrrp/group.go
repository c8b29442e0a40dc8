package vrrp

import (
	"sync"
	"time"
)

// A sync group's members move together: a member that becomes master, or
// gives mastership up, forces the others to follow (Node's Transition).
// That happens inside the member's own goroutine, so it must never wait
// for another member's: two members transitioning at once, each posting
// into the other's full event queue, would wait for each other forever.
//
// So what a group asks of a member does not go through its event queue.
// It is a mailbox of one: the latest state asked for, which replaces any
// not yet taken (only the latest matters: a member forced to master and
// then to backup before it ran need only become backup), and a wake-up
// that is sent without waiting. Force never blocks, however busy or full
// the member is.

// forceBox is one member's mailbox.
type forceBox struct {
	mu     sync.Mutex
	to     State
	forced func(bool)
	full   bool
	wake   chan struct{} // one pending wake-up at most
}

func newForceBox() forceBox { return forceBox{wake: make(chan struct{}, 1)} }

// put leaves the latest request and wakes the machine's goroutine.
func (b *forceBox) put(to State, forced func(bool)) {
	b.mu.Lock()
	b.to, b.forced, b.full = to, forced, true
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default: // a wake-up is pending: it will find this request
	}
}

// take returns the request left, if any, and empties the box.
func (b *forceBox) take() (State, func(bool), bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	to, forced, ok := b.to, b.forced, b.full
	b.full, b.forced = false, nil
	return to, forced, ok
}

// Force moves the machine to a state its sync group moved to; forced is
// called around it so that the caller can tell the transitions it causes
// from the machine's own. It never blocks (see above); a request not yet
// taken is replaced by this one, and a request left when Run returns is
// dropped.
func (d *Driver) Force(to State, forced func(bool)) { d.force.put(to, forced) }

// applyForce runs the request left in the mailbox, on Run's goroutine.
func (d *Driver) applyForce(now time.Time) {
	to, forced, ok := d.force.take()
	if !ok {
		return
	}
	if forced != nil {
		forced(true)
		defer forced(false)
	}
	d.m.Force(now, to)
}
