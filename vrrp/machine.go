package vrrp

import (
	"fmt"
	"net/netip"
	"time"
)

// State is a VRRP instance's state (RFC 5798 section 6.4, with keepalived's
// Fault).
type State uint8

const (
	Initialize State = iota
	Backup
	Master
	// Fault: a tracked interface or script is down; the instance holds no
	// address and sends nothing until it recovers.
	Fault
)

func (s State) String() string {
	switch s {
	case Initialize:
		return "INIT"
	case Backup:
		return "BACKUP"
	case Master:
		return "MASTER"
	case Fault:
		return "FAULT"
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// Params are the settings of one instance that the state machine uses.
type Params struct {
	Version uint8 // 2 or 3
	VRID    uint8
	// Priority is the configured priority; 255 is the address owner.
	Priority uint8
	// AdvertInt is ours; VRRPv2 counts whole seconds, VRRPv3 centiseconds.
	AdvertInt    time.Duration
	Preempt      bool
	PreemptDelay time.Duration
	// Primary is the address our adverts come from, compared with an equal
	// priority master's to break the tie (the higher address wins).
	Primary netip.Addr
	// LowerPrioNoAdvert: a master that hears a lower priority advert does
	// not answer it at once with its own (RFC behaviour; keepalived's
	// default is to answer).
	LowerPrioNoAdvert bool
	// HigherPrioSendAdvert: a master that hears a higher priority advert
	// sends one advert of its own before yielding, so that the other master
	// (which hears a lower priority) announces its addresses afresh: after
	// a partition heals, the segment forgets the loser's announcements.
	HigherPrioSendAdvert bool
	// InitMaster is state MASTER: the address owner then becomes master at
	// once on start; an owner in state BACKUP waits Master_Down_Interval
	// like any backup (keepalived.conf(5), vrrp_init_state). Below 255 the
	// initial state changes nothing at run time.
	InitMaster bool
	Garp       GarpParams
}

// GarpParams are the gratuitous ARP / unsolicited NA bursts sent by a
// master: Repeat at once on becoming master, again Delay later (0: no second
// burst), and RefreshRepeat every Refresh while master (0: never).
type GarpParams struct {
	Repeat         int
	Delay          time.Duration
	LowerPrioDelay time.Duration
	LowerPrioRep   int
	Refresh        time.Duration
	RefreshRepeat  int
}

// Actions is what the state machine asks of the network side. Each call is
// made synchronously from the Machine's methods.
type Actions interface {
	// SendAdvert sends one advert with this priority and our interval.
	SendAdvert(priority uint8)
	// SendGARP sends n gratuitous ARPs (IPv4) or unsolicited NAs (IPv6)
	// for every virtual address.
	SendGARP(n int)
	// Transition reports a change of state: the network side adds the
	// virtual addresses on becoming Master and removes them on leaving it,
	// and runs notify scripts.
	Transition(from, to State)
}

// Machine is the VRRP state machine of one instance: pure, driven by
// events and by the time its caller passes in, with no goroutine or clock
// of its own. Deadline says when Tick must next be called.
type Machine struct {
	p   Params
	act Actions

	state    State
	priority uint8 // effective priority (configured plus tracking), 1 while yielding
	tracked  uint8 // configured plus tracking, whatever Yield says
	yielding bool  // an operator's hand-over: see Yield
	fault    bool  // a tracked resource is down

	// masterAdverInt is the master's advert interval (VRRPv3 backups adopt
	// it); masterAddr the current master's address, when known.
	masterAdverInt time.Duration
	masterAddr     netip.Addr
	masterPrio     uint8

	adverTimer time.Time // master: next advert
	downTimer  time.Time // backup: the master is deemed dead at this time
	// A backup preempts a lower priority master only preempt_delay after
	// start and after it began hearing that master.
	started    time.Time
	lowerSince time.Time
	// A master's gratuitous ARP timers, each its own as keepalived's:
	// the burst garp_master_delay after becoming master, the burst
	// garp_lower_prio_delay after hearing a lower priority, and the
	// refresh, checked when an advert is sent.
	garpAt    time.Time
	garpN     int
	lowAt     time.Time
	lowN      int
	refreshAt time.Time
	// delayUntil is the end of vrrp_startup_delay: until then no instance
	// becomes master (DelayStart).
	delayUntil time.Time
}

// DelayStart holds the machine back from becoming master until until
// (vrrp_startup_delay), as keepalived's vrrp_delayed_start_time does: a
// backup's down timer set before then runs from until, not from now, and
// the address owner waits for until instead of becoming master at once.
// Call it before Start.
func (m *Machine) DelayStart(until time.Time) { m.delayUntil = until }

// downAt is when a down timer of d set at now expires.
func (m *Machine) downAt(now time.Time, d time.Duration) time.Time {
	if now.Before(m.delayUntil) {
		return m.delayUntil.Add(d)
	}
	return now.Add(d)
}

// NewMachine returns a machine in Initialize; call Start.
func NewMachine(p Params, act Actions) *Machine {
	return &Machine{p: p, act: act, priority: p.Priority, tracked: p.Priority, masterAdverInt: p.AdvertInt}
}

// State returns the current state.
func (m *Machine) State() State { return m.state }

// Priority returns the effective priority.
func (m *Machine) Priority() uint8 { return m.priority }

// MasterAddr returns the address of the master last heard, or ours when we
// are master.
func (m *Machine) MasterAddr() netip.Addr {
	if m.state == Master {
		return m.p.Primary
	}
	return m.masterAddr
}

// skew is Skew_Time: RFC 3768 (256-Priority)/256 s; RFC 5798
// ((256-Priority) * Master_Adver_Interval)/256.
func (m *Machine) skew() time.Duration {
	if m.p.Version == 2 {
		return time.Duration(256-int(m.priority)) * time.Second / 256
	}
	return time.Duration(256-int(m.priority)) * m.masterAdverInt / 256
}

// MasterDownInterval is 3 * Master_Adver_Interval + Skew_Time.
func (m *Machine) MasterDownInterval() time.Duration {
	return 3*m.masterAdverInt + m.skew()
}

// Deadline is the next time Tick must be called (the zero time if none).
func (m *Machine) Deadline() time.Time {
	var d time.Time
	for _, t := range []time.Time{m.adverTimer, m.downTimer, m.garpAt, m.lowAt} {
		if !t.IsZero() && (d.IsZero() || t.Before(d)) {
			d = t
		}
	}
	return d
}

func (m *Machine) setState(to State) {
	if from := m.state; from != to {
		m.state = to
		m.act.Transition(from, to)
	}
}

// Start leaves Initialize: the address owner becomes master at once, any
// other instance backup, waiting Master_Down_Interval for a master.
func (m *Machine) Start(now time.Time) {
	m.started = now
	if m.fault {
		m.setState(Fault)
		return
	}
	m.enter(now)
}

// enter is Initialize's exit, on start and on recovery from Fault;
// preempt_delay counts from it.
func (m *Machine) enter(now time.Time) {
	m.started = now
	if m.priority == 255 && m.p.InitMaster {
		if now.Before(m.delayUntil) {
			m.becomeBackup(now, m.p.AdvertInt)
			m.downTimer = m.delayUntil
			return
		}
		m.becomeMaster(now)
		return
	}
	m.becomeBackup(now, m.p.AdvertInt)
}

func (m *Machine) becomeMaster(now time.Time) {
	m.downTimer = time.Time{}
	m.lowerSince = time.Time{}
	m.act.SendAdvert(m.priority)
	m.adverTimer = now.Add(m.p.AdvertInt)
	m.setState(Master)
	m.act.SendGARP(max(m.p.Garp.Repeat, 1))
	m.clearGarps()
	if m.p.Garp.Delay > 0 {
		m.garpAt, m.garpN = now.Add(m.p.Garp.Delay), max(m.p.Garp.Repeat, 1)
	}
	m.startRefresh(now)
}

// clearGarps stops every gratuitous ARP timer.
func (m *Machine) clearGarps() {
	m.garpAt, m.garpN, m.lowAt, m.lowN, m.refreshAt = time.Time{}, 0, time.Time{}, 0, time.Time{}
}

// startRefresh counts garp_master_refresh from now, as keepalived sets
// its refresh timer on becoming master.
func (m *Machine) startRefresh(now time.Time) {
	m.refreshAt = time.Time{}
	if m.p.Garp.Refresh > 0 {
		m.refreshAt = now.Add(m.p.Garp.Refresh)
	}
}

func (m *Machine) becomeBackup(now time.Time, masterInt time.Duration) {
	m.adverTimer = time.Time{}
	m.clearGarps()
	m.lowerSince = time.Time{} // preempt_delay counts afresh
	m.masterAdverInt = masterInt
	m.downTimer = m.downAt(now, m.MasterDownInterval())
	m.setState(Backup)
}

// Tick runs the timers due at now.
func (m *Machine) Tick(now time.Time) {
	switch m.state {
	case Backup:
		if !m.downTimer.IsZero() && !now.Before(m.downTimer) {
			m.masterAddr = netip.Addr{}
			m.becomeMaster(now)
		}
	case Master:
		if !m.adverTimer.IsZero() && !now.Before(m.adverTimer) {
			m.act.SendAdvert(m.priority)
			m.adverTimer = now.Add(m.p.AdvertInt)
			// keepalived's vrrp_state_master_tx: the refresh goes with
			// the first advert due after its time.
			if !m.refreshAt.IsZero() && !now.Before(m.refreshAt) {
				m.act.SendGARP(max(m.p.Garp.RefreshRepeat, 1))
				m.refreshAt = now.Add(m.p.Garp.Refresh)
			}
		}
		if !m.garpAt.IsZero() && !now.Before(m.garpAt) {
			m.act.SendGARP(m.garpN)
			m.garpAt, m.garpN = time.Time{}, 0
		}
		if !m.lowAt.IsZero() && !now.Before(m.lowAt) {
			m.act.SendGARP(m.lowN)
			m.lowAt, m.lowN = time.Time{}, 0
		}
	}
}

// Advert takes a received advert that passed Check. src is the sender's
// address.
func (m *Machine) Advert(now time.Time, a *Advert, src netip.Addr) {
	interval := a.IntervalDuration()
	switch m.state {
	case Backup:
		if a.Priority == 0 {
			// The master is leaving: take over after Skew_Time.
			m.downTimer = m.downAt(now, m.skew())
			return
		}
		lower := a.Priority < m.priority
		switch {
		case !lower:
			m.lowerSince = time.Time{}
		case m.lowerSince.IsZero():
			m.lowerSince = now
		}
		preempt := m.p.Preempt && lower &&
			!now.Before(m.started.Add(m.p.PreemptDelay)) && !now.Before(m.lowerSince.Add(m.p.PreemptDelay))
		if !preempt {
			m.masterAddr, m.masterPrio = src, a.Priority
			if m.p.Version == 3 {
				m.masterAdverInt = interval
			}
			m.downTimer = m.downAt(now, m.MasterDownInterval())
			return
		}
		// A lower priority master and we preempt: ignore it, so that the
		// down timer expires and we take over.
	case Master:
		if a.Priority == 0 {
			m.act.SendAdvert(m.priority)
			m.adverTimer = now.Add(m.p.AdvertInt)
			return
		}
		if a.Priority == 255 && m.priority == 255 && src != m.p.Primary {
			// Two address owners: keepalived's "CONFIGURATION ERROR"
			// drops our priority to 254 for good (vrrp_state_master_rx),
			// so the other owner's advert is a higher priority one.
			m.p.Priority, m.tracked, m.priority = 254, 254, 254
		}
		if a.Priority > m.priority || (a.Priority == m.priority && addrGreater(src, m.p.Primary)) {
			if m.p.HigherPrioSendAdvert {
				m.act.SendAdvert(m.priority)
			}
			m.masterAddr, m.masterPrio = src, a.Priority
			m.becomeBackup(now, pick(m.p.Version == 3, interval, m.p.AdvertInt))
			return
		}
		// A lower priority master: assert ourselves at once (keepalived's
		// default), and refresh the neighbours' caches.
		if !m.p.LowerPrioNoAdvert {
			m.act.SendAdvert(m.priority)
			m.adverTimer = now.Add(m.p.AdvertInt)
		}
		if m.p.Garp.LowerPrioRep > 0 {
			m.act.SendGARP(m.p.Garp.LowerPrioRep)
			if m.p.Garp.LowerPrioDelay > 0 {
				m.lowAt, m.lowN = now.Add(m.p.Garp.LowerPrioDelay), m.p.Garp.LowerPrioRep
			}
		}
	}
}

func pick(c bool, a, b time.Duration) time.Duration {
	if c {
		return a
	}
	return b
}

// addrGreater compares addresses as unsigned integers, as the RFCs' tie-break
// on the primary address does.
func addrGreater(a, b netip.Addr) bool { return a.Compare(b) > 0 }

// SetFault marks a tracked resource down (true) or up again (false). A
// master in fault gives its addresses up; recovery starts again as backup.
func (m *Machine) SetFault(now time.Time, fault bool) {
	if m.fault == fault {
		return
	}
	m.fault = fault
	if m.state == Initialize {
		return // Start decides
	}
	if fault {
		if m.state == Master {
			// Hand over at once, as a clean stop does.
			m.act.SendAdvert(0)
		}
		m.adverTimer, m.downTimer = time.Time{}, time.Time{}
		m.clearGarps()
		m.setState(Fault)
		return
	}
	m.enter(now)
}

// Force moves the machine to a state its sync group moved to: a backup
// becomes master at once; a master becomes backup (waiting for the new
// master's adverts). Fault and Initialize are left alone.
func (m *Machine) Force(now time.Time, to State) {
	switch {
	case to == Master && m.state == Backup && !m.yielding:
		// A member an operator handed over stays back (Node.Yield hands
		// over a whole group; this keeps it so if the group moves).
		m.masterAddr = netip.Addr{}
		m.becomeMaster(now)
	case to == Backup && m.state == Master:
		m.becomeBackup(now, m.masterAdverInt)
	}
}

// SetPriority changes the effective priority (tracking weights). A master
// whose priority falls says so in its next advert; a backup whose priority
// rises above the master's preempts when its down timer expires, since the
// master's adverts no longer hold it back.
func (m *Machine) SetPriority(prio uint8) {
	if m.p.Priority == 255 {
		return // the address owner's priority is not adjusted
	}
	m.tracked = min(max(prio, 1), 254)
	if !m.yielding {
		m.priority = m.tracked
	}
}

// Yield is an operator's planned hand-over (on) and its end (off). While
// yielding, the instance runs at priority 1, the lowest: a master sends a
// priority 0 advert and becomes backup, so that a peer takes over after
// Skew_Time; a backup does not preempt. With no peer at all the instance
// still becomes master when Master_Down_Interval passes, at priority 1:
// a hand-over never leaves the addresses without a holder. Off, the
// instance competes again at its own priority, preempting as configured.
func (m *Machine) Yield(now time.Time, on bool) {
	if m.yielding == on {
		return
	}
	m.yielding = on
	if !on {
		m.priority = m.tracked
		return
	}
	m.priority = 1
	if m.state == Master {
		m.act.SendAdvert(0)
		m.masterAddr = netip.Addr{} // the next master's adverts say who
		m.becomeBackup(now, m.masterAdverInt)
	}
}

// Yielding tells whether Yield is on.
func (m *Machine) Yielding() bool { return m.yielding }

// Carry is what a reload carries from an instance's old machine to its
// new one (Machine.Snapshot, Machine.Resume), as keepalived's
// restore_vrrp_state keeps an instance's state across a reload.
type Carry struct {
	State          State
	MasterAddr     netip.Addr
	MasterPrio     uint8
	MasterAdverInt time.Duration
	Started        time.Time // preempt_delay keeps counting from the first start
}

// Snapshot is the machine's Carry.
func (m *Machine) Snapshot() Carry {
	return Carry{State: m.state, MasterAddr: m.masterAddr, MasterPrio: m.masterPrio,
		MasterAdverInt: m.masterAdverInt, Started: m.started}
}

// Resume starts the machine in the state its predecessor had (a reload),
// without a transition: no notify, the addresses stay. A master stays
// master, sending an advert at once (keepalived's reload_master); with
// announce, addresses were added by the reload and are announced. A
// backup restarts its down timer. The protocol decides from there: a
// master whose new priority is below a peer's yields when it hears it.
// An instance that is in fault now enters Fault (a master giving its
// addresses up); one that was in fault starts afresh, as keepalived works
// out fault for itself at a reload.
func (m *Machine) Resume(now time.Time, c Carry, announce bool) {
	if c.MasterAdverInt > 0 {
		m.masterAdverInt = c.MasterAdverInt
	}
	m.masterAddr, m.masterPrio = c.MasterAddr, c.MasterPrio
	m.started = now
	if !c.Started.IsZero() {
		m.started = c.Started
	}
	switch {
	case c.State == Fault && m.fault:
		m.state = Fault
	case c.State == Master:
		m.state = Master
		m.masterAddr = netip.Addr{}
		m.act.SendAdvert(m.priority)
		m.adverTimer = now.Add(m.p.AdvertInt)
		m.clearGarps()
		if announce {
			m.act.SendGARP(max(m.p.Garp.Repeat, 1))
		}
		m.startRefresh(now)
	case c.State == Backup:
		m.state = Backup
		m.downTimer = m.downAt(now, m.MasterDownInterval())
	default:
		m.Start(now)
		return
	}
	if m.fault && m.state != Fault {
		if m.state == Master {
			m.act.SendAdvert(0)
		}
		m.adverTimer, m.downTimer = time.Time{}, time.Time{}
		m.clearGarps()
		m.setState(Fault)
	}
}

// Stop is a clean shutdown: a master sends a priority 0 advert so that a
// backup takes over after Skew_Time rather than Master_Down_Interval.
func (m *Machine) Stop() {
	if m.state == Master {
		m.act.SendAdvert(0)
	}
	m.adverTimer, m.downTimer = time.Time{}, time.Time{}
	m.clearGarps()
	m.setState(Initialize)
}
