package vrrp

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
)

// The announcements as keepalived 2.2.7 builds them, whole Ethernet frames
// written into the caller's buffer (vrrp_arp.c, vrrp_ndisc.c; checked
// against frames captured from it, announce_test.go).

// ARPFrameLen and NAFrameLen are the lengths of the frames AppendGARP and
// AppendNA write.
const (
	ARPFrameLen = 14 + 28
	NAFrameLen  = 14 + 40 + 24 + 8
)

var errAnnounceArgs = errors.New("vrrp: announcement needs a 6-byte hardware address and an address of the family")

// AppendGARP appends a gratuitous ARP for addr from hw: an ARP request
// broadcast, sender and target protocol address both addr, target
// hardware address ff:ff:ff:ff:ff:ff, as keepalived sends it.
func AppendGARP(b []byte, hw net.HardwareAddr, addr netip.Addr) ([]byte, error) {
	if len(hw) != 6 || !addr.Is4() {
		return b, errAnnounceArgs
	}
	bcast := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	ip := addr.As4()
	b = append(b, bcast...)
	b = append(b, hw...)
	b = binary.BigEndian.AppendUint16(b, 0x0806) // ETH_P_ARP
	b = binary.BigEndian.AppendUint16(b, 1)      // ARPHRD_ETHER
	b = binary.BigEndian.AppendUint16(b, 0x0800) // ETH_P_IP
	b = append(b, 6, 4)
	b = binary.BigEndian.AppendUint16(b, 1) // ARPOP_REQUEST
	b = append(b, hw...)
	b = append(b, ip[:]...)
	b = append(b, bcast...)
	return append(b, ip[:]...), nil
}

// AppendNA appends an unsolicited Neighbor Advertisement for addr from hw,
// as keepalived sends it: from addr itself to all nodes (ff02::1, Ethernet
// 33:33:00:00:00:01), hop limit 255, the Override flag, the Router flag
// when the interface forwards (RFC 5798 section 6.4.2's "Router flag set
// as appropriate"; keepalived reads net.ipv6.conf.IF.forwarding), and the
// target link-layer address option.
func AppendNA(b []byte, hw net.HardwareAddr, addr netip.Addr, router bool) ([]byte, error) {
	if len(hw) != 6 || !addr.Is6() || addr.Is4In6() {
		return b, errAnnounceArgs
	}
	src := addr.As16()
	dst := allNodes.As16()
	b = append(b, 0x33, 0x33, 0, 0, 0, 1)
	b = append(b, hw...)
	b = binary.BigEndian.AppendUint16(b, 0x86dd) // ETH_P_IPV6
	b = append(b, 0x60, 0, 0, 0)
	b = binary.BigEndian.AppendUint16(b, 32) // payload: NA and one option
	b = append(b, 58, 255)                   // ICMPv6, hop limit
	b = append(b, src[:]...)
	b = append(b, dst[:]...)
	icmp := len(b)
	var flags byte = 0x20 // Override
	if router {
		flags |= 0x80
	}
	b = append(b, 136, 0, 0, 0, flags, 0, 0, 0)
	b = append(b, src[:]...)
	b = append(b, 2, 1) // target link-layer address, 8 bytes
	b = append(b, hw...)
	binary.BigEndian.PutUint16(b[icmp+2:], icmp6Checksum(src, dst, b[icmp:]))
	return b, nil
}

var allNodes = netip.MustParseAddr("ff02::1")

// icmp6Checksum is the ICMPv6 checksum over the pseudo-header (RFC 8200
// section 8.1) and msg, whose checksum field is zero.
func icmp6Checksum(src, dst [16]byte, msg []byte) uint16 {
	var sum uint32
	add := func(p []byte) {
		for i := 0; i+1 < len(p); i += 2 {
			sum += uint32(p[i])<<8 | uint32(p[i+1])
		}
		if len(p)%2 == 1 {
			sum += uint32(p[len(p)-1]) << 8
		}
	}
	add(src[:])
	add(dst[:])
	sum += uint32(len(msg)) + 58
	add(msg)
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}
