package vrrp

import (
	"bytes"
	"math"
	"sync"
	"time"

	"github.com/directord/directord/config"
)

// vrrp_track_process: counting the processes a vrrp_track_process block
// names, from an initial scan of /proc and the kernel's process events
// (fork, exec, comm, exit), with its quorum and delays, as keepalived
// 2.2.7's core/track_process.c does it. Pure: process facts and events
// in, quorum out; the shell (trackproc_linux.go) reads /proc and the
// process events connector. Timers are time.AfterFunc, so tests run it
// under testing/synctest.

// ProcInfo is what is known of a process when it is matched: its comm
// (the kernel's 15-character name, from /proc/PID/stat or comm, or from
// a comm event) and its command line (/proc/PID/cmdline, NUL-separated
// words, possibly cut short: ProcTracker.CmdlineLimit is enough).
type ProcInfo struct {
	Comm    string
	Cmdline []byte
}

// How a process joined or left a count: keepalived applies fork_delay
// only to forks of a process already counted and terminate_delay only to
// exits; an exec or a change of comm counts at once.
type procHow uint8

const (
	byExec procHow = iota // an exec or a change of comm
	byFork
	byExit
)

// ProcTracker counts, per vrrp_track_process, the processes that match
// it, and holds its quorum: up while Quorum..QuorumMax of them run, a
// change taking effect after fork_delay or terminate_delay where
// keepalived applies them.
type ProcTracker struct {
	mu       sync.Mutex
	procs    []*procCount          // in the configuration's order
	byName   map[string]*procCount // by vrrp_track_process name
	pids     map[int][]*procCount  // the counts each process is in
	onChange func([]ProcChange)
	pending  []ProcChange // changes not yet given to onChange
	// UseComm and UseCmdline say which of a process's facts the blocks
	// match: the shell reads only those.
	UseComm, UseCmdline bool
	// CmdlineLimit is how much of a command line matching needs: the
	// longest process name and parameters, plus room to see that a
	// command line is longer.
	CmdlineLimit int
}

type procCount struct {
	cfg    *config.TrackProcess
	params []byte // the parameters as the kernel writes them: each ends with NUL
	max    int    // QuorumMax, or no limit
	count  int
	up     bool
	// A running delay and its generation: a timer stopped too late to
	// keep its function from running finds the generation moved on.
	fork, term       *time.Timer
	forkGen, termGen uint64
}

// ProcChange is a block gaining (Up) or losing quorum.
type ProcChange struct {
	Name  string
	Up    bool
	Count int
}

// NewProcTracker tracks procs; onChange is called, with no lock held,
// after blocks gain or lose quorum (not for the initial Scan).
func NewProcTracker(procs []*config.TrackProcess, onChange func([]ProcChange)) *ProcTracker {
	t := &ProcTracker{byName: map[string]*procCount{}, pids: map[int][]*procCount{}, onChange: onChange}
	for _, p := range procs {
		if t.byName[p.Name] != nil {
			continue
		}
		c := &procCount{cfg: p, max: math.MaxInt}
		if p.QuorumMax != nil {
			c.max = *p.QuorumMax
		}
		n := len(p.Process) + 1
		for _, w := range p.Params {
			c.params = append(append(c.params, w...), 0)
		}
		n += len(c.params)
		t.CmdlineLimit = max(t.CmdlineLimit, n+2)
		if p.FullCommand {
			t.UseCmdline = true
		} else {
			t.UseComm = true
		}
		t.procs = append(t.procs, c)
		t.byName[p.Name] = c
	}
	return t
}

// MatchProcess says whether a process matches a vrrp_track_process as
// keepalived's check_process compares them: the comm, or with
// full_command the command line's first word, equal to process; then,
// with param_match, the arguments after it: exact (the same words, no
// more; none when the block has no parameters), partial (the block's
// words first, more may follow) or initial (as partial, but the last
// word may be the start of the argument).
func MatchProcess(p *config.TrackProcess, info ProcInfo) bool {
	return matchParams(p, encodeParams(p.Params), info)
}

func encodeParams(words []string) []byte {
	var b []byte
	for _, w := range words {
		b = append(append(b, w...), 0)
	}
	return b
}

