package vrrp

import (
	"errors"
	"fmt"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/directord/directord/config"
)

// The Node's decisions that need no socket: what its notify scripts are
// told, which instances a hand-over applies to, and what it reports.

// notifyState is keepalived's name of a state in notify arguments: an
// instance stopping is STOP.
func notifyState(s State) string {
	if s == Initialize {
		return "STOP"
	}
	return s.String()
}

// noticeOf is what an instance's notify scripts are told of its
// transition from to, and whether they are told at all: deleted, a
// reload removed it (notifyDeleted: it has notify_deleted).
func noticeOf(from, to State, deleted, notifyDeleted bool) (string, bool) {
	if to != Initialize || !deleted {
		return notifyState(to), true
	}
	// keepalived's clear_diff_vrrp: an instance a reload removed is told
	// DELETED with notify_deleted, else FAULT, which an instance already
	// in fault is not told again.
	switch {
	case notifyDeleted:
		return "DELETED", true
	case from == Fault:
		return "", false
	}
	return "FAULT", true
}

// yieldTargets are the indexes of the instances (insts, with their sync
// group members, nil outside any) that a hand-over of the one named
// applies to: it and the rest of its sync group (a member alone would be
// forced back and forth by its group), or every instance for "". on: the
// hand-over starts, which an address owner (priority 255) refuses: its
// addresses stay its own.
func yieldTargets(insts []*config.Instance, members []*syncMember, name string, on bool) ([]int, error) {
	var targets []int
	for i, ci := range insts {
		if name == "" || ci.Name == name {
			targets = append(targets, i)
			if name != "" && members[i] != nil {
				for _, o := range members[i].others {
					targets = append(targets, o.idx)
				}
			}
		}
	}
	if len(targets) == 0 {
		return nil, fmt.Errorf("%s: %w", name, ErrNoInstance)
	}
	if on {
		for _, i := range targets {
			if uint8(insts[i].Priority) == 255 {
				return nil, fmt.Errorf("%s owns its addresses (priority 255): it cannot hand them over", insts[i].Name)
			}
		}
	}
	return targets, nil
}

// InstanceStatus is one instance's state for status displays and tests.
type InstanceStatus struct {
	Name        string
	State       State
	Priority    uint8
	MasterAddr  netip.Addr
	Sent        uint64
	Received    uint64
	Transitions uint64
	Since       time.Time // the last transition
	Drops       map[string]uint64
	// Yielding: an operator's hand-over holds the instance back (Yield).
	Yielding bool
	// Primary is the address its adverts come from.
	Primary netip.Addr
}

// reportOf is what Status reports of an instance named name: its
// machine's st, its counters c, primary (invalid while unknown), and
// its dropped adverts by reason: its own and those of its socket before
// an instance was known (own, sock), a reason with none left out.
func reportOf(name string, st Status, c *counters, primary netip.Addr, own, sock *[dropReasons]atomic.Uint64) InstanceStatus {
	s := InstanceStatus{Name: name, State: st.State, Priority: st.Priority, MasterAddr: st.MasterAddr,
		Yielding: st.Yielding, Primary: primary, Drops: map[string]uint64{},
		Sent: c.sent.Load(), Received: c.received.Load(), Transitions: c.transitions.Load()}
	if ns := c.since.Load(); ns != 0 {
		s.Since = time.Unix(0, ns)
	}
	for _, r := range DropReasons() {
		if v := own[r].Load() + sock[r].Load(); v > 0 {
			s.Drops[r.String()] = v
		}
	}
	return s
}

// ErrNoInstance is Yield's error for a name no instance has.
var ErrNoInstance = errors.New("no such VRRP instance")
