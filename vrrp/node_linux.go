package vrrp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

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
	rules      *Rules
	groups     []*syncGroup
	socks      []*sock
	insts      []*instance
	track      *tracking
	will       func(Testament) // OnTestament's
	willMu     sync.Mutex
	running    atomic.Bool // Run has started: it ends the tracking itself
	// startupDelay is vrrp_startup_delay; delayUntil its end, set when
	// Run first starts (or taken over by Adopt: a reload does not delay
	// again).
	startupDelay time.Duration
	delayUntil   time.Time
	adopted      bool
	// sysctlPaths are the sysctl files it sets (setSysctl); promoted
	// those it changed, by path, with the value to restore.
	promMu      sync.Mutex
	sysctlPaths []string
	promoted    map[string]*sysctlSave
	// promoteDevs are the interfaces whose promote_secondaries the Node
	// sets (promoteDevices), set again on one made again (relinkSysctls).
	promoteDevs []string
	h           *netlink.Handle
	// vmacs are the macvlans of the use_vmac instances; rpCleared: the
	// Node has done clearRPFilter.
	vmacs     []*vmacLink
	vmacMu    sync.Mutex // vmacs: the tracking goroutine makes them again (dynif_linux.go)
	rpCleared bool
	observe   atomic.Pointer[func(Event)]
	fifo      func(line string)   // NotifyFIFO's
	fifoPrio  map[*instance]uint8 // the priorities last seen, under retracking
	fw        Firewall            // SetFirewall's; nil: no rules
	// global is the configuration's global_defs: which tables keep the
	// macvlans (config.Instance.VMACTables).
	global *config.Global
	// ns is the instances' namespace, where sockets reopen (inNS);
	// allowIfChanges is dynamic_interfaces allow_if_changes (sockStep).
	ns             netns.NsHandle
	allowIfChanges bool
}

// Firewall drops the traffic to and from a master's virtual addresses
// while it holds them without accept mode (internal/nft's Table).
type Firewall interface {
	Drop(addrs []netip.Addr, on bool) error
}

// SetFirewall makes the instances that are not in accept mode
// (config.Instance.DropsVIPs) drop the traffic to their VIPs while
// master, as keepalived's vrrp_handle_accept_mode: the rule before the
// addresses on becoming master, removed after them on leaving. Call it
// before Run.
func (n *Node) SetFirewall(f Firewall) { n.fw = f }

// firewall starts (on) or stops dropping the instance's VIPs, if it
// drops them.
func (in *instance) firewall(on bool) {
	if in.node.fw == nil || !in.cfg.DropsVIPs() {
		return
	}
	var addrs []netip.Addr
	for _, a := range instanceAddrs(in.cfg) {
		addrs = append(addrs, a.VIP.Prefix.Addr())
	}
	if err := in.node.fw.Drop(addrs, on); err != nil {
		in.logger().Error("vrrp firewall", "err", err)
	}
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
	conn atomic.Pointer[Conn] // nil while its interface is missing (dynif_linux.go)
	sockLink
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
	mode     ChecksumMode // its adverts'
	ahTTL    uint8        // the TTL its AH headers are computed with
	expect   Expect
	primary  netip.Addr
	mcast    netip.Addr // the group it listens to; none when unicast
	dsts     []netip.Addr
	vips     []netip.Addr // in adverts
	buf      []byte
	ah       *AHState   // auth_type AH
	abuf     []byte     // the AH packet around buf's message
	advSrc   netip.Addr // the last master heard as backup (read's own): skip_check_adv_addr
	// extraDue is when a master next announces on its other interfaces
	// (garp_extra_if), in unix nanoseconds.
	extraDue atomic.Int64
	// srcMissing: a unicast instance's configured source is no address of
	// this host, which keeps it in FAULT (srcAbsent).
	srcMissing bool
	// primaryKnown: primary is set (with dynamic_interfaces, an
	// interface missing at start gives it when created: attachInstances).
	primaryKnown atomic.Bool

	group *config.SyncGroup
	sync  *syncMember   // its place in its sync group; nil outside any
	state atomic.Uint32 // the machine's state, for the group's notify

	// deleted: a reload removed the instance; its stop tells the notify
	// scripts DELETED (notify_deleted) or FAULT instead of STOP.
	deleted    atomic.Bool
	ownerClash atomic.Bool // another address owner was heard and logged
	resumed    bool        // Adopt resumes it from its predecessor
	// noPeer: unicast_fault_no_peer with no unicast_peer at all: always
	// in fault.
	noPeer bool

	drops [dropReasons]atomic.Uint64
	counters
}

