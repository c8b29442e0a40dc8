package bgp

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"

	"github.com/vishvananda/netlink"
)

// NetlinkAddresses adds and removes addresses through a netlink handle,
// in the network namespace the handle was made in.
type NetlinkAddresses struct {
	H *netlink.Handle
}

func addrOf(p netip.Prefix) *netlink.Addr {
	return &netlink.Addr{IPNet: &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}}
}

// Add puts p on dev; an address already there is no error.
func (n NetlinkAddresses) Add(p netip.Prefix, dev string) error {
	link, err := n.H.LinkByName(dev)
	if err != nil {
		return fmt.Errorf("add %s to %s: %w", p, dev, err)
	}
	a := addrOf(p)
	if p.Addr().Is6() {
		a.Flags = syscall.IFA_F_NODAD
	}
	if err := n.H.AddrAdd(link, a); err != nil && !errors.Is(err, syscall.EEXIST) {
		return fmt.Errorf("add %s to %s: %w", p, dev, err)
	}
	return nil
}

// Remove takes p off dev; an address already gone is no error.
func (n NetlinkAddresses) Remove(p netip.Prefix, dev string) error {
	link, err := n.H.LinkByName(dev)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return nil
		}
		return fmt.Errorf("remove %s from %s: %w", p, dev, err)
	}
	if err := n.H.AddrDel(link, addrOf(p)); err != nil && !errors.Is(err, syscall.EADDRNOTAVAIL) && !errors.Is(err, syscall.ENOENT) {
		return fmt.Errorf("remove %s from %s: %w", p, dev, err)
	}
	return nil
}
