package vrrp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/directord/directord/config"
)

// Node runs the VRRP instances of a configuration on this host: one socket
// per interface and family, shared by the instances on it and demultiplexed
// by VRID; one Driver per instance; virtual addresses through Addrs.
type Node struct {
	retracking sync.Mutex
	pacers     map[string]*Pacer // per interface
	log        *slog.Logger
	addrs      *Addrs
	routes     *Routes
	groups     []*groupNotifier
	socks      []*sock
	insts      []*instance
	track      *tracking
	will       func(Testament) // OnTestament's
	willMu     sync.Mutex
	running    atomic.Bool // Run has started: it ends the tracking itself
	observe    atomic.Pointer[func(Event)]
}

// Event is an instance's change of state, for whatever follows VRRP (the
// IPVS sync daemons).
type Event struct {
	Instance string
	VRID     uint8
	From, To State
}

// Observe makes the Node call f with every transition of every instance,
// from the instance's goroutine: f must not block. It may be called while
// the Node runs (a reload that adds virtual servers).
func (n *Node) Observe(f func(Event)) { n.observe.Store(&f) }

// sock is one Conn with the instances that listen on it.
type sock struct {
	conn  *Conn
	ipv6  bool
	byID  map[uint8]*instance
	drops [dropReasons]atomic.Uint64 // before an instance is known
}

// instance is one configured instance at run time; it is the Actions of its
// Driver.
type instance struct {
	node     *Node
	cfg      *config.Instance
	sock     *sock
	drv      *Driver
	anns     map[string]*Announcer   // per device of its addresses
	annAddrs map[string][]netip.Addr // the addresses on each
	garps    chan int                // bursts to send, off the state machine's path
	params   Params
	expect   Expect
	primary  netip.Addr
	mcast    netip.Addr // the group it listens to; none when unicast
	dsts     []netip.Addr
	vips     []netip.Addr // in adverts
	buf      []byte

	group   *config.SyncGroup
	members []*instance // the others of its sync group
	forcing bool        // a transition the group forces: not passed on
	notes   *notifier
	gnotes  *groupNotifier // its sync group's, shared by the members
	state   atomic.Uint32  // the machine's state, for the group's notify

	drops       [dropReasons]atomic.Uint64
	sent        atomic.Uint64
	received    atomic.Uint64
	transitions atomic.Uint64
	since       atomic.Int64 // unix nanoseconds of the last transition
}

// NewNode opens the sockets of every instance of cfg. It must run on a
// thread inside the network namespace the instances belong to; h is a
// netlink handle for that namespace.
func NewNode(cfg *config.Config, h *netlink.Handle, log *slog.Logger) (*Node, error) {
	n := &Node{log: log, addrs: NewAddrs(h), routes: NewRoutes(h), pacers: map[string]*Pacer{}}
	socks := map[string]*sock{}
	for _, ci := range cfg.Instances {
		in, err := n.newInstance(cfg, ci, socks)
		if err != nil {
			n.Close()
			return nil, err
		}
		n.insts = append(n.insts, in)
	}
	groups := map[string]*config.SyncGroup{}
	for _, g := range cfg.SyncGroups {
		groups[g.Name] = g
	}
	for _, in := range n.insts {
		in.group = groups[in.cfg.SyncGroup]
	}
	gnotes := map[*config.SyncGroup]*groupNotifier{}
	for _, in := range n.insts {
		for _, o := range n.insts {
			if o != in && in.group != nil && o.group == in.group {
				in.members = append(in.members, o)
			}
		}
		if in.group != nil {
			if gnotes[in.group] == nil {
				gnotes[in.group] = &groupNotifier{group: in.group, queue: make(chan notification, 64), done: make(chan struct{}), log: log}
				n.groups = append(n.groups, gnotes[in.group])
			}
			in.gnotes = gnotes[in.group]
		}
	}
	// Removing a subnet's primary address removes its secondaries too,
	// unless the interface promotes them: a VIP leaving must not take an
	// operator's address (or another instance's VIP) with it.
	for _, ci := range cfg.Instances {
		for _, v := range append(append([]config.VIP{}, ci.VIPs...), ci.ExcludedVIPs...) {
			dev := v.Dev
			if dev == "" {
				dev = ci.Interface
			}
			if v.Prefix.Addr().Is4() && dev != "" {
				if err := os.WriteFile("/proc/sys/net/ipv4/conf/"+dev+"/promote_secondaries", []byte("1"), 0o644); err != nil {
					log.Warn("vrrp promote_secondaries", "interface", dev, "err", err)
				}
			}
		}
	}
	var err error
	if n.track, err = newTracking(n, cfg, h); err != nil {
		n.Close()
		return nil, fmt.Errorf("vrrp: tracking: %w", err)
	}
	return n, nil
}

