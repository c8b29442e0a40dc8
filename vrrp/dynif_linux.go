package vrrp

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/directord/directord/config"
)

// sockLink is what a VRRP socket needs to follow its interface: deleted,
// the socket closes and its instances are in FAULT; made again, it
// reopens on the new interface, as keepalived 2.2.7 does
// (cleanup_lost_interface, update_added_interface). With
// dynamic_interfaces an interface may also be missing at start: the
// socket then opens when it is created. Its fields are the tracking
// goroutine's (and NewNode's, before it runs), except conn's pointer.
type sockLink struct {
	ifname string
	open   func() (*Conn, error)
	index  int      // the index conn is open on; 0: not open
	first  LinkSeen // the interface when the socket first opened
	// refused: a SockRefuse was logged (once per kind seen).
	refused bool
	// wake tells the reader that a new conn is there; stop that the
	// Node closed.
	wake     chan struct{}
	stop     chan struct{}
	stopOnce sync.Once
}

func newSockLink(ifname string, open func() (*Conn, error)) sockLink {
	return sockLink{ifname: ifname, open: open, wake: make(chan struct{}, 1), stop: make(chan struct{})}
}

// openSock opens s on its interface. With dynamic_interfaces an interface
// that does not exist is not an error: s stays closed, its instances in
// FAULT, until the interface is created (keepalived: "Configuration
// specifies interface NAME which doesn't currently exist - will use if
// created").
func (n *Node) openSock(s *sock, dynamic bool) error {
	l, err := n.h.LinkByName(s.ifname)
	var nf netlink.LinkNotFoundError
	if dynamic && errors.As(err, &nf) {
		n.log.Warn("vrrp: interface does not exist yet: its instances are in FAULT until it is created (dynamic_interfaces)",
			"interface", s.ifname)
		return nil
	}
	c, err := s.open()
	if err != nil {
		return err
	}
	s.conn.Store(c)
	s.index = c.Interface().Index
	if l != nil {
		s.first = n.linkSeen(l)
	}
	return nil
}

// linkSeen describes a link for sockStep.
func (n *Node) linkSeen(l netlink.Link) LinkSeen {
	a := l.Attrs()
	s := LinkSeen{Exists: true, Index: a.Index}
	if mv, ok := l.(*netlink.Macvlan); ok {
		s.Macvlan = true
		if p, err := n.h.LinkByIndex(mv.ParentIndex); err == nil {
			s.Parent = p.Attrs().Name
		}
	}
	return s
}

// relink follows one link update for the sockets and announcers on that
// link; it reports whether anything changed (the caller then recomputes
// every instance's fault). It runs on the tracking goroutine.
func (n *Node) relink(u netlink.LinkUpdate) bool {
	name, index := u.Link.Attrs().Name, u.Link.Attrs().Index
	seen := LinkSeen{Index: index} // deleted
	if u.Header.Type != unix.RTM_DELLINK {
		seen = n.linkSeen(u.Link)
	}
	changed := false
	for _, s := range n.socks {
		if s.ifname != name && s.index != 0 && s.index == index {
			// Renamed: the interface the socket is on is not the one
			// configured any more (keepalived: "Interface name has
			// changed").
			changed = n.sockTo(s, LinkSeen{}) || changed
		}
	}
	changed = n.relinkName(name, seen) || changed
	if seen.Exists {
		n.relinkSysctls(name, index)
	} else {
		n.unlinkSysctls(name, index)
	}
	renamed := n.vmacSeen(name, index, u.Header.Type == unix.RTM_DELLINK)
	return n.remakeVMACs(name, index, renamed) || changed
}

