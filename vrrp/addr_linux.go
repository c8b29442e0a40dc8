package vrrp

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"

	"github.com/vishvananda/netlink"

	"github.com/directord/directord/config"
)

// Addrs adds and removes virtual addresses with netlink and remembers which
// it added, so that it removes exactly those, and never an address that was
// on the interface before (the address owner's, or an operator's).
//
// # Network namespaces
//
// The netlink handle decides the namespace: netlink.NewHandleAt for another
// one.
type Addrs struct {
	h     *netlink.Handle
	added *installed[addrKey, *netlink.Addr]
}

// NewAddrs returns an Addrs working through h.
func NewAddrs(h *netlink.Handle) *Addrs {
	return &Addrs{h: h, added: newInstalled[addrKey, *netlink.Addr]()}
}

// toNetlink converts a configured virtual address.
func toNetlink(v config.VIP) *netlink.Addr {
	a := &netlink.Addr{IPNet: &net.IPNet{IP: v.Prefix.Addr().AsSlice(), Mask: net.CIDRMask(v.Prefix.Bits(), v.Prefix.Addr().BitLen())},
		Label: v.Label}
	if v.Prefix.Addr().Is4() {
		// As "ip addr add" without brd: no broadcast address unless given.
		a.Broadcast = net.IPv4zero
		if v.Broadcast.IsValid() {
			a.Broadcast = v.Broadcast.AsSlice()
		}
	}
	switch v.Scope {
	case "", "global":
		a.Scope = int(netlink.SCOPE_UNIVERSE)
	case "site":
		a.Scope = int(netlink.SCOPE_SITE)
	case "link":
		a.Scope = int(netlink.SCOPE_LINK)
	case "host":
		a.Scope = int(netlink.SCOPE_HOST)
	case "nowhere":
		a.Scope = int(netlink.SCOPE_NOWHERE)
	default:
		fmt.Sscan(v.Scope, &a.Scope)
	}
	if v.Peer.IsValid() {
		a.Peer = &net.IPNet{IP: v.Peer.AsSlice(), Mask: net.CIDRMask(v.Peer.BitLen(), v.Peer.BitLen())}
	}
	if v.Prefix.Addr().Is6() && !v.DAD {
		// As keepalived: a VIP is usable the moment it is added, and a
		// duplicate met during a split brain cannot leave it "dadfailed"
		// for good; VRRP is the duplicate detection. "-nodad" turns the
		// kernel's DAD back on (config.VIP.DAD).
		a.Flags |= syscall.IFA_F_NODAD
	}
	if v.Home {
		a.Flags |= syscall.IFA_F_HOMEADDRESS
	}
	if v.NoPrefixRoute {
		a.Flags |= 0x200 // IFA_F_NOPREFIXROUTE
	}
	if v.MngTmpAddr {
		a.Flags |= 0x100 // IFA_F_MANAGETEMPADDR
	}
	if v.Prefix.Addr().Is6() {
		a.ValidLft = 0xffffffff // forever
		a.PreferedLft = 0xffffffff
		if v.PreferredLft >= 0 {
			a.PreferedLft = v.PreferredLft
		}
	}
	return a
}

// Add adds v on link. An address already there is left alone and not
// claimed: Remove will not take it away.
func (m *Addrs) Add(link string, v config.VIP) error {
	return m.added.add(addrKey{link, v.Prefix}, func() (*netlink.Addr, bool, error) {
		l, err := m.h.LinkByName(link)
		if err != nil {
			return nil, false, fmt.Errorf("add %s: link %s: %w", v.Prefix, link, err)
		}
		a := toNetlink(v)
		err = m.h.AddrAdd(l, a)
		// Removed from this link, whatever its name by then: renamed
		// under a master, the link keeps it otherwise, as keepalived's
		// removal by ifindex does not.
		a.LinkIndex = l.Attrs().Index
		if errors.Is(err, syscall.EEXIST) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, fmt.Errorf("add %s to %s: %w", v.Prefix, link, err)
		}
		return a, true, nil
	})
}

// Remove removes v from link if Add added it.
func (m *Addrs) Remove(link string, v config.VIP) error {
	return m.added.remove(addrKey{link, v.Prefix}, func(a *netlink.Addr) error { return m.del(link, a) })
}

func (m *Addrs) del(link string, a *netlink.Addr) error {
	if a.LinkIndex > 0 {
		// ENODEV: the link is gone, the address with it.
		err := m.h.AddrDel(nil, a)
		if err != nil && !errors.Is(err, syscall.EADDRNOTAVAIL) && !errors.Is(err, syscall.ENODEV) {
			return fmt.Errorf("remove %s from %s: %w", a.IPNet, link, err)
		}
		return nil
	}
	l, err := m.h.LinkByName(link)
	if err != nil {
		return fmt.Errorf("remove %s: link %s: %w", a.IPNet, link, err)
	}
	if err := m.h.AddrDel(l, a); err != nil && !errors.Is(err, syscall.EADDRNOTAVAIL) {
		return fmt.Errorf("remove %s from %s: %w", a.IPNet, link, err)
	}
	return nil
}

// RemoveAll removes every address Add added.
func (m *Addrs) RemoveAll() error {
	return m.added.removeAll(func(k addrKey, a *netlink.Addr) error { return m.del(k.link, a) })
}

// Has reports whether link holds addr, for tests and status. List calls
// may be interrupted by a concurrent change (netlink.ErrDumpInterrupted,
// since vishvananda/netlink 1.3.0): they are retried.
func Has(h *netlink.Handle, link string, addr netip.Addr) (bool, error) {
	l, err := h.LinkByName(link)
	if err != nil {
		return false, err
	}
	for try := 0; ; try++ {
		list, err := h.AddrList(l, netlink.FAMILY_ALL)
		if errors.Is(err, netlink.ErrDumpInterrupted) && try < 5 {
			continue
		}
		if err != nil {
			return false, err
		}
		for _, a := range list {
			if ip, ok := netip.AddrFromSlice(a.IP); ok && ip.Unmap() == addr {
				return true, nil
			}
		}
		return false, nil
	}
}

// take moves the claim on (link, prefix) from another Addrs to m: the
// address stays on the interface and m will remove it. It reports whether
// from had claimed it.
func (m *Addrs) take(from *Addrs, link string, prefix netip.Prefix) bool {
	k := addrKey{link, prefix}
	return m.added.take(from.added, k, k)
}