// retrack recomputes every instance's priority and fault. A sync group is
// in fault while any member is: all its members then are.
func (n *Node) retrack(now time.Time) {
	// One at a time: a result computed earlier must not be sent after a
	// later one.
	n.retracking.Lock()
	defer n.retracking.Unlock()
	for _, in := range n.insts {
		p, fault := n.faultOf(in)
		in.drv.SetPriority(p)
		in.drv.SetFault(fault)
	}
}

func (n *Node) faultOf(in *instance) (uint8, bool) {
	p, fault := n.track.effective(in)
	for _, o := range in.members {
		if _, f := n.track.effective(o); f {
			fault = true
		}
	}
	return p, fault
}

func (n *Node) newInstance(cfg *config.Config, ci *config.Instance, socks map[string]*sock) (*instance, error) {
	ipv6 := ci.Family == "inet6"
	group := cfg.Global.MCastGroup4
	if ipv6 {
		group = cfg.Global.MCastGroup6
	}
	if ci.MCastDstIP.IsValid() {
		group = ci.MCastDstIP
	}
	unicast := len(ci.UnicastPeers) > 0
	if unicast {
		group = netip.Addr{}
	}
	key := fmt.Sprintf("%s/%v/%s", ci.Interface, ipv6, group)
	s := socks[key]
	if s == nil {
		conn, err := OpenConn(ci.Interface, ipv6, group)
		if err != nil {
			return nil, err
		}
		s = &sock{conn: conn, ipv6: ipv6, byID: map[uint8]*instance{}}
		socks[key] = s
		n.socks = append(n.socks, s)
	}
	in := &instance{node: n, cfg: ci, sock: s, buf: make([]byte, 0, 1500)}
	s.byID[uint8(ci.VRID)] = in
	var err error
	switch {
	case ci.UnicastSrcIP.IsValid():
		in.primary = ci.UnicastSrcIP
	case ci.MCastSrcIP.IsValid():
		in.primary = ci.MCastSrcIP
	default:
		if in.primary, err = PrimaryAddr(s.conn.Interface(), ipv6); err != nil {
			return nil, fmt.Errorf("instance %s: %w", ci.Name, err)
		}
	}
	if unicast {
		// One configuration often serves both peers: our own address in
		// the list is skipped.
		for _, p := range ci.UnicastPeers {
			if p.Addr != in.primary {
				in.dsts = append(in.dsts, p.Addr)
			}
		}
	} else {
		in.dsts = []netip.Addr{group}
		in.mcast = group
	}
	for _, v := range ci.VIPs {
		in.vips = append(in.vips, v.Prefix.Addr())
	}
	// One announcer per device the instance's addresses live on: each is
	// announced where it was added.
	in.anns = map[string]*Announcer{}
	in.annAddrs = map[string][]netip.Addr{}
	for _, v := range append(append([]config.VIP{}, ci.VIPs...), ci.ExcludedVIPs...) {
		dev := v.Dev
		if dev == "" {
			dev = ci.Interface
		}
		in.annAddrs[dev] = append(in.annAddrs[dev], v.Prefix.Addr())
	}
	for dev, addrs := range in.annAddrs {
		pace := n.pacers[dev]
		if pace == nil {
			pace = &Pacer{Gap4: cfg.Global.GarpInterval, Gap6: cfg.Global.GnaInterval}
			n.pacers[dev] = pace
		}
		ifi, err := net.InterfaceByName(dev)
		if err != nil {
			return nil, fmt.Errorf("instance %s: interface %s: %w", ci.Name, dev, err)
		}
		v4, v6 := false, false
		for _, a := range addrs {
			v4, v6 = v4 || a.Is4(), v6 || a.Is6()
		}
		if in.anns[dev], err = NewAnnouncer(ifi, v4, v6, pace); err != nil {
			return nil, fmt.Errorf("instance %s: %w", ci.Name, err)
		}
	}
	in.params = Params{
		Version: uint8(ci.Version), VRID: uint8(ci.VRID), Priority: uint8(ci.Priority),
		AdvertInt: ci.AdvertInt, Preempt: ci.Preempt, PreemptDelay: ci.PreemptDelay,
		Primary: in.primary, LowerPrioNoAdvert: ci.LowerPrioNoAdvert, HigherPrioSendAdvert: ci.HigherPrioSendAdvert,
		Garp: GarpParams{Repeat: ci.Garp.MasterRepeat, Delay: ci.Garp.MasterDelay,
			LowerPrioDelay: ci.Garp.LowerPrioDelay, LowerPrioRep: ci.Garp.LowerPrioRepeat,
			Refresh: ci.Garp.MasterRefresh, RefreshRepeat: ci.Garp.MasterRefreshRepeat},
	}
	in.expect = Expect{Version: uint8(ci.Version), Interval: in.interval(), Unicast: unicast,
		CheckSource: ci.CheckUnicastSrc && unicast}
	if ci.Auth != nil && ci.Version == 2 {
		in.expect.AuthType = AuthSimple
		if ci.Auth.Type == "AH" {
			in.expect.AuthType = AuthAH
		}
		copy(in.expect.AuthData[:], ci.Auth.Pass)
	}
	for _, p := range ci.UnicastPeers {
		in.expect.Peers = append(in.expect.Peers, p.Addr)
		in.expect.MinTTL = max(in.expect.MinTTL, uint8(p.MinTTL))
		if p.MaxTTL > 0 {
			in.expect.MaxTTL = uint8(p.MaxTTL)
		}
	}
	in.drv = NewDriver(in.params, in)
	return in, nil
}