func matchParams(p *config.TrackProcess, params []byte, info ProcInfo) bool {
	if !p.FullCommand {
		return info.Comm == p.Process
	}
	argv0, rest, found := bytes.Cut(info.Cmdline, []byte{0})
	if string(argv0) != p.Process {
		return false
	}
	switch {
	case p.ParamMatch == "":
		return true
	case !found:
		// A command line without its NUL (a program that rewrote it):
		// keepalived's length of the arguments is then (size_t)-1, no
		// exact match, and a prefix that must be longer than anything.
		return p.ParamMatch != "exact" && len(params) == 0
	case len(rest) < len(params):
		return false
	case p.ParamMatch == "exact":
		return bytes.Equal(rest, params)
	case p.ParamMatch == "partial":
		return bytes.HasPrefix(rest, params)
	case p.ParamMatch == "initial":
		return len(params) <= 1 || bytes.HasPrefix(rest, params[:len(params)-1])
	}
	return false
}

// Scan counts the running processes, by PID, at start: the quorum is
// then what the counts make it, at once and without onChange.
func (t *ProcTracker) Scan(procs map[int]ProcInfo) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.scan(procs)
	for _, c := range t.procs {
		c.up = c.cfg.InQuorum(c.count)
	}
}

func (t *ProcTracker) scan(procs map[int]ProcInfo) {
	for pid, info := range procs {
		for _, c := range t.procs {
			if matchParams(c.cfg, c.params, info) {
				t.pids[pid] = append(t.pids[pid], c)
				c.count++
			}
		}
	}
}

// Rescan counts afresh after process events were lost (ENOBUFS): every
// delay is stopped and each block's quorum set from the new count, a
// loss after terminate_delay.
func (t *ProcTracker) Rescan(procs map[int]ProcInfo) {
	t.mu.Lock()
	clear(t.pids)
	for _, c := range t.procs {
		c.stopFork()
		c.stopTerm()
		c.count = 0
	}
	t.scan(procs)
	for _, c := range t.procs {
		in := c.cfg.InQuorum(c.count)
		switch {
		case in == c.up:
		case !in && c.cfg.TerminateDelay > 0:
			t.startTerm(c)
		default:
			t.update(c, in)
		}
	}
	t.mu.Unlock()
	t.notify()
}

// Fork: a process that is counted forked child, which counts for the
// same blocks (threads are not processes: the shell passes only forks
// whose child is a process of its own).
func (t *ProcTracker) Fork(parent, child int) {
	t.mu.Lock()
	for _, c := range t.pids[parent] {
		t.add(child, c, byFork)
	}
	t.mu.Unlock()
	t.notify()
}

// Exec: pid ran a new program, info: it now counts for the blocks it
// matches, and no longer for the others.
func (t *ProcTracker) Exec(pid int, info ProcInfo) {
	t.mu.Lock()
	for _, c := range t.procs {
		if matchParams(c.cfg, c.params, info) {
			t.add(pid, c, byExec)
		} else {
			t.remove(pid, c, byExec)
		}
	}
	t.mu.Unlock()
	t.notify()
}

// Comm: pid changed its comm (prctl PR_SET_NAME): the blocks that match
// the comm count it or stop counting it; those matching the command line
// are not concerned.
func (t *ProcTracker) Comm(pid int, comm string) {
	t.mu.Lock()
	for _, c := range t.procs {
		if c.cfg.FullCommand {
			continue
		}
		if comm == c.cfg.Process {
			t.add(pid, c, byExec)
		} else {
			t.remove(pid, c, byExec)
		}
	}
	t.mu.Unlock()
	t.notify()
}

// Exit: pid ended.
func (t *ProcTracker) Exit(pid int) {
	t.mu.Lock()
	for _, c := range append([]*procCount(nil), t.pids[pid]...) {
		t.remove(pid, c, byExit)
	}
	delete(t.pids, pid)
	t.mu.Unlock()
	t.notify()
}

