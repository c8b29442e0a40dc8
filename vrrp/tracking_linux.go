package vrrp

import (
	"context"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/directord/directord/config"
	"github.com/directord/directord/internal/script"
)

// tracking holds what the instances of a Node track: vrrp_scripts, run
// here, and interfaces, followed through netlink link updates.
type tracking struct {
	node    *Node
	runner  script.Runner
	mu      sync.Mutex
	scripts map[string]*trackedScript
	links   map[string]bool // interface name: up
	updates chan netlink.LinkUpdate
	done    chan struct{}
	h       *netlink.Handle
	ns      *netns.NsHandle // the namespace the instances live in
	closed  sync.Once
}

// close ends the link subscription and lets the namespace go.
func (t *tracking) close() {
	t.closed.Do(func() {
		close(t.done)
		if t.ns != nil {
			t.ns.Close()
		}
	})
}

type trackedScript struct {
	cfg   *config.VRRPScript
	check *Check
}

// newTracking reads the interfaces' state and subscribes to their changes;
// like NewNode, it must run inside the instances' namespace.
func newTracking(n *Node, cfg *config.Config, h *netlink.Handle) (*tracking, error) {
	t := &tracking{node: n, runner: script.Runner{User: cfg.Global.ScriptUser, Group: cfg.Global.ScriptGroup},
		scripts: map[string]*trackedScript{}, links: map[string]bool{},
		updates: make(chan netlink.LinkUpdate, 64), done: make(chan struct{}), h: h}
	if ns, err := netns.Get(); err == nil {
		t.ns = &ns // this thread's: NewNode runs inside the namespace
	}
	byName := map[string]*config.VRRPScript{}
	for _, s := range cfg.Scripts {
		byName[s.Name] = s
	}
	use := func(ts []config.TrackScript) {
		for _, s := range ts {
			if c, ok := byName[s.Name]; ok && t.scripts[s.Name] == nil {
				t.scripts[s.Name] = &trackedScript{cfg: c, check: NewCheck(c.Rise, c.Fall, c.InitFail)}
			}
		}
	}
	for _, in := range cfg.Instances {
		use(in.TrackScripts)
	}
	for _, g := range cfg.SyncGroups {
		use(g.TrackScripts)
	}
	links, err := h.LinkList()
	if err != nil {
		return nil, err
	}
	for _, l := range links {
		t.links[l.Attrs().Name] = linkUp(l)
	}
	if err := netlink.LinkSubscribeWithOptions(t.updates, t.done, netlink.LinkSubscribeOptions{Namespace: t.ns}); err != nil {
		return nil, err
	}
	return t, nil
}