// NewNode opens the sockets of every instance of cfg. It must run on a
// thread inside the network namespace the instances belong to; h is a
// netlink handle for that namespace.
func NewNode(cfg *config.Config, h *netlink.Handle, log *slog.Logger) (*Node, error) {
	return NewNodeFirewall(cfg, h, log, nil)
}

// NewNodeFirewall is NewNode with its Firewall (SetFirewall) from the
// start: the macvlans it makes for IPv6 go in the firewall's table
// before they come up (VMACFirewall, vmac_linux.go).
func NewNodeFirewall(cfg *config.Config, h *netlink.Handle, log *slog.Logger, fw Firewall) (*Node, error) {
	n := &Node{log: log, h: h, addrs: NewAddrs(h), routes: NewRoutes(h), rules: NewRules(h), pacers: map[string]*Pacer{},
		startupDelay: cfg.Global.StartupDelay, ns: netns.None(), allowIfChanges: cfg.Global.AllowIfChanges, fw: fw,
		global: &cfg.Global}
	if ns, err := netns.Get(); err == nil {
		n.ns = ns // this thread's: the instances'
	}
	n.disableLocalIGMP(&cfg.Global) // igmp_linux.go
	socks := map[string]*sock{}
	for _, ci := range cfg.Instances {
		if ci.VMAC == nil {
			continue
		}
		if cfg.Global.DynamicInterfaces && !n.linkExists(ci.Interface) {
			// Made when its interface is (remakeVMACs, dynif_linux.go).
			n.log.Warn("vrrp: interface does not exist yet: its macvlan is made when it is created (dynamic_interfaces)",
				"instance", ci.Name, "interface", ci.Interface, "macvlan", ci.VMAC.Name)
			continue
		}
		if err := n.vmac(ci); err != nil {
			n.Close()
			return nil, fmt.Errorf("vrrp: %w", err)
		}
	}
	for _, ci := range cfg.Instances {
		if err := n.addrVMACs(ci, cfg.Global.DynamicInterfaces); err != nil { // vmac_linux.go
			n.Close()
			return nil, fmt.Errorf("vrrp: %w", err)
		}
	}
	for _, ci := range cfg.Instances {
		in, err := n.newInstance(cfg, ci, socks)
		if err != nil {
			n.Close()
			return nil, err
		}
		n.insts = append(n.insts, in)
	}
	var members []*syncMember
	members, n.groups = newSyncGroups(cfg.SyncGroups, cfg.Instances)
	for i, in := range n.insts {
		if m := members[i]; m != nil {
			in.sync, in.group = m, m.group.cfg
			m.state, m.force = &in.state, in.drv.Force
		}
	}
	// promote_secondaries, restored when the Node ends.
	n.promoteDevs = promoteDevices(cfg.Instances)
	for _, dev := range n.promoteDevs {
		n.setSysctl(promotePath(dev), "1")
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
		n.fifoPriority(in, p)
		in.drv.SetPriority(p)
		in.drv.SetFault(fault)
	}
}

// faultOf is an instance's effective priority, and its fault with its
// sync group's (syncMember.fault).
func (n *Node) faultOf(in *instance) (uint8, bool) {
	p, fault := n.track.effective(in)
	fault = in.sync.fault(fault || in.noPeer, func(i int) bool {
		_, f := n.track.effective(n.insts[i])
		return f
	})
	return p, fault
}