// Up says whether the block name has quorum; ok is false for a block not
// tracked.
func (t *ProcTracker) Up(name string) (up, ok bool) {
	if t == nil {
		return false, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.byName[name]
	if c == nil {
		return false, false
	}
	return c.up, true
}

// Count is how many processes count for the block name.
func (t *ProcTracker) Count(name string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c := t.byName[name]; c != nil {
		return c.count
	}
	return 0
}

// notify gives the pending changes to onChange, with no lock held.
func (t *ProcTracker) notify() {
	t.mu.Lock()
	list := t.pending
	t.pending = nil
	t.mu.Unlock()
	if len(list) > 0 && t.onChange != nil {
		t.onChange(list)
	}
}

// add counts pid for c. Reaching quorum, or going past quorum_max, takes
// effect at once, except for a fork with fork_delay (and no
// terminate_delay running, which the gain cancels instead).
func (t *ProcTracker) add(pid int, c *procCount, how procHow) bool {
	for _, o := range t.pids[pid] {
		if o == c {
			return false // counted once (keepalived counts an exec of a counted process again)
		}
	}
	t.pids[pid] = append(t.pids[pid], c)
	c.count++
	if c.count != c.cfg.Quorum && c.count != c.max+1 {
		return false
	}
	switch {
	case how == byFork && c.term != nil:
		c.stopTerm()
	case how == byFork && c.cfg.ForkDelay > 0:
		t.startFork(c)
		return false
	default:
		c.stopTerm()
	}
	return t.update(c, c.count == c.cfg.Quorum)
}

// remove stops counting pid for c. Falling below quorum, or back to
// quorum_max, takes effect at once, except for an exit with
// terminate_delay (and no fork_delay running, which the loss cancels
// instead).
func (t *ProcTracker) remove(pid int, c *procCount, how procHow) bool {
	list := t.pids[pid]
	i := -1
	for j, o := range list {
		if o == c {
			i = j
		}
	}
	if i < 0 {
		return false
	}
	t.pids[pid] = append(list[:i:i], list[i+1:]...)
	if len(t.pids[pid]) == 0 {
		delete(t.pids, pid)
	}
	old := c.count
	c.count--
	if old != c.cfg.Quorum && c.count != c.max {
		return false
	}
	switch {
	case how == byExit && c.fork != nil:
		c.stopFork()
	case how == byExit && c.cfg.TerminateDelay > 0:
		t.startTerm(c)
		return false
	default:
		c.stopFork()
	}
	return t.update(c, c.count == c.max)
}

func (t *ProcTracker) update(c *procCount, up bool) bool {
	if c.up == up {
		return false
	}
	c.up = up
	t.pending = append(t.pending, ProcChange{Name: c.cfg.Name, Up: up, Count: c.count})
	return true
}

func (t *ProcTracker) startFork(c *procCount) {
	c.stopFork()
	gen := c.forkGen
	c.fork = time.AfterFunc(c.cfg.ForkDelay, func() { t.expire(c, true, gen) })
}

func (t *ProcTracker) startTerm(c *procCount) {
	c.stopTerm()
	gen := c.termGen
	c.term = time.AfterFunc(c.cfg.TerminateDelay, func() { t.expire(c, false, gen) })
}

// expire ends a delay: the quorum is what the count makes it now.
func (t *ProcTracker) expire(c *procCount, fork bool, gen uint64) {
	t.mu.Lock()
	if fork && (c.fork == nil || c.forkGen != gen) || !fork && (c.term == nil || c.termGen != gen) {
		t.mu.Unlock()
		return
	}
	if fork {
		c.fork = nil
	} else {
		c.term = nil
	}
	t.update(c, c.cfg.InQuorum(c.count))
	t.mu.Unlock()
	t.notify()
}

func (c *procCount) stopFork() {
	if c.fork != nil {
		c.fork.Stop()
		c.fork = nil
	}
	c.forkGen++
}

func (c *procCount) stopTerm() {
	if c.term != nil {
		c.term.Stop()
		c.term = nil
	}
	c.termGen++
}

// Stop stops every delay; the tracker is not used after it.
func (t *ProcTracker) Stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range t.procs {
		c.stopFork()
		c.stopTerm()
	}
}

// ProcessUses are the track_process entries of an instance in its sync
// group g (nil if none), as keepalived's add_vrrp_to_track_process merges
// them: the group's entries follow the instance's, and one for a process
// the instance tracks already gives that entry its weight, unless the
// instance's weight is 0 (the instance's reverse stays).
func ProcessUses(in *config.Instance, g *config.SyncGroup) []config.TrackProcessUse {
	out := append([]config.TrackProcessUse(nil), in.TrackProcesses...)
	if g == nil {
		return out
	}
next:
	for _, u := range g.TrackProcesses {
		for i := range out {
			if out[i].Name == u.Name {
				if out[i].Weight != 0 {
					out[i].Weight = u.Weight
				}
				continue next
			}
		}
		out = append(out, u)
	}
	return out
}

// processTracked is what a tracked process's quorum does to an instance,
// as keepalived's initialise_process_tracking_priorities and
// process_update_track_process_status do it: weight 0 is a fault without
// quorum (with quorum, reversed); a positive weight is added with quorum,
// a negative one without, both negated when reversed (Effective's rule).
func processTracked(u config.TrackProcessUse, up bool) Tracked {
	return Tracked{Weight: u.Weight, Reverse: u.Reverse, Good: up}
}
