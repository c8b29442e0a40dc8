package vrrp

import (
	"net"
	"net/netip"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

// Received is what a read returns besides the VRRP message.
type Received struct {
	Src, Dst netip.Addr
	TTL      uint8
	IfIndex  int
	// Packet is, on an AH Conn, the whole IPv4 packet the message came in,
	// for VerifyAH; valid until the next Read.
	Packet []byte
}

// parseDatagram turns what one recvmsg on a VRRP socket returned into the
// VRRP message and what is known of its packet, or a *DecodeError with the
// reason to count. b is the datagram as a raw socket delivers it: for IPv4
// with its IP header (the TTL and destination are read from it), for IPv6
// the message alone. oob is the control messages: IP_PKTINFO (the
// interface), and for IPv6 IPV6_PKTINFO (destination, interface) and
// IPV6_HOPLIMIT. from is the sender's address from the socket. A datagram
// whose control messages lack what the socket asked for is dropped
// (DropControl): a raw socket hears every interface, and one whose
// interface is not known cannot be taken. Received.IfIndex is set, when
// the control messages give it, even with an error.
//
// It is pure, so the fuzz target reaches the whole receive path without a
// socket.
func parseDatagram(ipv6Family bool, b, oob []byte, from netip.Addr) ([]byte, Received, error) {
	// The control messages first: a packet of another interface is
	// skipped whatever it holds, and only they say which it came on.
	var r Received
	var dst net.IP
	if !ipv6Family {
		var cm ipv4.ControlMessage
		if err := cm.Parse(oob); err != nil {
			return nil, r, decodeErr(DropControl, "control messages: %v", err)
		}
		r.IfIndex, dst = cm.IfIndex, cm.Dst
	} else {
		var cm ipv6.ControlMessage
		if err := cm.Parse(oob); err != nil {
			return nil, r, decodeErr(DropControl, "control messages: %v", err)
		}
		r.IfIndex, dst = cm.IfIndex, cm.Dst
		r.TTL = uint8(cm.HopLimit)
		r.Dst, _ = netip.AddrFromSlice(dst.To16())
	}
	if dst == nil {
		return nil, r, decodeErr(DropControl, "no PKTINFO: interface unknown")
	}
	if ipv6Family {
		r.Src = from.WithZone("")
		if !r.Src.Is6() || r.Src.Is4In6() || r.Dst.Is4In6() {
			return nil, r, decodeErr(DropFamily, "source %s, destination %s on an IPv6 socket", from, r.Dst)
		}
		return b, r, nil
	}
	if len(b) < ipv4.HeaderLen {
		return nil, r, decodeErr(DropTruncated, "%d bytes, an IPv4 header needs %d", len(b), ipv4.HeaderLen)
	}
	hl := int(b[0]&0x0f) << 2
	switch {
	case b[0]>>4 != 4:
		return nil, r, decodeErr(DropFamily, "IP version %d on an IPv4 socket", b[0]>>4)
	case hl < ipv4.HeaderLen || hl > len(b):
		return nil, r, decodeErr(DropTruncated, "IPv4 header length %d of %d bytes", hl, len(b))
	case b[9] != IPProto:
		return nil, r, decodeErr(DropType, "IP protocol %d", b[9])
	}
	r.TTL = b[8]
	r.Src = netip.AddrFrom4([4]byte(b[12:16]))
	r.Dst = netip.AddrFrom4([4]byte(b[16:20]))
	return b[hl:], r, nil
}

// admit applies one instance's rules to an advert its socket decoded:
// group is the instance's multicast group (invalid for a unicast
// instance, which takes no multicast advert), primary its own address
// (its own adverts, looped back, are ignored uncounted: own is true), e
// its expectations. It returns DropNone when the instance takes the
// advert.
func admit(a *Advert, r Received, group, primary netip.Addr, e *Expect) (reason DropReason, own bool) {
	// keepalived drops a multicast advert on a unicast instance (or of
	// another group) and a unicast one on a multicast instance ("Expected
	// multicast packet but received unicast packet"): the raw socket
	// hears both.
	if (r.Dst.IsMulticast() && r.Dst != group) || (r.Dst.IsValid() && !r.Dst.IsMulticast() && !e.Unicast) {
		return DropDestination, false
	}
	if reason := a.Check(r.TTL, r.Src, e); reason != DropNone {
		return reason, false
	}
	if r.Src == primary {
		return DropNone, true
	}
	return DropNone, false
}

// heard is what an instance of priority prio notes of an advert a it
// took (admit's DropNone, not its own): as a backup, the address it came
// from, unless a priority 0 (the master leaving), for skip_check_adv_addr
// (noteSrc: expectFrom's last); and whether the sender claims, as it
// does, to own the addresses (clash: both at priority 255, which
// keepalived logs, dropping its own to 254).
func heard(a *Advert, backup bool, prio uint8) (noteSrc, clash bool) {
	return backup && a.Priority != 0, a.Priority == 255 && prio == 255
}