func (n *Node) newInstance(cfg *config.Config, ci *config.Instance, socks map[string]*sock) (*instance, error) {
	ss := socketOf(cfg, ci)
	if ss.NoPeer {
		n.log.Warn("vrrp instance has no unicast peer: FAULT (unicast_fault_no_peer)", "instance", ci.Name, "vrid", ci.VRID)
	}
	s := socks[ss.Key]
	if s == nil {
		open := OpenConn
		if ss.AH {
			open = func(ifname string, _ bool, group netip.Addr) (*Conn, error) { return OpenAHConn(ifname, group) }
		}
		openConn := func() (*Conn, error) {
			conn, err := open(ss.Interface, ss.IPv6, ss.Group)
			if err == nil && ss.Unicast {
				if err = conn.SetUnicastTTL(ss.TTL); err != nil {
					conn.Close()
					err = fmt.Errorf("vrrp: unicast_ttl on %s: %w", ss.Interface, err)
				}
			}
			return conn, err
		}
		s = &sock{sockLink: newSockLink(ss.Interface, openConn), ipv6: ss.IPv6, byID: map[uint8]*instance{}}
		if err := n.openSock(s, cfg.Global.DynamicInterfaces); err != nil {
			return nil, err
		}
		socks[ss.Key] = s
		n.socks = append(n.socks, s)
	}
	in := &instance{node: n, cfg: ci, sock: s, buf: make([]byte, 0, 1500), noPeer: ss.NoPeer}
	s.byID[uint8(ci.VRID)] = in
	var err error
	in.primaryKnown.Store(true)
	src, configured := configuredSrc(ci)
	in.primary = src
	switch {
	case configured:
	case s.conn.Load() == nil:
		// Its interface is not there yet (dynamic_interfaces): the
		// address comes when it is (attachInstances).
		in.primaryKnown.Store(false)
	default:
		// The interface's own address, also for a macvlan's adverts
		// (keepalived's VRRP_PKT_SADDR: the configured interface's).
		ifi := s.conn.Load().Interface()
		if ci.VMAC != nil {
			if ifi, err = net.InterfaceByName(ci.Interface); err != nil {
				return nil, fmt.Errorf("vrrp: instance %s: interface %s: %w", ci.Name, ci.Interface, err)
			}
		}
		if in.primary, err = PrimaryAddr(ifi, ss.IPv6); err != nil {
			return nil, fmt.Errorf("vrrp: instance %s: %w", ci.Name, err)
		}
	}
	if ss.Unicast && configured && srcAbsent(in.primary) {
		in.srcMissing = true
		in.logger().Warn("vrrp source address is not on this host: the instance stays in FAULT, as keepalived's does",
			"src", in.primary)
	}
	as := advertOf(ci, ss, in.primary)
	in.mode, in.ahTTL = as.Mode, as.AHTTL
	in.dsts, in.mcast, in.vips = as.Dsts, as.MCast, as.VIPs
	in.params, in.expect = as.Params, as.Expect
	if ss.AH {
		in.ah = &AHState{Key: as.AHKey, Unicast: ss.Unicast}
		in.abuf = make([]byte, 0, 1500)
	}
	// One announcer per device the instance's addresses live on: each is
	// announced where it was added.
	in.anns = map[string]*Announcer{}
	in.annAddrs = addrsByDev(ci)
	for dev, addrs := range in.annAddrs {
		pace := n.pacers[dev]
		if pace == nil {
			pace = &Pacer{Gap4: cfg.Global.GarpInterval, Gap6: cfg.Global.GnaInterval}
			n.pacers[dev] = pace
		}
		v4, v6 := false, false
		for _, a := range addrs {
			v4, v6 = v4 || a.Is4(), v6 || a.Is6()
		}
		ifi, err := net.InterfaceByName(dev)
		if err != nil && cfg.Global.DynamicInterfaces && !n.linkExists(dev) {
			in.anns[dev] = placeholderAnnouncer(dev, v4, v6, pace) // until it is created
			continue
		}
		if err != nil {
			in.closeAnnouncers()
			return nil, fmt.Errorf("vrrp: instance %s: interface %s: %w", ci.Name, dev, err)
		}
		if in.anns[dev], err = NewAnnouncer(ifi, v4, v6, pace); err != nil {
			delete(in.anns, dev)
			in.closeAnnouncers()
			return nil, fmt.Errorf("vrrp: instance %s: %w", ci.Name, err)
		}
	}
	in.drv = NewDriver(in.params, in)
	return in, nil
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
	if !n.adopted && n.startupDelay > 0 {
		n.delayUntil = now.Add(n.startupDelay)
		n.log.Info("vrrp: no instance becomes master before the startup delay ends", "vrrp_startup_delay", n.startupDelay)
	}
	for _, in := range n.insts {
		p, fault := n.faultOf(in)
		n.fifoPriorityStart(in, p)
		in.drv.m.DelayStart(n.delayUntil)
		in.drv.Init(now, p, fault)
		in.garps = make(chan int, 64)
		announced := make(chan struct{})
		announcing = append(announcing, announced)
		go in.announce(announced)
		drivers.Add(1)
		go func() { defer drivers.Done(); in.drv.Run(runCtx, true) }()
	}
	for _, in := range n.insts {
		if in.resumed && State(in.state.Load()) == Master {
			n.bequeath() // the masters it took over from its predecessor
			break
		}
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
	err := errors.Join(n.rules.RemoveAll(), n.routes.RemoveAll(), n.addrs.RemoveAll(), n.removeVMACs(true))
	n.Close()
	wg.Wait()
	n.track.scriptsDone() // notify_stop has run, unless the queue is shared
	return err
}

// Adopt prepares n, not yet run, to take over from old, still running,
// as a reload does (plan is PlanReload's): each instance Kept or Changed
// leaves old at once, without a priority 0 advert or a transition, and
// resumes in n in the state it had (Machine.Resume), its addresses and
// routes handed over without leaving the interface; of a master's
// addresses those the new configuration adds are added (and announced),
// those it drops stay with old, which removes them when it stops, as do
// the instances Removed (notify DELETED or FAULT: notify_deleted). The
// vrrp_scripts' results carry over by name. old stops writing testaments:
// n writes them from its start.
//
// Then run n and stop old, in that order, so that the masters' adverts
// pause only between the two.
func (n *Node) Adopt(old *Node, plan []InstancePlan) {
	n.adopted, n.delayUntil = true, old.delayUntil
	n.takeSysctls(old)
	n.takeVMACs(old)
	old.willMu.Lock()
	old.will = nil
	old.willMu.Unlock()
	// The scripts' results first: Run computes priorities from them.
	old.track.mu.Lock()
	for name, s := range n.track.scripts {
		if o := old.track.scripts[name]; o != nil {
			s.check.carry(o.check)
		}
	}
	old.track.mu.Unlock()
	a := planAdoption(instanceNames(old.insts), instanceNames(n.insts), plan)
	for _, i := range a.deleted {
		old.insts[i].deleted.Store(true)
	}
	for _, r := range a.resume {
		oi, ni := old.insts[r.old], n.insts[r.cur]
		c, ok := oi.drv.Retire()
		if !ok {
			continue
		}
		announce := false
		if c.State == Master {
			announce = ni.takeOver(oi)
		}
		ni.drv.Resume(c, announce)
		ni.resumed = true
		ni.state.Store(uint32(c.State))
		ni.counters.carry(&oi.counters)
		if ni.ah != nil && oi.ah != nil {
			ni.ah.Carry(oi.ah)
		}
		ni.logger().Info("vrrp reload: instance resumes",
			"state", c.State.String(), "change", r.plan.Change.String(), "what", r.plan.What)
	}
	// A sync group whose members all resumed in one state is in it: no
	// group notify for it (keepalived's state_same_at_reload).
	for _, g := range n.groups {
		g.resumed(func(m *syncMember) bool { return n.insts[m.idx].resumed })
	}
}

// takeOver hands a resumed master's addresses, routes and rules from its
// predecessor to it as planHandOver plans, adding those that are new; it
// reports whether it added addresses (they are then announced).
func (in *instance) takeOver(old *instance) bool {
	h := planHandOver(old.cfg, in.cfg, nodeClaims{old.node})
	mine, theirs := in.node, old.node
	in.firewall(true)
	old.firewall(false)
	addrs := settle(h.takeAddrs, h.addAddrs, func(a devAddr) bool {
		return mine.addrs.take(theirs.addrs, a.Dev, a.VIP.Prefix)
	}, itself[devAddr])
	for _, a := range addrs {
		if err := mine.addrs.Add(a.Dev, a.VIP); err != nil {
			in.logger().Error("vrrp address", "err", err)
		}
	}
	routes := settle(h.takeRoutes, h.addRoutes, func(m routeMove) bool {
		return mine.routes.take(theirs.routes, m.old, m.cur)
	}, func(m routeMove) config.Route { return m.cur })
	for _, r := range routes {
		if err := mine.routes.Add(r, in.cfg.Interface); err != nil {
			in.logger().Error("vrrp route", "err", err)
		}
	}
	rules := settle(h.takeRules, h.addRules, func(r config.Rule) bool {
		return mine.rules.take(theirs.rules, r)
	}, itself[config.Rule])
	for _, r := range rules {
		if err := mine.rules.Add(r); err != nil {
			in.logger().Error("vrrp rule", "err", err)
		}
	}
	// Added addresses are announced: those planned, and those that
	// could not be taken after all.
	return h.announce || len(addrs) > len(h.addAddrs)
}

// nodeClaims are the kernel entries a Node installed, for planHandOver.
type nodeClaims struct{ n *Node }

func (c nodeClaims) hasAddr(dev string, p netip.Prefix) bool {
	return c.n.addrs.added.has(addrKey{dev, p})
}
func (c nodeClaims) hasRoute(r config.Route) bool { return c.n.routes.added.has(routeKey(r)) }
func (c nodeClaims) hasRule(r config.Rule) bool   { return c.n.rules.Has(r) }

// instanceNames are the names of insts, in order.
func instanceNames(insts []*instance) []string {
	names := make([]string, len(insts))
	for i, in := range insts {
		names[i] = in.cfg.Name
	}
	return names
}

// sysctlSave is a sysctl file the Node changed, open (so that it stays the
// namespace's), with the value it had.
type sysctlSave struct {
	f    *os.File
	orig []byte
}

// setSysctl sets the sysctl file at path to val, remembering the value it
// had to restore it when the Node ends. It runs inside the Node's
// namespace: the file, kept open, stays that namespace's.
func (n *Node) setSysctl(path, val string) {
	n.promMu.Lock()
	defer n.promMu.Unlock()
	if slices.Contains(n.sysctlPaths, path) {
		return
	}
	n.sysctlPaths = append(n.sysctlPaths, path)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		n.log.Warn("vrrp sysctl", "path", path, "err", err)
		return
	}
	orig := make([]byte, 16)
	k, err := f.ReadAt(orig, 0)
	orig = bytes.TrimSpace(orig[:k])
	if k == 0 && err != nil {
		n.log.Warn("vrrp sysctl", "path", path, "err", err)
		f.Close()
		return
	}
	if string(orig) == val {
		f.Close() // nothing to restore
		return
	}
	if _, err := f.WriteAt([]byte(val), 0); err != nil {
		n.log.Warn("vrrp sysctl", "path", path, "err", err)
		f.Close()
		return
	}
	if n.promoted == nil {
		n.promoted = map[string]*sysctlSave{}
	}
	n.promoted[path] = &sysctlSave{f: f, orig: orig}
}