// vmacSeen follows the macvlans the Node holds through one link update:
// the name of one renamed away (its link, by index, has another name
// now: keepalived's "Interface name has changed" for a VMAC, which it
// makes again) is returned; one back under its name, or deleted, has its
// index set or cleared.
func (n *Node) vmacSeen(name string, index int, deleted bool) string {
	n.vmacMu.Lock()
	defer n.vmacMu.Unlock()
	renamed := ""
	for _, v := range n.vmacs {
		switch {
		case v.index == index && (deleted || v.name != name):
			v.index = 0
			if !deleted {
				renamed = v.name
				n.log.Warn("vrrp: macvlan renamed: its instance is in FAULT, its addresses leave it, and it is made again under its name",
					"interface", v.name, "renamed", name)
			}
		case v.name == name && !deleted:
			v.index = index
		}
	}
	return renamed
}

// wantedVMAC is a macvlan an instance needs: its own (use_vmac) or one of
// its addresses' (use_vmac_addr, an address's use_vmac).
type wantedVMAC struct {
	name, base, mac string
	own             bool
	av              *config.AddrVMAC // an address's (not own)
}

func wantedVMACs(ci *config.Instance) []wantedVMAC {
	var out []wantedVMAC
	if v := ci.VMAC; v != nil {
		out = append(out, wantedVMAC{name: v.Name, base: ci.Interface, mac: v.MAC, own: true})
	}
	for _, av := range ci.AddrVMACs {
		out = append(out, wantedVMAC{name: av.Name, base: av.Base, mac: av.MAC, av: av})
	}
	return out
}

// remakeVMACs makes again a macvlan of the instances (use_vmac, and
// use_vmac_addr's) that is gone while its interface is there (deleted
// under directord, renamed away, or the interface made again: the kernel
// deletes a macvlan with its parent), as keepalived's
// recreate_vmac_thread; name and index are the link that changed
// (index -1: every link was read afresh), renamed the macvlan renamed
// away by that change. Its socket then
// opens on it at its creation's link update.
//
// A macvlan renamed away keeps the MAC, and the kernel lets only one
// macvlan of an interface up with a MAC (EADDRINUSE): while that one is
// up, none is made (keepalived 2.2.7 makes one that cannot come up, and
// runs its instance on it as if it were up); it is made when that link
// is deleted, set down or takes another MAC.
func (n *Node) remakeVMACs(name string, index int, renamed string) bool {
	changed := false
	for _, in := range n.insts {
		for _, w := range wantedVMACs(in.cfg) {
			held := n.vmacHeld(w.name)
			// index < 0: every link read afresh (relistSocks).
			if w.name != name && w.base != name && w.name != renamed && (held == 0 || (index >= 0 && held != index)) {
				continue
			}
			if n.linkExists(w.name) {
				continue
			}
			base, err := n.h.LinkByName(w.base)
			if err != nil {
				continue
			}
			if h := n.macHolder(base.Attrs().Index, w.mac, w.name); h != nil {
				if held != h.Attrs().Index {
					n.setVMACHeld(w.name, h.Attrs().Index)
					in.logger().Error("vrrp: another macvlan of the interface is up with the virtual MAC (the macvlan renamed?), "+
						"which the kernel gives one macvlan of an interface: the macvlan is made again once that one is deleted, set down or renamed back",
						"interface", w.name, "holder", h.Attrs().Name, "base", w.base, "mac", w.mac)
				}
				continue
			}
			n.forgetBaseSysctls(w.base, base.Attrs().Index)
			if w.own {
				n.inNS(func() { err = n.vmac(in.cfg) })
			} else {
				n.inNS(func() { err = n.addrVMAC(in.cfg.Name, w.av) })
			}
			if err != nil {
				in.logger().Warn("vrrp: making the macvlan again", "interface", w.name, "err", err)
				continue
			}
			in.logger().Info("vrrp: macvlan made again", "interface", w.name, "base", w.base)
			changed = true
		}
	}
	return changed
}