// interval is our advert interval in the version's unit.
func (in *instance) interval() uint16 {
	if in.cfg.Version == 2 {
		return uint16(in.cfg.AdvertInt / time.Second)
	}
	return uint16(in.cfg.AdvertInt / (10 * time.Millisecond))
}

// Run runs every instance until ctx ends, then stops them cleanly
// (priority 0 adverts), removes the addresses it added and closes the
// sockets.
func (n *Node) Run(ctx context.Context) error {
	n.running.Store(true)
	var wg sync.WaitGroup
	runCtx, cancel := context.WithCancel(ctx)
	for _, s := range n.socks {
		wg.Add(1)
		go func() { defer wg.Done(); n.read(s) }()
	}
	trackCtx, stopTracking := context.WithCancel(context.Background())
	tracked := make(chan struct{})
	go func() { defer close(tracked); n.track.run(trackCtx) }()
	var drivers sync.WaitGroup
	var announcing []chan struct{}
	now := time.Now()
	for _, in := range n.insts {
		p, fault := n.faultOf(in)
		in.drv.Init(now, p, fault)
		in.notes = &notifier{in: in, queue: make(chan notification, 64), done: make(chan struct{})}
		go in.notes.run(n.track.runner)
		in.garps = make(chan int, 64)
		announced := make(chan struct{})
		announcing = append(announcing, announced)
		go in.announce(announced)
		drivers.Add(1)
		go func() { defer drivers.Done(); in.drv.Run(runCtx, true) }()
	}
	for _, g := range n.groups {
		go g.run(n.track.runner)
	}
	<-ctx.Done()
	cancel()
	drivers.Wait() // every master has sent its priority 0 advert
	for i, in := range n.insts {
		close(in.garps)
		<-announcing[i]
	}
	stopTracking()
	<-tracked
	err := errors.Join(n.routes.RemoveAll(), n.addrs.RemoveAll())
	n.Close()
	wg.Wait()
	for _, in := range n.insts {
		close(in.notes.queue)
		<-in.notes.done // notify_stop has run
	}
	for _, g := range n.groups {
		close(g.queue)
		<-g.done
	}
	return err
}