// restoreSysctls puts back what setSysctl changed.
func (n *Node) restoreSysctls() {
	n.promMu.Lock()
	defer n.promMu.Unlock()
	for path, s := range n.promoted {
		if _, err := s.f.WriteAt(s.orig, 0); err != nil {
			n.log.Warn("vrrp: restoring a sysctl", "path", path, "err", err)
		}
		s.f.Close()
	}
	n.promoted = nil
}

// takeSysctls hands old's saved values for the sysctls sysctlsToTake
// names to n: n restores them when it ends, old leaves them.
func (n *Node) takeSysctls(old *Node) {
	old.promMu.Lock()
	defer old.promMu.Unlock()
	n.promMu.Lock()
	defer n.promMu.Unlock()
	saved := slices.Collect(maps.Keys(old.promoted))
	for _, path := range sysctlsToTake(n.sysctlPaths, saved, n.rpCleared) {
		if n.promoted == nil {
			n.promoted = map[string]*sysctlSave{}
		}
		if mine := n.promoted[path]; mine != nil {
			mine.f.Close()
		}
		n.promoted[path] = old.promoted[path]
		delete(old.promoted, path)
	}
}

// Close closes the sockets and restores the interfaces' promote_secondaries.
//
// A Node that never ran (a reload that failed after preparing it) lets go
// of its link subscription too.
func (n *Node) Close() {
	if !n.running.Load() {
		if err := n.removeVMACs(false); err != nil {
			n.log.Warn("vrrp", "err", err)
		}
	}
	n.restoreSysctls()
	if n.track != nil && !n.running.Load() {
		n.track.close()
	}
	for _, s := range n.socks {
		s.shut()
	}
	for _, in := range n.insts {
		in.closeAnnouncers()
	}
	if n.ns.IsOpen() {
		n.ns.Close()
		n.ns = netns.None()
	}
}

