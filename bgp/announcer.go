package bgp

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"sync"
	"time"
)

// Addresses puts addresses on devices and takes them off; NetlinkAddresses
// is the kernel's.
type Addresses interface {
	Add(p netip.Prefix, dev string) error
	Remove(p netip.Prefix, dev string) error
}

// Announcer keeps the speaker's routes and the addresses on lo as Decide
// wants them for the latest Inputs. Set hands it inputs and never blocks;
// Run applies them, one plan at a time, the newest inputs winning.
type Announcer struct {
	sp    Speaker
	addrs Addresses
	log   *slog.Logger
	// RetryAfter is how long after a failed step the inputs are applied
	// again.
	RetryAfter time.Duration
	// OnAction, if set, sees every action done (metrics, tests); it must
	// not block.
	OnAction func(Action, error)

	// applying is held for one plan (or a restart) at a time.
	applying sync.Mutex

	mu         sync.Mutex
	wait       time.Duration
	pending    Inputs
	pendingGen uint64
	appliedGen uint64
	applied    chan struct{} // closed and replaced at each applied generation
	kick       chan struct{}
	state      State
	decisions  []Decision
	since      map[netip.Prefix]time.Time // when each address's announce state last changed
}

// NewAnnouncer makes an announcer for sp and addrs; withdrawWait is
// bgp_withdraw_wait.
func NewAnnouncer(sp Speaker, addrs Addresses, withdrawWait time.Duration, log *slog.Logger) *Announcer {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Announcer{sp: sp, addrs: addrs, log: log, wait: withdrawWait, RetryAfter: 5 * time.Second,
		applied: make(chan struct{}), kick: make(chan struct{}, 1),
		state: State{Announced: map[netip.Prefix]bool{}, Addresses: map[netip.Prefix]string{}},
		since: map[netip.Prefix]time.Time{}}
}

// SetWithdrawWait changes bgp_withdraw_wait (a reload).
func (a *Announcer) SetWithdrawWait(d time.Duration) {
	a.mu.Lock()
	a.wait = d
	a.mu.Unlock()
}

// Set hands the announcer new inputs and returns their generation, for
// Wait.
func (a *Announcer) Set(in Inputs) uint64 {
	a.mu.Lock()
	a.pending = in
	a.pendingGen++
	gen := a.pendingGen
	a.mu.Unlock()
	select {
	case a.kick <- struct{}{}:
	default:
	}
	return gen
}

// Wait returns once the inputs of generation gen (or newer) are applied.
func (a *Announcer) Wait(ctx context.Context, gen uint64) error {
	for {
		a.mu.Lock()
		done, ch := a.appliedGen >= gen, a.applied
		a.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Run applies the inputs Set gives until ctx ends; it leaves routes and
// addresses as they are (Stop is the orderly end).
func (a *Announcer) Run(ctx context.Context) {
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.kick:
		case <-retry.C:
		}
		a.mu.Lock()
		in, gen := a.pending, a.pendingGen
		a.mu.Unlock()
		if err := a.apply(ctx, in); err != nil {
			a.log.Error("bgp: announcing failed; trying again", "in", a.RetryAfter.String(), "err", err)
			retry.Reset(a.RetryAfter)
		}
		a.mu.Lock()
		if gen > a.appliedGen {
			a.appliedGen = gen
			close(a.applied)
			a.applied = make(chan struct{})
		}
		a.mu.Unlock()
	}
}

// apply runs the plan from the state in effect to what in decides; a step
// that fails leaves the state as it is for that address, and the next
// apply tries again.
func (a *Announcer) apply(ctx context.Context, in Inputs) error {
	a.applying.Lock()
	defer a.applying.Unlock()
	return a.applyLocked(ctx, in)
}

