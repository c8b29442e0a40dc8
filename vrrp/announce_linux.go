package vrrp

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/ndp"
)

// Announcer tells the segment that virtual addresses moved here: a
// gratuitous ARP request (RFC 5227's announcement: sender and target both
// the address) for IPv4, an unsolicited Neighbor Advertisement with the
// Override flag to all nodes (RFC 4861 section 7.2.6) for IPv6.
//
// Its sockets belong to the namespace of the thread that created it.
type Announcer struct {
	ifi  *net.Interface
	arp  *arp.Client
	ndp  *ndp.Conn
	pace *Pacer
}

// Pacer spaces the announcements sent on one interface, however many
// instances send them (vrrp_garp_interval, vrrp_gna_interval): a switch
// flooded with ARPs may drop some.
type Pacer struct {
	mu           sync.Mutex
	Gap4, Gap6   time.Duration
	last4, last6 time.Time
}

// wait returns when the next announcement of that family may leave.
func (p *Pacer) wait(ipv6 bool) func() {
	if p == nil {
		return func() {}
	}
	p.mu.Lock()
	gap, last := p.Gap4, &p.last4
	if ipv6 {
		gap, last = p.Gap6, &p.last6
	}
	if d := time.Until(last.Add(gap)); gap > 0 && d > 0 {
		time.Sleep(d)
	}
	return func() {
		*last = time.Now()
		p.mu.Unlock()
	}
}

// NewAnnouncer opens what is needed to announce IPv4 (v4) and IPv6 (v6)
// addresses on ifi, spaced by pace (nil: not spaced).
func NewAnnouncer(ifi *net.Interface, v4, v6 bool, pace *Pacer) (*Announcer, error) {
	a := &Announcer{ifi: ifi, pace: pace}
	var err error
	if v4 {
		if a.arp, err = arp.Dial(ifi); err != nil {
			return nil, fmt.Errorf("vrrp: ARP socket on %s: %w", ifi.Name, err)
		}
	}
	if v6 {
		if a.ndp, _, err = ndp.Listen(ifi, ndp.LinkLocal); err != nil {
			a.Close()
			return nil, fmt.Errorf("vrrp: NDP socket on %s: %w", ifi.Name, err)
		}
	}
	return a, nil
}

var allNodes = netip.MustParseAddr("ff02::1")

// Announce sends one announcement for each address.
func (a *Announcer) Announce(addrs []netip.Addr) error {
	var errs []error
	for _, addr := range addrs {
		done := a.pace.wait(addr.Is6())
		switch {
		case addr.Is4() && a.arp != nil:
			p, err := arp.NewPacket(arp.OperationRequest, a.ifi.HardwareAddr, addr, net.HardwareAddr{0, 0, 0, 0, 0, 0}, addr)
			if err == nil {
				err = a.arp.WriteTo(p, ethernet.Broadcast)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("gratuitous ARP for %s on %s: %w", addr, a.ifi.Name, err))
			}
		case addr.Is6() && a.ndp != nil:
			na := &ndp.NeighborAdvertisement{Override: true, TargetAddress: addr,
				Options: []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Target, Addr: a.ifi.HardwareAddr}}}
			if err := a.ndp.WriteTo(na, nil, allNodes); err != nil {
				errs = append(errs, fmt.Errorf("unsolicited NA for %s on %s: %w", addr, a.ifi.Name, err))
			}
		}
		done()
	}
	return errors.Join(errs...)
}

// Close closes the sockets.
func (a *Announcer) Close() error {
	var errs []error
	if a.arp != nil {
		errs = append(errs, a.arp.Close())
	}
	if a.ndp != nil {
		errs = append(errs, a.ndp.Close())
	}
	return errors.Join(errs...)
}