// macHolder returns the macvlan of the interface of that index, other
// than skip, that is up with mac (nil if none).
func (n *Node) macHolder(baseIndex int, mac, skip string) netlink.Link {
	hw, err := net.ParseMAC(mac)
	if err != nil {
		return nil
	}
	links, err := n.h.LinkList()
	if err != nil {
		return nil
	}
	for _, l := range links {
		mv, ok := l.(*netlink.Macvlan)
		if ok && mv.ParentIndex == baseIndex && mv.Name != skip && mv.Flags&net.FlagUp != 0 && bytes.Equal(mv.HardwareAddr, hw) {
			return l
		}
	}
	return nil
}

func (n *Node) vmacHeld(name string) int {
	n.vmacMu.Lock()
	defer n.vmacMu.Unlock()
	for _, v := range n.vmacs {
		if v.name == name {
			return v.heldBy
		}
	}
	return 0
}

func (n *Node) setVMACHeld(name string, index int) {
	n.vmacMu.Lock()
	defer n.vmacMu.Unlock()
	for _, v := range n.vmacs {
		if v.name == name {
			v.heldBy = index
		}
	}
}

// relist follows every link afresh, after link updates were lost.
func (n *Node) relistSocks() bool {
	changed := false
	names := map[string]bool{}
	for _, s := range n.socks {
		names[s.ifname] = true
	}
	for _, in := range n.insts {
		for dev := range in.anns {
			names[dev] = true
		}
	}
	for _, dev := range n.promoteDevs {
		names[dev] = true
	}
	for name := range names {
		seen := LinkSeen{}
		l, err := n.h.LinkByName(name)
		var nf netlink.LinkNotFoundError
		switch {
		case err == nil:
			seen = n.linkSeen(l)
		case !errors.As(err, &nf):
			continue // cannot tell
		}
		changed = n.relinkName(name, seen) || changed
		if seen.Exists {
			n.relinkSysctls(name, seen.Index)
		}
		changed = n.remakeVMACs(name, -1, "") || changed
	}
	return changed
}

func (n *Node) relinkName(name string, seen LinkSeen) bool {
	changed := false
	for _, s := range n.socks {
		if s.ifname == name {
			changed = n.sockTo(s, seen) || changed
		}
	}
	if seen.Exists {
		for _, in := range n.insts {
			if a := in.anns[name]; a != nil && a.index() != seen.Index {
				var err error
				n.inNS(func() { err = a.relink(name) })
				if err != nil {
					in.logger().Warn("vrrp: announcements on a new interface", "interface", name, "err", err)
				}
			}
		}
	}
	return changed
}

// sockTo brings s to the interface as seen: closed, opened or reopened.
func (n *Node) sockTo(s *sock, seen LinkSeen) bool {
	step := sockStep(s.index, s.first, seen, n.allowIfChanges)
	switch step {
	case SockKeep:
		return false
	case SockClose:
		if c := s.conn.Swap(nil); c != nil {
			c.Close()
		}
		n.log.Warn("vrrp: interface gone: its instances are in FAULT until it comes back", "interface", s.ifname)
		s.index = 0
		return true
	case SockRefuse:
		if c := s.conn.Swap(nil); c != nil {
			c.Close()
		}
		s.index = 0
		if !s.refused {
			s.refused = true
			n.log.Error("vrrp: interface came back as another kind (a macvlan or not, or on another parent): "+
				"its instances stay in FAULT, as keepalived's without allow_if_changes",
				"interface", s.ifname, "macvlan", seen.Macvlan, "parent", seen.Parent)
		}
		return true
	}
	reopen := step == SockReopen
	if reopen {
		// The interface was made again and its deletion not seen (link
		// updates lost): what the instances held on the old one, a
		// master's VIPs, went with it. Through FAULT first, as when the
		// deletion is seen (keepalived's cleanup_lost_interface): a master
		// leaves and comes back, its VIPs added to the new interface.
		if c := s.conn.Swap(nil); c != nil {
			c.Close()
		}
		s.index = 0
		n.log.Warn("vrrp: interface made again, its deletion unseen: its instances go through FAULT", "interface", s.ifname)
		n.retrack(time.Now())
	}
	var c *Conn
	var err error
	n.inNS(func() {
		if c, err = s.open(); err == nil {
			err = n.attachInstances(s)
		}
	})
	if err != nil {
		if c != nil {
			c.Close()
		}
		n.log.Warn("vrrp: cannot open the socket on the interface yet: tried again at its next change",
			"interface", s.ifname, "err", err)
		return reopen
	}
	if old := s.conn.Swap(c); old != nil {
		old.Close()
	}
	s.index = seen.Index
	if !s.first.Exists {
		s.first = seen
	}
	s.refused = false
	select {
	case s.wake <- struct{}{}:
	default:
	}
	n.log.Info("vrrp: socket open on the interface", "interface", s.ifname, "step", step.String())
	return true
}