// read receives on one socket until the Node closes it, on each conn it
// has in turn (its interface made again: dynif_linux.go).
func (n *Node) read(s *sock) {
	buf := make([]byte, 9000)
	for {
		c := s.conn.Load()
		if c == nil {
			if !s.waitConn() {
				return
			}
			continue
		}
		n.readConn(s, c, buf)
		select {
		case <-s.stop:
			return
		default:
		}
	}
}

// readConn receives on one conn of s until it is closed.
func (n *Node) readConn(s *sock, c *Conn, buf []byte) {
	var a Advert
	a.Addrs = make([]netip.Addr, 0, MaxAddrs)
	for {
		nb, r, err := c.Read(buf)
		var de *DecodeError
		if errors.As(err, &de) {
			s.drops[de.Reason].Add(1) // an AH packet ParseAH refused too
			continue
		}
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			n.log.Warn("vrrp read", "interface", c.Interface().Name, "err", err)
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
		backup := State(in.state.Load()) == Backup
		if in.ah != nil && r.Src != in.primary && !in.verifyAH(r.Packet, backup) {
			in.drops[DropAuth].Add(1)
			continue
		}
		// keepalived checks the addresses (and the unicast source and
		// TTL range) of every advert, except, with skip_check_adv_addr,
		// a backup's adverts from the master it heard last.
		e := expectFrom(in.expect, in.cfg.SkipCheckAdvAddr, backup, r.Src, in.advSrc)
		reason, own := admit(&a, r, in.mcast, in.primary, &e)
		if reason != DropNone {
			in.drops[reason].Add(1)
			if reason == DropAddrs {
				in.logger().Info("vrrp advert with other addresses dropped",
					"src", r.Src, "count", len(a.Addrs), "want", len(e.Addrs))
			}
			continue
		}
		if own {
			continue // our own advert, looped back
		}
		noteSrc, clash := heard(&a, backup, in.params.Priority)
		if noteSrc {
			in.advSrc = r.Src
		}
		if clash && !in.ownerClash.Swap(true) {
			in.logger().Error("vrrp: this instance and another router are both the address owner (priority 255): "+
				"this one drops to priority 254, as keepalived does; fix the configuration",
				"src", r.Src)
		}
		in.received.Add(1)
		in.drv.Receive(&a, r.Src)
	}
}

