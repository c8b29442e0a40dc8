package vrrp

import (
	"context"
	"net"
	"sync"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/directord/directord/config"
	"github.com/directord/directord/internal/alert"
	"github.com/directord/directord/internal/script"
)

// tracking holds what the instances of a Node track: vrrp_scripts, run
// here, and interfaces, followed through netlink link updates.
type tracking struct {
	node     *Node
	runner   script.Runner
	queue    *script.Queue // runs the notify scripts
	ownQueue bool          // the queue is the node's own: Run waits for it
	alerts   *alert.Mailer // mails smtp_alert transitions; nil mails none
	mu       sync.Mutex
	scripts  map[string]*trackedScript
	links    map[string]bool // interface name: up
	names    map[int]string  // interface index: name, to see a rename
	watch    *linkWatch      // in the instances' namespace
	files    *fileWatch      // the track_files (trackfile_linux.go); nil if none
	procs    *procWatch      // the vrrp_track_processes (trackproc_linux.go); nil if none
	h        *netlink.Handle
	// sysIndex is, per link name, the index of the link last seen under
	// it, whose sysctls the Node's saved values are of (relinkSysctls);
	// under the Node's promMu.
	sysIndex map[string]int
}

// close ends the link subscription; it may be called more than once.
func (t *tracking) close() { t.watch.Close(); t.files.close(); t.procs.close() }

type trackedScript struct {
	cfg   *config.VRRPScript
	check *Check
}

// newTracking reads the interfaces' state and subscribes to their changes;
// like NewNode, it must run inside the instances' namespace.
func newTracking(n *Node, cfg *config.Config, h *netlink.Handle) (*tracking, error) {
	t := &tracking{node: n, runner: script.NewRunner(&cfg.Global), queue: script.NewQueue(n.log), ownQueue: true,
		scripts: map[string]*trackedScript{}, links: map[string]bool{}, names: map[int]string{},
		sysIndex: map[string]int{}, h: h}
	on, off := scriptsTracked(cfg, func(c *config.VRRPScript) error { return t.runner.Prog(c.Script).Disabled })
	for _, d := range off {
		n.log.Warn("vrrp_script disabled: no instance tracks it", "vrrp_script", d.Name, "reason", d.Reason.Error())
	}
	for _, c := range on {
		t.scripts[c.Name] = &trackedScript{cfg: c, check: NewCheck(c.Rise, c.Fall, c.InitFail)}
	}
	var err error
	if t.files, err = newFileWatch(cfg, trackedFiles(cfg), n.log); err != nil {
		return nil, err
	}
	t.procs = newProcWatch(trackedProcesses(cfg), &cfg.Global, n.log, func(changes []ProcChange) {
		for _, c := range changes {
			// keepalived: "Quorum gained/lost for tracked process NAME".
			n.log.Info("vrrp tracked process", "track_process", c.Name, "quorum_up", c.Up, "processes", c.Count)
		}
		n.retrack(time.Now())
	})
	// Subscribed before the links are read: a change in between is not
	// lost. This thread is in the instances' namespace (NewNode's rule).
	if t.watch, err = openLinkWatch(); err != nil {
		t.files.close()
		t.procs.close()
		return nil, err
	}
	links, err := h.LinkList()
	if err != nil {
		t.close()
		return nil, err
	}
	for _, l := range links {
		t.links[l.Attrs().Name] = linkUp(l)
		t.names[l.Attrs().Index] = l.Attrs().Name
		t.sysIndex[l.Attrs().Name] = l.Attrs().Index
	}
	return t, nil
}

// relist reads every link's state afresh, after the subscription lost
// messages. It runs on run's goroutine; the handle works from any thread.
func (t *tracking) relist() {
	if links, err := t.h.LinkList(); err == nil {
		t.mu.Lock()
		// A name not listed any more (deleted or renamed while the
		// updates were lost) is down: a missing name reads as down.
		clear(t.links)
		clear(t.names)
		for _, l := range links {
			t.links[l.Attrs().Name] = linkUp(l)
			t.names[l.Attrs().Index] = l.Attrs().Name
		}
		t.mu.Unlock()
		t.node.relistSocks()
		t.node.retrack(time.Now())
	}
}

func linkUp(l netlink.Link) bool {
	a := l.Attrs()
	return a.Flags&net.FlagUp != 0 && (a.OperState == netlink.OperUp || a.OperState == netlink.OperUnknown)
}

