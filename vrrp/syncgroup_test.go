package vrrp

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestNewSyncGroups checks who is in which sync group.
func TestNewSyncGroups(t *testing.T) {
	cfg := planConf(t, "vrrp_sync_group G {\n group {\n VI_1\n VI_3\n }\n}\n"+
		"vrrp_sync_group H {\n group {\n VI_4\n }\n}\n"+
		inst("VI_1", "eth0", 51, 100, "")+inst("VI_2", "eth0", 52, 100, "")+
		inst("VI_3", "eth0", 53, 100, "")+inst("VI_4", "eth0", 54, 100, ""))
	members, groups := newSyncGroups(cfg.SyncGroups, cfg.Instances)
	var got []string
	for i, m := range members {
		if m == nil {
			got = append(got, fmt.Sprintf("%d: none", i))
			continue
		}
		var others []int
		for _, o := range m.others {
			others = append(others, o.idx)
		}
		got = append(got, fmt.Sprintf("%d: %s %v", i, m.group.cfg.Name, others))
	}
	want := []string{"0: G [2]", "1: none", "2: G [0]", "3: H []"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("members (-want +got):\n%s", d)
	}
	if len(groups) != 2 || groups[0].cfg.Name != "G" || groups[1].cfg.Name != "H" || len(groups[0].members) != 2 {
		t.Errorf("groups %v", groups)
	}
}

// fakeGroup is a sync group of n members whose Force records the request
// and applies it as the Driver would: a transition with forcing set.
type fakeGroup struct {
	ms     []*syncMember
	states []*atomic.Uint32
	forced []string
}

func newFakeGroup(n int) *fakeGroup {
	g := &syncGroup{}
	f := &fakeGroup{}
	for i := range n {
		st := new(atomic.Uint32)
		m := &syncMember{idx: i, group: g, state: st}
		m.force = func(to State, forced func(bool)) {
			f.forced = append(f.forced, fmt.Sprintf("%d>%s", i, to))
			forced(true)
			f.transition(i, State(st.Load()), to)
			forced(false)
		}
		g.members = append(g.members, m)
		f.states = append(f.states, st)
	}
	for _, m := range g.members {
		for _, o := range g.members {
			if o != m {
				m.others = append(m.others, o)
			}
		}
	}
	f.ms = g.members
	return f
}

// transition is member i's Transition as Node's: its state, the group
// following, then whether the group's notify runs.
func (f *fakeGroup) transition(i int, from, to State) bool {
	f.states[i].Store(uint32(to))
	f.ms[i].follow(from, to)
	return f.ms[i].settled(to)
}

// TestSyncGroupFollows checks which transitions of a member the rest
// follow, and when the group's notify runs (TestSyncGroup and
// TestTrackProcessSyncGroup see it only in namespaces, as root).
func TestSyncGroupFollows(t *testing.T) {
	tests := []struct {
		name     string
		start    State
		from, to State
		forced   []string
		notified bool
		states   []State
	}{
		{"backup to master: all follow", Backup, Backup, Master, []string{"1>MASTER", "2>MASTER"}, true,
			[]State{Master, Master, Master}},
		{"master to backup: another router took over", Master, Master, Backup, []string{"1>BACKUP", "2>BACKUP"}, true,
			[]State{Backup, Backup, Backup}},
		{"master to fault: not followed here (the group's fault is tracking's)", Master, Master, Fault, nil, false,
			[]State{Fault, Master, Master}},
		{"fault to backup: not followed", Fault, Fault, Backup, nil, false,
			[]State{Backup, Fault, Fault}},
		{"initialize to backup: not followed", Initialize, Initialize, Backup, nil, false,
			[]State{Backup, Initialize, Initialize}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeGroup(3)
			for _, st := range f.states {
				st.Store(uint32(tt.start))
			}
			f.ms[0].group.last = tt.start
			notified := f.transition(0, tt.from, tt.to)
			if d := cmp.Diff(tt.forced, f.forced); d != "" {
				t.Errorf("forced (-want +got):\n%s", d)
			}
			var states []State
			for _, st := range f.states {
				states = append(states, State(st.Load()))
			}
			if d := cmp.Diff(tt.states, states); d != "" {
				t.Errorf("states (-want +got):\n%s", d)
			}
			// The group's notify runs once: from the last member to get
			// there (a forced one), not again from the first.
			if notified {
				t.Error("the group's notify ran from the first member, before the others got there")
			}
			if got := f.ms[0].group.last == tt.to; got != tt.notified {
				t.Errorf("group reached %s: %v, want %v", tt.to, got, tt.notified)
			}
		})
	}
}

// TestSyncGroupNotifyOnce checks that the group's notify runs when the
// last member reaches a state, once, and not for a state it already told.
func TestSyncGroupNotifyOnce(t *testing.T) {
	g := &syncGroup{}
	a, b := &syncMember{group: g, state: new(atomic.Uint32)}, &syncMember{group: g, state: new(atomic.Uint32)}
	a.others, b.others = []*syncMember{b}, []*syncMember{a}
	step := func(m *syncMember, to State) bool { m.state.Store(uint32(to)); return m.settled(to) }
	steps := []struct {
		m    *syncMember
		to   State
		want bool
	}{
		{a, Backup, false}, // b still initializing
		{b, Backup, true},  // both backup: BACKUP told
		{a, Fault, false},
		{a, Backup, false}, // the group was never in FAULT as a whole: BACKUP is not told again
		{b, Fault, false},
		{a, Fault, true},
		{a, Fault, false}, // told already
	}
	for i, s := range steps {
		if got := step(s.m, s.to); got != s.want {
			t.Errorf("step %d (%s): notify %v, want %v", i, s.to, got, s.want)
		}
	}
}