func (a *Announcer) applyLocked(ctx context.Context, in Inputs) error {
	next := Decide(in)
	a.mu.Lock()
	plan := Plan(a.state, next, a.wait)
	a.decisions = next
	a.mu.Unlock()
	var errs []error
	failed := map[netip.Prefix]bool{}
	for _, act := range plan {
		var err error
		d := act.Decision
		switch act.Kind {
		case Withdraw:
			err = a.sp.Withdraw(ctx, act.Prefix)
			if err == nil {
				a.log.Info("bgp withdraw", "prefix", act.Prefix.String(), "reason", d.Reason.String(), "detail", d.Detail())
			}
		case Wait:
			a.log.Info("bgp: waiting for the routers to act on the withdraws", "bgp_withdraw_wait", act.Wait.String())
			t := time.NewTimer(act.Wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
		case RemoveAddress:
			if failed[act.Prefix] {
				continue // its withdraw failed: the address stays
			}
			err = a.addrs.Remove(act.Prefix, act.Dev)
			if err == nil {
				a.log.Info("bgp: address removed", "prefix", act.Prefix.String(), "dev", act.Dev, "reason", d.Reason.String())
			}
		case AddAddress:
			err = a.addrs.Add(act.Prefix, act.Dev)
			if err == nil {
				a.log.Info("bgp: address added", "prefix", act.Prefix.String(), "dev", act.Dev)
			}
		case Announce:
			if failed[act.Prefix] {
				continue // its address is not in place
			}
			err = a.sp.Announce(ctx, act.Prefix)
			if err == nil {
				a.log.Info("bgp announce", "prefix", act.Prefix.String(), "reason", d.Reason.String(), "detail", d.Detail())
			}
		}
		if a.OnAction != nil {
			a.OnAction(act, err)
		}
		if err != nil {
			failed[act.Prefix] = true
			errs = append(errs, err)
			continue
		}
		a.mu.Lock()
		a.state = a.state.Apply([]Action{act})
		if act.Kind == Announce || act.Kind == Withdraw {
			a.since[act.Prefix] = time.Now()
		}
		a.mu.Unlock()
	}
	return errors.Join(errs...)
}

// Stop withdraws every route, waits bgp_withdraw_wait for the routers if
// one was announced, then removes the addresses: the orderly end, before
// the services go. in is the last inputs, Stopping is set here.
func (a *Announcer) Stop(ctx context.Context, in Inputs) error {
	in.Stopping = true
	return a.apply(ctx, in)
}

// Restart withdraws every route (the addresses stay, serving what still
// arrives), then calls restart, which stops the speaker and starts it
// again (a reload that changed local_as, router_id or listen_port: GoBGP
// takes them at start only); what is: names those settings, for the log
// and the reason. The new speaker has no route: whatever the announcer
// announced is announced again by the next inputs applied (Set), which
// the caller gives once restart returned. in is the latest inputs.
func (a *Announcer) Restart(ctx context.Context, in Inputs, what string, restart func(context.Context) error) error {
	if what == "" {
		what = "its settings"
	}
	a.applying.Lock()
	defer a.applying.Unlock()
	in.Restarting = what
	err := a.applyLocked(ctx, in)
	if err != nil {
		// The session's close (a NOTIFICATION Cease) withdraws at the
		// routers what this UPDATE did not.
		a.log.Warn("bgp: restart: withdrawing failed; the sessions' close withdraws instead", "err", err)
	}
	a.log.Info("bgp: restarting the speaker", "detail", what+" changed")
	rerr := restart(ctx)
	a.mu.Lock()
	now := time.Now()
	for p, on := range a.state.Announced {
		if on {
			a.since[p] = now
		}
	}
	a.state.Announced = map[netip.Prefix]bool{}
	a.mu.Unlock()
	select {
	case a.kick <- struct{}{}:
	default:
	}
	return rerr
}

// AddressStatus is one announced address in directorctl status.
type AddressStatus struct {
	Prefix    netip.Prefix `json:"prefix"`
	Announced bool         `json:"announced"`
	Reason    string       `json:"reason"`
	Detail    string       `json:"detail"`
	// Dev is where directord put the address, "" if it did not.
	Dev string `json:"dev,omitempty"`
	// Since is when it was last announced or withdrawn.
	Since time.Time `json:"since,omitzero"`
}

// Status is what the announcer decided last, and what is in effect.
func (a *Announcer) Status() []AddressStatus {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []AddressStatus
	for _, d := range a.decisions {
		out = append(out, AddressStatus{Prefix: d.Prefix, Announced: a.state.Announced[d.Prefix], Reason: d.Reason.String(),
			Detail: d.Detail(), Dev: a.state.Addresses[d.Prefix], Since: a.since[d.Prefix]})
	}
	return out
}