// SendAdvert is an Action: one advert to the group or each unicast peer.
func (in *instance) SendAdvert(prio uint8) {
	conn := in.sock.conn.Load()
	if conn == nil {
		return // its interface is gone: the instance is in FAULT
	}
	a := newAdvert(&in.params, &in.expect, in.vips, prio)
	var id uint16
	var seq uint32
	if in.ah != nil {
		// One number per advert, all its unicast peers alike, as keepalived.
		id, seq = in.ah.Next()
	}
	for _, dst := range in.dsts {
		b, err := a.AppendMarshal(in.buf[:0], in.primary, dst, in.mode)
		if err == nil && in.ah != nil {
			h := AHHeader{Src: in.primary, Dst: dst, TTL: in.ahTTL, ID: id, Seq: seq}
			b = AppendAH(in.abuf[:0], &h, b, &in.ah.Key, in.ah.Unicast)
		}
		if err == nil {
			err = conn.Write(b, in.primary, dst)
		}
		if err != nil {
			in.logger().Warn("vrrp send", "dst", dst, "err", err)
			continue
		}
		in.sent.Add(1)
	}
	master := State(in.state.Load()) == Master
	if send, next := extraIfDue(in.cfg.Garp.ExtraIf, prio, master, time.Now(), in.extraDue.Load()); send {
		in.extraDue.Store(next)
		in.SendGARP(extraBurst)
	}
}