// Close closes the sockets.
//
// A Node that never ran (a reload that failed after preparing it) lets go
// of its link subscription too.
func (n *Node) Close() {
	if n.track != nil && !n.running.Load() {
		n.track.close()
	}
	for _, s := range n.socks {
		s.conn.Close()
	}
	for _, in := range n.insts {
		for _, a := range in.anns {
			a.Close()
		}
	}
}

// read receives on one socket until it is closed.
func (n *Node) read(s *sock) {
	buf := make([]byte, 9000)
	var a Advert
	a.Addrs = make([]netip.Addr, 0, MaxAddrs)
	for {
		nb, r, err := s.conn.Read(buf)
		var de *DecodeError
		if errors.As(err, &de) {
			s.drops[de.Reason].Add(1)
			continue
		}
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			n.log.Warn("vrrp read", "interface", s.conn.Interface().Name, "err", err)
			continue
		}
		if err := a.Unmarshal(buf[:nb], r.Src, r.Dst); err != nil {
			if errors.As(err, &de) {
				s.drops[de.Reason].Add(1)
			}
			continue
		}
		in := s.byID[a.VRID]
		if in == nil {
			s.drops[DropVRID].Add(1)
			continue
		}
		reason, own := admit(&a, r, in.mcast, in.primary, &in.expect)
		if reason != DropNone {
			in.drops[reason].Add(1)
			continue
		}
		if own {
			continue // our own advert, looped back
		}
		in.received.Add(1)
		in.drv.Receive(&a, r.Src)
	}
}

// SendAdvert is an Action: one advert to the group or each unicast peer.
func (in *instance) SendAdvert(prio uint8) {
	a := Advert{Version: in.params.Version, VRID: in.params.VRID, Priority: prio, Interval: in.interval(),
		AuthType: in.expect.AuthType, AuthData: in.expect.AuthData, Addrs: in.vips}
	for _, dst := range in.dsts {
		mode := PseudoHeader
		if in.cfg.ChecksumAsV2 {
			mode = MessageOnly
		}
		b, err := a.AppendMarshal(in.buf[:0], in.primary, dst, mode)
		if err == nil {
			err = in.sock.conn.Write(b, in.primary, dst)
		}
		if err != nil {
			in.node.log.Warn("vrrp send", "instance", in.cfg.Name, "vrid", in.cfg.VRID, "dst", dst, "err", err)
			continue
		}
		in.sent.Add(1)
	}
}

// SendGARP is an Action: n announcements of every virtual address.
func (in *instance) SendGARP(n int) {
	select {
	case in.garps <- n:
	default:
		in.node.log.Warn("vrrp announce queue full: burst dropped", "instance", in.cfg.Name)
	}
}

// announce sends the queued bursts until the queue is closed.
func (in *instance) announce(done chan<- struct{}) {
	defer close(done)
	for n := range in.garps {
		for i := 0; i < n; i++ {
			// A burst queued while master must not leave after the
			// addresses have gone to another router.
			if State(in.state.Load()) != Master {
				break
			}
			for dev, ann := range in.anns {
				if err := ann.Announce(in.annAddrs[dev]); err != nil {
					in.node.log.Warn("vrrp announce", "instance", in.cfg.Name, "err", err)
				}
			}
		}
	}
}

// Transition is an Action: a master holds the virtual addresses, any other
// state none.
func (in *instance) Transition(from, to State) {
	in.transitions.Add(1)
	in.since.Store(time.Now().UnixNano())
	in.node.log.Info("vrrp transition", "instance", in.cfg.Name, "vrid", in.cfg.VRID, "from", from.String(), "to", to.String())
	in.state.Store(uint32(to))
	if f := in.node.observe.Load(); f != nil {
		(*f)(Event{Instance: in.cfg.Name, VRID: uint8(in.cfg.VRID), From: from, To: to})
	}
	defer in.notify(to, in.drv.m.Priority())
	defer in.groupNotify(to)
	// The rest of a sync group follows a member that becomes master, or
	// that gives mastership up to another router.
	if !in.forcing && (to == Master || (from == Master && to == Backup)) {
		for _, o := range in.members {
			o.drv.Force(to, func(f bool) { o.forcing = f })
		}
	}
	switch {
	case to == Master:
		in.addresses(true)
		in.installRoutes(true)
		in.node.bequeath()
	case from == Master:
		// Routes before the addresses they may use as their source.
		in.installRoutes(false)
		in.addresses(false)
		in.node.bequeath()
	}
}