// TestSyncGroupResumed checks keepalived's state_same_at_reload: a group
// whose members all resumed in one state tells no notify for it.
func TestSyncGroupResumed(t *testing.T) {
	tests := []struct {
		name    string
		states  []State
		resumed []bool
		last    State
	}{
		{"all resumed as master", []State{Master, Master}, []bool{true, true}, Master},
		{"one new", []State{Master, Master}, []bool{true, false}, Initialize},
		{"resumed in two states", []State{Master, Backup}, []bool{true, true}, Initialize},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &syncGroup{}
			for i, s := range tt.states {
				st := new(atomic.Uint32)
				st.Store(uint32(s))
				g.members = append(g.members, &syncMember{idx: i, group: g, state: st})
			}
			g.resumed(func(m *syncMember) bool { return tt.resumed[m.idx] })
			if g.last != tt.last {
				t.Errorf("last %s, want %s", g.last, tt.last)
			}
			if tt.last == Master && g.members[0].settled(Master) {
				t.Error("a resumed master group told MASTER again")
			}
		})
	}
}

// groupInst is an instance of a sync group driven by a real Driver, its
// Transition as Node's.
type groupInst struct {
	d     *Driver
	m     *syncMember
	state atomic.Uint32
	mu    *sync.Mutex
	notes *[]string
	name  string
	prio  uint8
}

func (g *groupInst) SendAdvert(uint8) {}
func (g *groupInst) SendGARP(int)     {}
func (g *groupInst) Transition(from, to State) {
	g.state.Store(uint32(to))
	g.m.follow(from, to)
	if g.m.settled(to) {
		g.mu.Lock()
		*g.notes = append(*g.notes, to.String())
		g.mu.Unlock()
	}
}

// TestSyncGroupDrivers runs two members on their Drivers: the one with
// the shorter wait becomes master and takes the other with it; a peer
// with a higher priority takes over the other and both go back to backup;
// the group's notify tells each state once.
func TestSyncGroupDrivers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := planConf(t, "vrrp_sync_group G {\n group {\n VI_1\n VI_2\n }\n}\n"+
			inst("VI_1", "eth0", 51, 150, "version 3\n advert_int 0.1")+
			inst("VI_2", "eth0", 52, 100, "version 3\n advert_int 10"))
		members, _ := newSyncGroups(cfg.SyncGroups, cfg.Instances)
		var mu sync.Mutex
		var notes []string
		var insts []*groupInst
		for i, ci := range cfg.Instances {
			gi := &groupInst{m: members[i], mu: &mu, notes: &notes, name: ci.Name, prio: uint8(ci.Priority)}
			primary := netip.AddrFrom4([4]byte{192, 0, 2, byte(1 + i)})
			as := advertOf(ci, socketOf(cfg, ci), primary)
			gi.d = NewDriver(as.Params, gi)
			gi.m.state, gi.m.force = &gi.state, gi.d.Force
			insts = append(insts, gi)
		}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for _, gi := range insts {
			gi.d.Init(time.Now(), gi.prio, false)
			wg.Add(1)
			go func() { defer wg.Done(); gi.d.Run(ctx, false) }()
		}
		time.Sleep(time.Second) // VI_1's master down interval is 0.3s + skew; VI_2's 30s
		synctest.Wait()
		for _, gi := range insts {
			if s := State(gi.state.Load()); s != Master {
				t.Errorf("%s: %s, want MASTER with its group", gi.name, s)
			}
		}
		// A router with priority 200 on VI_2: it takes VI_2 over, and the
		// group gives VI_1 up with it.
		adv := &Advert{Version: 3, VRID: 52, Priority: 200, Interval: 1000,
			Addrs: []netip.Addr{netip.MustParseAddr("192.0.2.52")}}
		insts[1].d.Receive(adv, netip.MustParseAddr("192.0.2.9"))
		synctest.Wait()
		for _, gi := range insts {
			if s := State(gi.state.Load()); s != Backup {
				t.Errorf("%s: %s, want BACKUP with its group", gi.name, s)
			}
		}
		cancel()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		if d := cmp.Diff([]string{"BACKUP", "MASTER", "BACKUP"}, notes); d != "" {
			t.Errorf("group notifies (-want +got):\n%s", d)
		}
	})
}

// TestSyncGroupFault checks that one member in fault puts its group in
// fault, and that an instance outside any group has only its own.
func TestSyncGroupFault(t *testing.T) {
	g := newFakeGroup(3)
	for _, tc := range []struct {
		name    string
		m       *syncMember
		own     bool
		faulted []int // the members whose own fault is set
		want    bool
	}{
		{name: "no group, fine", m: nil, faulted: []int{0, 1, 2}},
		{name: "no group, own fault", m: nil, own: true, want: true},
		{name: "group, none in fault", m: g.ms[0]},
		{name: "group, own fault", m: g.ms[0], own: true, want: true},
		{name: "group, another in fault", m: g.ms[0], faulted: []int{2}, want: true},
		{name: "group, last member, the first in fault", m: g.ms[2], faulted: []int{0}, want: true},
		// faulted is asked about the others only: the member's own
		// fault is own, which the caller computes (with noPeer).
		{name: "group, faulted says itself", m: g.ms[1], faulted: []int{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			faulted := func(i int) bool { return slices.Contains(tc.faulted, i) }
			if got := tc.m.fault(tc.own, faulted); got != tc.want {
				t.Errorf("fault(%v) with %v in fault: %v, want %v", tc.own, tc.faulted, got, tc.want)
			}
		})
	}
}