// extraBurst, queued to announce, is garp_extra_if's: one address on each
// interface other than the instance's own (its macvlan too with
// vmac_xmit_base), as keepalived's vrrp_send_vmac_update.
const extraBurst = -1

// SendGARP is an Action: n announcements of every virtual address.
func (in *instance) SendGARP(n int) {
	select {
	case in.garps <- n:
	default:
		in.logger().Warn("vrrp announce queue full: burst dropped")
	}
}

// announce sends the queued bursts until the queue is closed.
func (in *instance) announce(done chan<- struct{}) {
	defer close(done)
	for n := range in.garps {
		if n == extraBurst {
			if State(in.state.Load()) != Master {
				continue
			}
			for dev, ann := range in.anns {
				if !extraBurstOn(in.cfg, dev, isAddrVMAC(in.cfg, dev)) {
					continue
				}
				if err := ann.Announce(in.annAddrs[dev][:1]); err != nil {
					in.logger().Warn("vrrp announce", "err", err)
				}
			}
			continue
		}
		for i := 0; i < n; i++ {
			// A burst queued while master must not leave after the
			// addresses have gone to another router.
			if State(in.state.Load()) != Master {
				break
			}
			for dev, ann := range in.anns {
				if err := ann.Announce(in.annAddrs[dev]); err != nil {
					in.logger().Warn("vrrp announce", "err", err)
				}
			}
		}
	}
}

// Transition is an Action: it carries out transitionPlan's steps.
func (in *instance) Transition(from, to State) {
	for _, st := range transitionPlan(from, to, traitsOf(in.cfg, in.sync != nil, in.ah != nil)) {
		in.do(st, from, to)
	}
}

// do carries out one step of a transition from to.
func (in *instance) do(st step, from, to State) {
	switch st {
	case stepRecord:
		in.transitions.Add(1)
		in.since.Store(time.Now().UnixNano())
		in.logger().Info("vrrp transition", "from", from.String(), "to", to.String())
		in.state.Store(uint32(to))
	case stepObserve:
		if f := in.node.observe.Load(); f != nil {
			(*f)(Event{Instance: in.cfg.Name, VRID: uint8(in.cfg.VRID), From: from, To: to})
		}
	case stepFollow:
		in.sync.follow(from, to)
	case stepAHMaster:
		in.ah.BecomeMaster()
	case stepExtraIfDue:
		in.extraDue.Store(time.Now().Add(in.cfg.Garp.ExtraIf).UnixNano())
	case stepFirewallOn, stepFirewallOff:
		in.firewall(st == stepFirewallOn)
	case stepAddrsAdd, stepAddrsRemove:
		in.addresses(st == stepAddrsAdd)
	case stepRoutesAdd, stepRoutesRemove:
		in.installRoutes(st == stepRoutesAdd)
	case stepRulesAdd, stepRulesRemove:
		in.installRules(st == stepRulesAdd)
	case stepBequeath:
		in.node.bequeath()
	case stepGroupNotify:
		in.groupNotify(to)
	case stepNotify:
		in.notify(from, to, in.drv.m.Priority())
	}
}

// addresses adds (on) or removes the instance's virtual addresses.
func (in *instance) addresses(on bool) {
	for _, a := range instanceAddrs(in.cfg) {
		var err error
		if on {
			err = in.node.addrs.Add(a.Dev, a.VIP)
		} else {
			err = in.node.addrs.Remove(a.Dev, a.VIP)
		}
		if err != nil {
			in.logger().Error("vrrp address", "err", err)
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
			in.logger().Error("vrrp route", "err", err)
		}
	}
}

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
	cfgs := make([]*config.Instance, len(n.insts))
	members := make([]*syncMember, len(n.insts))
	for i, in := range n.insts {
		cfgs[i], members[i] = in.cfg, in.sync
	}
	idx, err := yieldTargets(cfgs, members, name, on)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, i := range idx {
		in := n.insts[i]
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
		var primary netip.Addr
		if in.primaryKnown.Load() {
			primary = in.primary
		}
		out = append(out, reportOf(in.cfg.Name, st, &in.counters, primary, &in.drops, &in.sock.drops))
	}
	return out, nil
}
