package vrrp

import (
	"sync"
	"sync/atomic"

	"github.com/directord/directord/config"
)

// A vrrp_sync_group's members move as one (keepalived's vrrp_sync.c): a
// member that becomes master, or gives mastership up to another router,
// forces the others to follow; one in fault puts them all in fault; the
// group's own notify runs when every member has reached the same state.
// This file is that behaviour, without sockets: node_linux.go wires each
// instance to its syncMember.

// syncGroup is one sync group at run time.
type syncGroup struct {
	cfg     *config.SyncGroup
	members []*syncMember // in configuration order

	mu   sync.Mutex
	last State // the state the group's notify last told
}

// syncMember is one instance in a sync group.
type syncMember struct {
	idx    int // the instance's index in the configuration's (and Node's) list
	group  *syncGroup
	others []*syncMember // the rest of the group
	// state is the instance's, as its last transition left it.
	state *atomic.Uint32
	// force is its Driver's Force.
	force func(to State, forced func(bool))
	// forcing is set around the transitions the group forces on it, on
	// the member's goroutine: those are not passed on.
	forcing bool
}

// newSyncGroups puts the instances insts (the configuration's list) into
// their sync groups: members[i] is instance i's, nil for an instance in
// none. groups are in the order their first member comes.
func newSyncGroups(groups []*config.SyncGroup, insts []*config.Instance) (members []*syncMember, list []*syncGroup) {
	byName := map[string]*config.SyncGroup{}
	for _, g := range groups {
		byName[g.Name] = g
	}
	made := map[*config.SyncGroup]*syncGroup{}
	members = make([]*syncMember, len(insts))
	for i, ci := range insts {
		cg := byName[ci.SyncGroup]
		if cg == nil {
			continue
		}
		g := made[cg]
		if g == nil {
			g = &syncGroup{cfg: cg}
			made[cg] = g
			list = append(list, g)
		}
		m := &syncMember{idx: i, group: g}
		g.members = append(g.members, m)
		members[i] = m
	}
	for _, g := range list {
		for _, m := range g.members {
			for _, o := range g.members {
				if o != m {
					m.others = append(m.others, o)
				}
			}
		}
	}
	return members, list
}

// follow makes the rest of the group follow m's own transition from to:
// to master, or from master to backup (another router took over). A
// transition the group forced on m is not passed on.
func (m *syncMember) follow(from, to State) {
	if m.forcing || !(to == Master || (from == Master && to == Backup)) {
		return
	}
	for _, o := range m.others {
		o.force(to, func(f bool) { o.forcing = f })
	}
}

// fault is the fault of m's instance, own being its own: a member is in
// fault while it or any other member of its group is (faulted reports
// another member's own fault, by its index). Outside any group (m nil)
// an instance's fault is its own.
func (m *syncMember) fault(own bool, faulted func(idx int) bool) bool {
	if m == nil || own {
		return own
	}
	for _, o := range m.others {
		if faulted(o.idx) {
			return true
		}
	}
	return false
}

// settled is called after m's transition to to: it reports whether the
// group as a whole has now reached to, every member being in it, which
// it was not in before (its notify then runs).
func (m *syncMember) settled(to State) bool {
	for _, o := range m.others {
		if State(o.state.Load()) != to {
			return false
		}
	}
	g := m.group
	g.mu.Lock()
	defer g.mu.Unlock()
	changed := g.last != to
	g.last = to
	return changed
}

// resumed is called when a reload has resumed the members it could
// (resumed reports which): a group whose members all resumed in one
// state is in it, and tells no notify for it (keepalived's
// state_same_at_reload).
func (g *syncGroup) resumed(resumed func(*syncMember) bool) {
	var st State
	for i, m := range g.members {
		s := State(m.state.Load())
		if !resumed(m) || (i > 0 && s != st) {
			return
		}
		st = s
	}
	if len(g.members) > 0 {
		g.mu.Lock()
		g.last = st
		g.mu.Unlock()
	}
}