// resubscribe renews the link subscription and the links' state. It runs
// on run's goroutine; the handle works from any thread.
func (t *tracking) resubscribe() {
	t.updates = make(chan netlink.LinkUpdate, 64)
	opts := netlink.LinkSubscribeOptions{Namespace: t.ns, ErrorCallback: func(err error) {
		t.node.log.Warn("vrrp link subscription", "err", err)
	}}
	if err := netlink.LinkSubscribeWithOptions(t.updates, t.done, opts); err != nil {
		t.node.log.Error("vrrp link subscription", "err", err)
		t.updates = nil // no updates rather than a spinning loop
		return
	}
	if links, err := t.h.LinkList(); err == nil {
		t.mu.Lock()
		for _, l := range links {
			t.links[l.Attrs().Name] = linkUp(l)
		}
		t.mu.Unlock()
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
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			t.close()
			return
		case u, ok := <-t.updates:
			if !ok {
				// The subscription ended (a receive error such as ENOBUFS):
				// subscribe again and read every link afresh, or interface
				// tracking would silently stop.
				t.node.log.Warn("vrrp link subscription ended: subscribing again")
				t.resubscribe()
				continue
			}
			name, up := u.Link.Attrs().Name, linkUp(u.Link)
			if u.Header.Type == 17 { // RTM_DELLINK
				up = false
			}
			t.mu.Lock()
			changed := t.links[name] != up
			t.links[name] = up
			t.mu.Unlock()
			if changed {
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
			t.node.log.Info("vrrp_script", "script", s.cfg.Name, "good", good, "exit", res.ExitCode, "err", res.Err)
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
	var list []Tracked
	addScripts := func(ts []config.TrackScript) {
		for _, s := range ts {
			if st := t.scripts[s.Name]; st != nil {
				list = append(list, Tracked{Weight: s.Weight, Reverse: s.Reverse, Good: st.check.Good()})
			}
		}
	}
	addLinks := func(ti []config.TrackInterface) {
		for _, l := range ti {
			list = append(list, Tracked{Weight: l.Weight, Reverse: l.Reverse, Good: t.links[l.Name]})
		}
	}
	addScripts(in.cfg.TrackScripts)
	addLinks(in.cfg.TrackInterfaces)
	if g := in.group; g != nil {
		addScripts(g.TrackScripts)
		addLinks(g.TrackInterfaces)
	}
	if !in.cfg.DontTrackPrimary && in.cfg.Interface != "" {
		list = append(list, Tracked{Good: t.links[in.cfg.Interface]})
	}
	list = append(list, Tracked{Good: !in.srcMissing})
	return Effective(uint8(in.cfg.Priority), list)
}

// notifier runs an instance's notify scripts in the order of its
// transitions, without holding up the state machine.
type notifier struct {
	in    *instance
	queue chan notification
	done  chan struct{}
}

type notification struct {
	to   State
	prio uint8
}

func (in *instance) notify(to State, prio uint8) {
	select {
	case in.notes.queue <- notification{to, prio}:
	default:
		in.node.log.Warn("vrrp notify queue full: notification dropped", "instance", in.cfg.Name, "state", to.String())
	}
}

func (nf *notifier) run(r script.Runner) {
	defer close(nf.done)
	for n := range nf.queue {
		cfg := nf.in.cfg
		var s *config.Script
		state := n.to.String()
		switch n.to {
		case Master:
			s = cfg.Notify.Master
		case Backup:
			s = cfg.Notify.Backup
		case Fault:
			s = cfg.Notify.Fault
		case Initialize:
			s, state = cfg.Notify.Stop, "STOP"
		}
		for _, sc := range []*config.Script{s} {
			if sc != nil && len(sc.Args) > 0 {
				nf.result(sc, r.Run(context.Background(), sc, 30*time.Second))
			}
		}
		if a := cfg.Notify.Any; a != nil && len(a.Args) > 0 {
			nf.result(a, r.Run(context.Background(), a, 30*time.Second, "INSTANCE", cfg.Name, state, strconv.Itoa(int(n.prio))))
		}
	}
}

func (nf *notifier) result(s *config.Script, res script.Result) {
	if !res.OK() {
		nf.in.node.log.Warn("vrrp notify script failed", "instance", nf.in.cfg.Name, "script", s.Command, "exit", res.ExitCode, "err", res.Err)
	}
}

// groupNotifier runs a sync group's notify scripts when the group's state
// changes: when every member has reached the same state.
type groupNotifier struct {
	group *config.SyncGroup
	log   *slog.Logger
	mu    sync.Mutex
	last  State
	queue chan notification
	done  chan struct{}
}

// groupNotify is called on every member transition.
func (in *instance) groupNotify(to State) {
	g := in.gnotes
	if g == nil {
		return
	}
	for _, o := range in.members {
		if State(o.state.Load()) != to {
			return
		}
	}
	g.mu.Lock()
	changed := g.last != to
	g.last = to
	g.mu.Unlock()
	if !changed {
		return
	}
	select {
	case g.queue <- notification{to: to}:
	default:
		g.log.Warn("vrrp group notify queue full: notification dropped", "group", g.group.Name)
	}
}

func (g *groupNotifier) run(r script.Runner) {
	defer close(g.done)
	for n := range g.queue {
		var s *config.Script
		state := n.to.String()
		switch n.to {
		case Master:
			s = g.group.Notify.Master
		case Backup:
			s = g.group.Notify.Backup
		case Fault:
			s = g.group.Notify.Fault
		case Initialize:
			s, state = g.group.Notify.Stop, "STOP"
		}
		if s != nil && len(s.Args) > 0 {
			if res := r.Run(context.Background(), s, 30*time.Second); !res.OK() {
				g.log.Warn("vrrp group notify script failed", "group", g.group.Name, "script", s.Command, "exit", res.ExitCode, "err", res.Err)
			}
		}
		if a := g.group.Notify.Any; a != nil && len(a.Args) > 0 {
			if res := r.Run(context.Background(), a, 30*time.Second, "GROUP", g.group.Name, state, "0"); !res.OK() {
				g.log.Warn("vrrp group notify script failed", "group", g.group.Name, "script", a.Command, "exit", res.ExitCode, "err", res.Err)
			}
		}
	}
}
