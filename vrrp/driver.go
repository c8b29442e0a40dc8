package vrrp

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"time"
)

// Driver runs a Machine in a goroutine of its own: it feeds it the events
// sent to it and calls Tick when the machine's deadline comes. The clock is
// the time package's, so tests run it inside testing/synctest.
type Driver struct {
	m      *Machine
	events chan func(now time.Time)
	force  forceBox      // what its sync group asks: never through events (group.go)
	done   chan struct{} // closed when Run returns: events are no longer taken

	resume   *Carry // Run resumes this instead of starting (a reload)
	announce bool   // with Resume: the reload added addresses
	retired  bool   // Retire: Run returns without Stop
}

// NewDriver returns a driver for a machine with these parameters and
// actions; the actions are called from Run's goroutine only.
func NewDriver(p Params, act Actions) *Driver {
	return &Driver{m: NewMachine(p, act), events: make(chan func(time.Time), 64), force: newForceBox(), done: make(chan struct{})}
}

// Init sets the effective priority and fault before Run starts the machine.
func (d *Driver) Init(now time.Time, priority uint8, fault bool) {
	d.m.SetPriority(priority)
	d.m.SetFault(now, fault)
}

// post queues an event, or drops it once Run has returned: a stopped
// machine must not block the reader or the tracker that feeds it.
func (d *Driver) post(f func(time.Time)) {
	select {
	case d.events <- f:
	case <-d.done:
	}
}

// Receive hands the machine an advert that passed Check. The advert is
// copied, so the caller may reuse it.
func (d *Driver) Receive(a *Advert, src netip.Addr) {
	c := *a
	c.Addrs = slices.Clone(a.Addrs)
	d.post(func(now time.Time) { d.m.Advert(now, &c, src) })
}

// SetFault marks a tracked resource down or up.
func (d *Driver) SetFault(fault bool) {
	d.post(func(now time.Time) { d.m.SetFault(now, fault) })
}

// Yield starts (on) or ends an operator's hand-over (Machine.Yield).
func (d *Driver) Yield(on bool) {
	d.post(func(now time.Time) { d.m.Yield(now, on) })
}

// SetPriority sets the effective priority.
func (d *Driver) SetPriority(p uint8) {
	d.post(func(time.Time) { d.m.SetPriority(p) })
}

// Resume makes Run resume from c (Machine.Resume) instead of starting;
// call it before Run.
func (d *Driver) Resume(c Carry, announce bool) { d.resume, d.announce = &c, announce }

// Retire ends Run at once without Stop (no priority 0 advert, no
// transition: the addresses stay) and returns the machine's Carry for its
// successor. ok is false when Run has already ended.
func (d *Driver) Retire() (c Carry, ok bool) {
	ch := make(chan Carry, 1)
	select {
	case d.events <- func(time.Time) { d.retired = true; ch <- d.m.Snapshot() }:
	case <-d.done:
		return Carry{}, false
	}
	select {
	case c = <-ch:
		return c, true
	case <-d.done:
		select {
		case c = <-ch:
			return c, true
		default:
			return Carry{}, false
		}
	}
}

// Status is a snapshot of the machine.
type Status struct {
	State      State
	Priority   uint8
	MasterAddr netip.Addr
	Yielding   bool
}

// Status asks the running machine for its state.
func (d *Driver) Status(ctx context.Context) (Status, error) {
	ch := make(chan Status, 1)
	select {
	case d.events <- func(time.Time) {
		ch <- Status{State: d.m.State(), Priority: d.m.Priority(), MasterAddr: d.m.MasterAddr(), Yielding: d.m.Yielding()}
	}:
	case <-d.done:
		return Status{}, errors.New("vrrp: instance stopped")
	case <-ctx.Done():
		return Status{}, ctx.Err()
	}
	// The request may sit in the queue of a machine that stops before it
	// reads it: its end is an answer too.
	select {
	case s := <-ch:
		return s, nil
	case <-d.done:
		select {
		case s := <-ch:
			return s, nil
		default:
			return Status{}, errors.New("vrrp: instance stopped")
		}
	case <-ctx.Done():
		return Status{}, ctx.Err()
	}
}

// Run starts the machine and runs it until ctx ends. A clean end (stop
// true) is a shutdown: a master sends its priority 0 advert. stop false
// leaves as a crash would, sending nothing; tests use it.
func (d *Driver) Run(ctx context.Context, stop bool) {
	defer close(d.done)
	if d.resume != nil {
		d.m.Resume(time.Now(), *d.resume, d.announce)
	} else {
		d.m.Start(time.Now())
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		timer.Stop()
		var fire <-chan time.Time
		if dl := d.m.Deadline(); !dl.IsZero() {
			timer.Reset(time.Until(dl))
			fire = timer.C
		}
		select {
		case <-ctx.Done():
			if stop {
				d.m.Stop()
			}
			return
		case f := <-d.events:
			f(time.Now())
			if d.retired {
				return
			}
		case <-d.force.wake:
			d.applyForce(time.Now())
		case <-fire:
			d.m.Tick(time.Now())
		}
	}
}