// run runs the scripts and follows the links until ctx ends.
func (t *tracking) run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, s := range t.scripts {
		wg.Add(1)
		go func() { defer wg.Done(); t.runScript(ctx, s) }()
	}
	if t.files != nil {
		wg.Add(1)
		go func() { defer wg.Done(); t.files.run(ctx, func() { t.node.retrack(time.Now()) }) }()
	}
	if t.procs != nil {
		wg.Add(1)
		go func() { defer wg.Done(); t.procs.run(ctx) }()
	}
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			t.close()
			return
		case <-t.watch.lost:
			// The kernel dropped link messages (ENOBUFS): read every
			// link afresh, or interface tracking would silently miss one.
			t.node.log.Warn("vrrp link updates lost: reading every link afresh")
			t.relist()
		case u := <-t.watch.updates:
			name, up := u.Link.Attrs().Name, linkUp(u.Link)
			if u.Header.Type == 17 { // RTM_DELLINK
				up = false
			}
			relinked := t.node.relink(u) // sockets on a new interface (dynif_linux.go)
			t.mu.Lock()
			changed := t.links[name] != up
			t.links[name] = up
			index := u.Link.Attrs().Index
			if old, ok := t.names[index]; ok && old != name && t.links[old] {
				// Renamed: the name tracked is gone with it, as
				// keepalived's cleanup_lost_interface at "Interface name
				// has changed" (a link made under the old name, seen
				// next, is tracked then).
				t.links[old] = false
				changed = true
			}
			if u.Header.Type == 17 {
				delete(t.names, index)
			} else {
				t.names[index] = name
			}
			t.mu.Unlock()
			if changed || relinked {
				t.node.log.Info("vrrp tracked interface", "interface", name, "up", up)
				t.node.retrack(time.Now())
			}
		}
	}
}

func (t *tracking) runScript(ctx context.Context, s *trackedScript) {
	tick := time.NewTicker(s.cfg.Interval)
	defer tick.Stop()
	for {
		res := t.runner.Run(ctx, s.cfg.Script, s.cfg.Timeout)
		if ctx.Err() != nil {
			return
		}
		t.mu.Lock()
		changed := s.check.Result(res.OK())
		good := s.check.Good()
		t.mu.Unlock()
		if changed {
			t.node.log.Info("vrrp_script", "vrrp_script", s.cfg.Name, "good", good, "exit", res.ExitCode, "err", res.Err)
			t.node.retrack(time.Now())
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// effective computes an instance's priority and fault from what it and its
// sync group track.
func (t *tracking) effective(in *instance) (uint8, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	list := trackedOf(in.cfg, in.group, in.srcMissing, trackSeen{t})
	// No socket: its interface is missing (dynif_linux.go).
	list = append(list, Tracked{Good: in.sock.conn.Load() != nil})
	return Effective(uint8(in.cfg.Priority), list)
}

// trackSeen is the tracking's trackView, read under its mutex.
type trackSeen struct{ t *tracking }

func (v trackSeen) script(name string) (bool, bool) {
	if s := v.t.scripts[name]; s != nil {
		return s.check.Good(), true
	}
	return false, false
}

func (v trackSeen) link(name string) bool             { return v.t.links[name] }
func (v trackSeen) file(name string) (int64, bool)    { return v.t.files.value(name) }
func (v trackSeen) process(name string) (up, ok bool) { return v.t.procs.up(name) }

// ShareScripts makes the node's scripts run on q, which outlives the
// node: Run then returns without waiting for its notify scripts (a reload
// that restarts VRRP must not wait for them). Without it the node runs
// them on a queue of its own and Run waits for them. Call it before Run.
func (n *Node) ShareScripts(q *script.Queue) {
	n.track.queue, n.track.ownQueue = q, false
}

// SetAlerts makes the node mail the transitions of its instances and
// sync groups that have smtp_alert to m, which outlives the node (it
// keeps the last state mailed across reloads). Call it before Run.
func (n *Node) SetAlerts(m *alert.Mailer) { n.track.alerts = m }

// scriptsDone waits, at the end of Run, for the scripts of a queue of the
// node's own.
func (t *tracking) scriptsDone() {
	if t.ownQueue {
		t.queue.Close()
		t.queue.Wait(context.Background())
	}
}

// notify queues an instance's notify scripts for a transition: in the
// order of its transitions, without holding up the state machine.
func (in *instance) notify(from, to State, prio uint8) {
	t := in.node.track
	state, tell := noticeOf(from, to, in.deleted.Load(), in.cfg.Notify.Deleted != nil)
	if !tell {
		return
	}
	if in.cfg.SMTPAlert {
		t.alerts.Instance(in.cfg.Name, state)
	}
	for _, j := range script.NotifyJobs(t.runner, &in.cfg.Notify, "INSTANCE", in.cfg.Name, state, int(prio)) {
		t.queue.Submit(j)
	}
	in.node.fifoInstance(in.cfg.Name, state, int(prio))
}

// groupNotify is called on every member transition: the group's notify
// runs when every member has reached the same state.
func (in *instance) groupNotify(to State) {
	if in.sync == nil || !in.sync.settled(to) {
		return
	}
	g := in.sync.group.cfg
	t := in.node.track
	if g.SMTPAlert {
		t.alerts.Group(g.Name, notifyState(to))
	}
	for _, j := range script.NotifyJobs(t.runner, &g.Notify, "GROUP", g.Name, notifyState(to), 0) {
		t.queue.Submit(j)
	}
	in.node.fifoGroup(g.Name, notifyState(to))
}