// addresses adds (on) or removes the instance's virtual addresses.
func (in *instance) addresses(on bool) {
	for _, v := range append(append([]config.VIP{}, in.cfg.VIPs...), in.cfg.ExcludedVIPs...) {
		dev := v.Dev
		if dev == "" {
			dev = in.cfg.Interface
		}
		var err error
		if on {
			err = in.node.addrs.Add(dev, v)
		} else {
			err = in.node.addrs.Remove(dev, v)
		}
		if err != nil {
			in.node.log.Error("vrrp address", "instance", in.cfg.Name, "err", err)
		}
	}
}

// installRoutes adds (on) or removes the instance's virtual routes.
func (in *instance) installRoutes(on bool) {
	for _, r := range in.cfg.Routes {
		var err error
		if on {
			err = in.node.routes.Add(r, in.cfg.Interface)
		} else {
			err = in.node.routes.Remove(r)
		}
		if err != nil {
			in.node.log.Error("vrrp route", "instance", in.cfg.Name, "err", err)
		}
	}
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

// ErrNoInstance is Yield's error for a name no instance has.
var ErrNoInstance = errors.New("no such VRRP instance")

// Yield starts (on) or ends an operator's hand-over for the instance
// named, with the rest of its sync group (a member alone would be forced
// back and forth by its group), or every instance for "" (Machine.Yield).
// It returns the instances it applies to. An address owner (priority 255)
// cannot hand over: its addresses stay its own.
func (n *Node) Yield(name string, on bool) ([]string, error) { return n.yield(name, on, false) }

// YieldFromStart is Yield for a Node that has not run yet: its instances
// start handed over (a reload that restarted VRRP keeps the hand-over).
func (n *Node) YieldFromStart(name string) ([]string, error) { return n.yield(name, true, true) }

func (n *Node) yield(name string, on, beforeRun bool) ([]string, error) {
	var targets []*instance
	for _, in := range n.insts {
		if name == "" || in.cfg.Name == name {
			targets = append(targets, in)
			if name != "" {
				targets = append(targets, in.members...)
			}
		}
	}
	if len(targets) == 0 {
		return nil, fmt.Errorf("%s: %w", name, ErrNoInstance)
	}
	if on {
		for _, in := range targets {
			if in.params.Priority == 255 {
				return nil, fmt.Errorf("%s owns its addresses (priority 255): it cannot hand them over", in.cfg.Name)
			}
		}
	}
	var names []string
	for _, in := range targets {
		if beforeRun {
			in.drv.m.Yield(time.Now(), on) // no goroutine has the machine yet
		} else {
			in.drv.Yield(on)
		}
		names = append(names, in.cfg.Name)
	}
	return names, nil
}

// Status reports every instance.
func (n *Node) Status(ctx context.Context) ([]InstanceStatus, error) {
	var out []InstanceStatus
	for _, in := range n.insts {
		st, err := in.drv.Status(ctx)
		if err != nil {
			return nil, err
		}
		s := InstanceStatus{Name: in.cfg.Name, State: st.State, Priority: st.Priority, MasterAddr: st.MasterAddr,
			Yielding: st.Yielding, Primary: in.primary,
			Sent: in.sent.Load(), Received: in.received.Load(), Transitions: in.transitions.Load(), Drops: map[string]uint64{}}
		if ns := in.since.Load(); ns != 0 {
			s.Since = time.Unix(0, ns)
		}
		for _, r := range DropReasons() {
			if v := in.drops[r].Load() + in.sock.drops[r].Load(); v > 0 {
				s.Drops[r.String()] = v
			}
		}
		out = append(out, s)
	}
	return out, nil
}