// attachInstances gives the instances of s that take their source from
// their interface, and never had it, their primary address (and their
// unicast peers without it). It runs in the Node's namespace, before the
// socket is stored: the readers of in.primary load the socket first.
func (n *Node) attachInstances(s *sock) error {
	for _, in := range s.byID {
		if in.primaryKnown.Load() {
			continue // kept across a reopen, as keepalived keeps its saddr
		}
		name := in.cfg.Interface
		ifi, err := net.InterfaceByName(name)
		if err != nil {
			return fmt.Errorf("instance %s: interface %s: %w", in.cfg.Name, name, err)
		}
		p, err := PrimaryAddr(ifi, in.sock.ipv6)
		if err != nil {
			return fmt.Errorf("instance %s: %w", in.cfg.Name, err)
		}
		in.primary = p
		if in.mcast.IsValid() {
			in.dsts = []netip.Addr{in.mcast}
		} else {
			in.dsts = in.dsts[:0]
			for _, peer := range in.cfg.UnicastPeers {
				if peer.Addr != p {
					in.dsts = append(in.dsts, peer.Addr)
				}
			}
		}
		in.drv.post(func(time.Time) { in.drv.m.p.Primary = p })
		in.primaryKnown.Store(true)
	}
	return nil
}

// waitConn waits for a new conn on s; false: the Node closed.
func (s *sock) waitConn() bool {
	select {
	case <-s.wake:
		return true
	case <-s.stop:
		return false
	}
}

// shut closes s for good: its reader returns.
func (s *sock) shut() {
	s.stopOnce.Do(func() { close(s.stop) })
	if c := s.conn.Swap(nil); c != nil {
		c.Close()
	}
}

// inNS runs f on a thread in the Node's network namespace. The daemon's
// threads all are (it runs in its namespace whole, docs/operations.md),
// so it needs no setns(2), and no CAP_SYS_ADMIN; a test's Node, made on
// one thread moved into a namespace, is followed there.
func (n *Node) inNS(f func()) {
	if !n.ns.IsOpen() {
		f()
		return
	}
	runtime.LockOSThread()
	cur, err := netns.Get()
	if err != nil || cur.Equal(n.ns) {
		if err == nil {
			cur.Close()
		}
		runtime.UnlockOSThread()
		f()
		return
	}
	defer cur.Close()
	if err := netns.Set(n.ns); err != nil {
		runtime.UnlockOSThread()
		n.log.Warn("vrrp: cannot enter the instances' namespace", "err", err)
		f()
		return
	}
	f()
	if netns.Set(cur) == nil {
		runtime.UnlockOSThread()
	} // else the thread stays locked, and ends with the goroutine
}

// placeholderAnnouncer stands for the announcer of an interface that does
// not exist yet (dynamic_interfaces): it sends nothing until relink.
func placeholderAnnouncer(dev string, v4, v6 bool, pace *Pacer) *Announcer {
	return &Announcer{ifi: &net.Interface{Name: dev}, fd: -1, pace: pace, v4: v4, v6: v6,
		buf: make([]byte, 0, NAFrameLen)}
}

