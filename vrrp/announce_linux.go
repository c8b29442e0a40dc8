package vrrp

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Announcer tells the segment that virtual addresses moved here: a
// gratuitous ARP for IPv4, an unsolicited Neighbor Advertisement for IPv6,
// each built as keepalived builds it (AppendGARP, AppendNA).
//
// It writes whole Ethernet frames on an AF_PACKET socket opened with
// protocol 0, which the kernel hands no frame at all: nothing is queued
// for a reader that does not exist, and the device needs no address of
// its own (a device that carries only VIPs is announced on like any
// other). A device without a 6-byte hardware address (lo, a tunnel) has
// no neighbours to tell: its announcements are skipped.
//
// # Network namespaces
//
// NewAnnouncer must run on a thread inside the namespace of the device:
// the socket and the device's forwarding sysctl (read at every NA, for
// the Router flag, as keepalived reads it) are bound to that namespace
// when opened, and Announce then works from any thread.
type Announcer struct {
	// mu guards what relink changes (dynif_linux.go): the interface
	// made again, or at last.
	mu     sync.Mutex
	ifi    *net.Interface
	fd     int      // -1: nothing to send on
	fwd    *os.File // net.ipv6.conf.IF.forwarding; nil without IPv6
	v4, v6 bool
	pace   *Pacer
	buf    []byte

	close sync.Once
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
// addresses on ifi, spaced by pace (nil: not spaced). On error nothing is
// left open.
func NewAnnouncer(ifi *net.Interface, v4, v6 bool, pace *Pacer) (*Announcer, error) {
	a := &Announcer{ifi: ifi, fd: -1, pace: pace, v4: v4, v6: v6, buf: make([]byte, 0, NAFrameLen)}
	if len(ifi.HardwareAddr) != 6 || (!v4 && !v6) {
		return a, nil
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("vrrp: announcement socket for %s: %w", ifi.Name, err)
	}
	a.fd = fd
	if v6 {
		if a.fwd, err = os.Open("/proc/sys/net/ipv6/conf/" + ifi.Name + "/forwarding"); err != nil {
			a.Close()
			return nil, fmt.Errorf("vrrp: announcements on %s: %w", ifi.Name, err)
		}
	}
	return a, nil
}

// forwarding reads the device's net.ipv6.conf.IF.forwarding afresh.
func (a *Announcer) forwarding() bool {
	var b [4]byte
	n, _ := a.fwd.ReadAt(b[:], 0) // io.EOF with the value: a short file
	return n > 0 && b[0] != '0'
}

// Announce sends one announcement for each address.
func (a *Announcer) Announce(addrs []netip.Addr) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.fd < 0 {
		return nil
	}
	var errs []error
	router, routerRead := false, false
	for _, addr := range addrs {
		var err error
		var proto uint16
		switch {
		case addr.Is4():
			a.buf, err = AppendGARP(a.buf[:0], a.ifi.HardwareAddr, addr)
			proto = unix.ETH_P_ARP
		case addr.Is6() && a.fwd != nil:
			if !routerRead {
				router, routerRead = a.forwarding(), true
			}
			a.buf, err = AppendNA(a.buf[:0], a.ifi.HardwareAddr, addr, router)
			proto = unix.ETH_P_IPV6
		default:
			continue
		}
		if err == nil {
			done := a.pace.wait(addr.Is6())
			err = a.send(proto)
			done()
		}
		if err != nil {
			what := "gratuitous ARP"
			if addr.Is6() {
				what = "unsolicited NA"
			}
			errs = append(errs, fmt.Errorf("%s for %s on %s: %w", what, addr, a.ifi.Name, err))
		}
	}
	return errors.Join(errs...)
}

func (a *Announcer) send(proto uint16) error {
	to := &unix.SockaddrLinklayer{Ifindex: a.ifi.Index, Protocol: htons(proto), Halen: 6}
	copy(to.Addr[:], a.buf[:6])
	return unix.Sendto(a.fd, a.buf, 0, to)
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// Close closes the socket and the sysctl. It may be called more than once.
func (a *Announcer) Close() error {
	var err error
	a.close.Do(func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.fd >= 0 {
			err = unix.Close(a.fd)
		}
		if a.fwd != nil {
			err = errors.Join(err, a.fwd.Close())
		}
	})
	return err
}

// closeAnnouncers closes what newInstance opened for the instance's
// announcements; an instance that fails half-built must not keep them.
func (in *instance) closeAnnouncers() {
	for _, a := range in.anns {
		a.Close()
	}
}