func (a *Announcer) index() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ifi.Index
}

// relink points a at the interface named dev as it is now (made again,
// or made at last), opening what it needs. It runs in the device's
// namespace.
func (a *Announcer) relink(dev string) error {
	ifi, err := net.InterfaceByName(dev)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ifi = ifi
	if len(ifi.HardwareAddr) != 6 || (!a.v4 && !a.v6) {
		return nil
	}
	if a.fd < 0 {
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("vrrp: announcement socket for %s: %w", dev, err)
		}
		a.fd = fd
	}
	if a.v6 {
		// The old interface's sysctl file is gone with it.
		f, err := os.Open("/proc/sys/net/ipv6/conf/" + dev + "/forwarding")
		if err != nil {
			return fmt.Errorf("vrrp: announcements on %s: %w", dev, err)
		}
		if a.fwd != nil {
			a.fwd.Close()
		}
		a.fwd = f
	}
	return nil
}

// linkExists says whether the Node's namespace has a link of that name.
func (n *Node) linkExists(name string) bool {
	_, err := n.h.LinkByName(name)
	var nf netlink.LinkNotFoundError
	return !errors.As(err, &nf)
}

// forgetBaseSysctls moves the macvlans on an interface about to get a
// macvlan made again to its index, and lets go of what setSysctl saved
// for the interface when it is not the link those were saved on (made
// again itself): the new interface's sysctls are set and saved afresh,
// as for a new interface (relinkSysctls, which relink has mostly run
// already for this index: it then drops nothing).
func (n *Node) forgetBaseSysctls(base string, index int) {
	n.vmacMu.Lock()
	for _, v := range n.vmacs {
		if v.base == base {
			v.baseIndex = index
		}
	}
	n.vmacMu.Unlock()
	n.relinkSysctls(base, index)
}

// unlinkSysctls forgets the index of a link deleted under that name, so
// that the record holds only links that exist: one made again under the
// name is new to relinkSysctls either way.
func (n *Node) unlinkSysctls(name string, index int) {
	if n.track == nil {
		return
	}
	n.promMu.Lock()
	defer n.promMu.Unlock()
	if n.track.sysIndex[name] == index {
		delete(n.track.sysIndex, name)
	}
}

// relinkSysctls follows the link of that name (index) for the sysctls
// the Node sets on it. A link other than the one last seen under the
// name (made again, renamed to it, or created after the start) has its
// own values: what the Node saved for the name is dropped (its file is
// gone), and promote_secondaries, where the Node sets it, is set and
// saved again, restored at the stop. The link last seen under the name
// is left alone: a value an operator changed on it stays (keepalived
// sets promote_secondaries once, at start, and not on an interface
// made again; directord also sets it on every interface that takes
// IPv4 VIPs, so that a VIP leaving takes no other address).
func (n *Node) relinkSysctls(name string, index int) {
	if n.track == nil {
		return
	}
	n.promMu.Lock()
	if old, ok := n.track.sysIndex[name]; ok && old == index {
		n.promMu.Unlock()
		return
	}
	n.track.sysIndex[name] = index
	prefix := "/proc/sys/net/ipv4/conf/" + name + "/"
	kept := n.sysctlPaths[:0]
	for _, p := range n.sysctlPaths {
		if strings.HasPrefix(p, prefix) {
			if s := n.promoted[p]; s != nil {
				s.f.Close()
				delete(n.promoted, p)
			}
			continue
		}
		kept = append(kept, p)
	}
	n.sysctlPaths = kept
	n.promMu.Unlock()
	if !slices.Contains(n.promoteDevs, name) {
		return
	}
	n.inNS(func() { n.setSysctl(promotePath(name), "1") })
	n.log.Info("vrrp: promote_secondaries set again on the interface made again", "interface", name)
}
