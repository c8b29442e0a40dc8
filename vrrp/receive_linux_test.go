package vrrp

import (
	"bytes"
	"encoding/hex"
	"errors"
	"net/netip"
	"reflect"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/directord/directord/internal/fuzztest"
)

// The control messages as Linux delivers them to a VRRP socket (the layout
// of <linux/in.h> and <linux/ipv6.h>; x/sys's Cmsghdr carries the word
// size).

func cmsg(level, typ int32, data []byte) []byte {
	b := make([]byte, unix.CmsgSpace(len(data)))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level, h.Type = level, typ
	h.SetLen(unix.CmsgLen(len(data)))
	copy(b[unix.CmsgLen(0):], data)
	return b
}

func pktinfo4(ifindex int32, dst netip.Addr) []byte {
	pi := unix.Inet4Pktinfo{Ifindex: ifindex, Addr: dst.As4()}
	return cmsg(unix.IPPROTO_IP, unix.IP_PKTINFO, unsafe.Slice((*byte)(unsafe.Pointer(&pi)), unix.SizeofInet4Pktinfo))
}

func pktinfo6(ifindex uint32, dst netip.Addr) []byte {
	pi := unix.Inet6Pktinfo{Ifindex: ifindex, Addr: dst.As16()}
	return cmsg(unix.IPPROTO_IPV6, unix.IPV6_PKTINFO, unsafe.Slice((*byte)(unsafe.Pointer(&pi)), unix.SizeofInet6Pktinfo))
}

func intMsg(level, typ int32, v int32) []byte {
	return cmsg(level, typ, unsafe.Slice((*byte)(unsafe.Pointer(&v)), 4))
}

// ipv4Packet puts msg behind an IPv4 header, as a raw socket delivers it.
func ipv4Packet(ttl uint8, src, dst netip.Addr, msg []byte) []byte {
	h := make([]byte, 20, 20+len(msg))
	h[0], h[8], h[9] = 0x45, ttl, IPProto
	h[2], h[3] = byte((20+len(msg))>>8), byte(20+len(msg))
	s, d := src.As4(), dst.As4()
	copy(h[12:], s[:])
	copy(h[16:], d[:])
	return append(h, msg...)
}

// datagram is one read of a socket: the bytes, the control messages, the
// sender's address.
type datagram struct {
	name       string
	ipv6       bool
	b, oob     []byte
	from       netip.Addr
	wantAdvert *Advert // known good: decodes to this and is taken
}

const testIfIndex = 2

// goodDatagrams are keepalived 2.2.7's captured adverts, each wrapped as
// the kernel hands it to our socket.
func goodDatagrams() []datagram {
	var out []datagram
	for _, c := range captured {
		msg, _ := hex.DecodeString(c.hex)
		src, dst := netip.MustParseAddr(c.src), netip.MustParseAddr(c.dst)
		want := c.want
		d := datagram{name: c.name, from: src, wantAdvert: &want}
		if src.Is4() {
			d.b = ipv4Packet(255, src, dst, msg)
			d.oob = append(pktinfo4(testIfIndex, dst), intMsg(unix.IPPROTO_IP, unix.IP_TTL, 255)...)
		} else {
			d.ipv6, d.b = true, msg
			d.oob = append(pktinfo6(testIfIndex, dst), intMsg(unix.IPPROTO_IPV6, unix.IPV6_HOPLIMIT, 255)...)
		}
		out = append(out, d)
	}
	return out
}

// badDatagrams are what a socket may deliver that must be dropped, each
// with its reason.
func badDatagrams() []struct {
	datagram
	reason DropReason
} {
	v3, _ := hex.DecodeString("310b96010032d3c1c000026e") // v3 IPv4
	v6, _ := hex.DecodeString(captured[5].hex)
	src4, grp4 := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("224.0.0.18")
	src6, grp6 := netip.MustParseAddr("fe80::ac89:3bff:fec9:d93"), netip.MustParseAddr("ff02::12")
	good4 := append(pktinfo4(testIfIndex, grp4), intMsg(unix.IPPROTO_IP, unix.IP_TTL, 255)...)
	type bad = struct {
		datagram
		reason DropReason
	}
	return []bad{
		{datagram{name: "v3 IPv4 without any control message", b: ipv4Packet(255, src4, grp4, v3), from: src4}, DropControl},
		{datagram{name: "v3 IPv4, TTL but no PKTINFO", b: ipv4Packet(255, src4, grp4, v3), oob: intMsg(unix.IPPROTO_IP, unix.IP_TTL, 255), from: src4}, DropControl},
		{datagram{name: "v3 IPv4, truncated control message", b: ipv4Packet(255, src4, grp4, v3), oob: good4[:len(good4)-5], from: src4}, DropControl},
		{datagram{name: "IPv4 header cut short", b: ipv4Packet(255, src4, grp4, v3)[:19], oob: good4, from: src4}, DropTruncated},
		{datagram{name: "IPv4 header length past the end", b: append([]byte{0x4f}, ipv4Packet(255, src4, grp4, v3)[1:]...), oob: good4, from: src4}, DropTruncated},
		{datagram{name: "IPv6 packet on the IPv4 socket", b: append([]byte{0x65}, ipv4Packet(255, src4, grp4, v3)[1:]...), oob: good4, from: src4}, DropFamily},
		{datagram{name: "v3 IPv6 without PKTINFO", ipv6: true, b: v6, oob: intMsg(unix.IPPROTO_IPV6, unix.IPV6_HOPLIMIT, 255), from: src6}, DropControl},
		{datagram{name: "v3 IPv6 without any control message", ipv6: true, b: v6, from: src6}, DropControl},
		{datagram{name: "v3 IPv6 from a v4-mapped source", ipv6: true, b: v6, oob: pktinfo6(testIfIndex, grp6), from: netip.MustParseAddr("::ffff:192.0.2.1")}, DropFamily},
		{datagram{name: "v3 IPv6 without a source", ipv6: true, b: v6, oob: pktinfo6(testIfIndex, grp6)}, DropFamily},
	}
}

func TestParseDatagram(t *testing.T) {
	for _, d := range goodDatagrams() {
		t.Run(d.name, func(t *testing.T) {
			msg, r, err := parseDatagram(d.ipv6, d.b, d.oob, d.from)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := hex.DecodeString(captured[indexOfCapture(d.name)].hex)
			if !bytes.Equal(msg, want) || r.TTL != 255 || r.IfIndex != testIfIndex || r.Src != d.from || !r.Dst.IsMulticast() {
				t.Fatalf("got %x %+v, want %x from %s, TTL 255, interface %d", msg, r, want, d.from, testIfIndex)
			}
		})
	}
	for _, d := range badDatagrams() {
		t.Run(d.name, func(t *testing.T) {
			_, _, err := parseDatagram(d.ipv6, d.b, d.oob, d.from)
			var de *DecodeError
			if !errors.As(err, &de) || de.Reason != d.reason {
				t.Fatalf("got %v, want a drop for %s", err, d.reason)
			}
		})
	}
}

func indexOfCapture(name string) int {
	for i, c := range captured {
		if c.name == name {
			return i
		}
	}
	return -1
}

// TestUnmarshalWithoutDestination: the pseudo-header of VRRPv3 over IPv4
// needs the destination; a read that did not give it (the zero address)
// used to panic in As4. Mixed families panicked the same way.
func TestUnmarshalWithoutDestination(t *testing.T) {
	v3 := mustHex(t, "310b96010032d3c1c000026e")
	for _, c := range []struct{ src, dst netip.Addr }{
		{netip.MustParseAddr("192.0.2.1"), netip.Addr{}},
		{netip.Addr{}, netip.MustParseAddr("224.0.0.18")},
		{netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("ff02::12")},
		{netip.MustParseAddr("fe80::1"), netip.MustParseAddr("224.0.0.18")},
	} {
		var a Advert
		err := a.Unmarshal(v3, c.src, c.dst)
		if reason(err) != DropFamily {
			t.Errorf("%v -> %v: %v, want a drop for family", c.src, c.dst, err)
		}
	}
}

// TestAdmitUnicastWithoutPeers: a unicast instance whose only peer is
// itself sends to no one; a multicast advert reaching its socket is
// dropped for its destination (it used to index its empty list of
// destinations).
func TestAdmitUnicastWithoutPeers(t *testing.T) {
	var a Advert
	if err := a.Unmarshal(mustHex(t, "310b96010032d3c1c000026e"), netip.MustParseAddr("192.0.2.1"), Group4); err != nil {
		t.Fatal(err)
	}
	e := Expect{Version: 3, Interval: 50, Unicast: true}
	r := Received{Src: netip.MustParseAddr("192.0.2.1"), Dst: Group4, TTL: 255, IfIndex: testIfIndex}
	if reason, own := admit(&a, r, netip.Addr{}, netip.MustParseAddr("192.0.2.2"), &e); reason != DropDestination || own {
		t.Fatalf("got %v (own %v), want a drop for its destination", reason, own)
	}
	r.Dst = netip.MustParseAddr("192.0.2.2")
	if reason, own := admit(&a, r, netip.Addr{}, netip.MustParseAddr("192.0.2.2"), &e); reason != DropNone || own {
		t.Fatalf("unicast advert: got %v (own %v), want taken", reason, own)
	}
}

// FuzzReceive feeds the receive path what a socket may deliver: the
// datagram (for IPv4 with its IP header), the control messages' bytes and
// the sender's address, through parseDatagram, Unmarshal and admit for a
// multicast instance and a unicast one without peers. Nothing may panic,
// every drop has a reason, and keepalived's captured adverts, wrapped as
// the kernel delivers them, must decode to the captured advert and be taken.
func FuzzReceive(f *testing.F) {
	good := goodDatagrams()
	for _, d := range good {
		f.Add(d.ipv6, d.b, d.oob, d.from.AsSlice())
	}
	for _, d := range badDatagrams() {
		f.Add(d.ipv6, d.b, d.oob, d.from.AsSlice())
	}
	f.Fuzz(func(t *testing.T, ipv6 bool, b, oob, fromBytes []byte) {
		fuzztest.Bound(t)
		from, _ := netip.AddrFromSlice(fromBytes)
		var known *datagram
		for i := range good {
			if good[i].ipv6 == ipv6 && bytes.Equal(good[i].b, b) && bytes.Equal(good[i].oob, oob) && good[i].from == from {
				known = &good[i]
			}
		}
		fail := func(format string, args ...any) {
			if known != nil {
				t.Fatalf("known-good %q: "+format, append([]any{known.name}, args...)...)
			}
		}
		msg, r, err := parseDatagram(ipv6, b, oob, from)
		if err != nil {
			if reason(err) == DropNone {
				t.Fatalf("error without a reason: %v", err)
			}
			fail("%v", err)
			return
		}
		var a Advert
		if err := a.Unmarshal(msg, r.Src, r.Dst); err != nil {
			if reason(err) == DropNone {
				t.Fatalf("error without a reason: %v", err)
			}
			fail("%v", err)
			return
		}
		if known != nil && !reflect.DeepEqual(a, *known.wantAdvert) {
			fail("decoded %+v, want %+v", a, *known.wantAdvert)
		}
		group := Group4
		if ipv6 {
			group = Group6
		}
		e := Expect{Version: a.Version, Interval: a.Interval, AuthType: a.AuthType, AuthData: a.AuthData}
		if reason, _ := admit(&a, r, group, netip.Addr{}, &e); reason != DropNone {
			fail("multicast instance drops it: %v", reason)
		}
		e.Unicast, e.CheckSource = true, true
		_, _ = admit(&a, r, netip.Addr{}, r.Dst, &e)
	})
}

// TestHeard checks what an instance notes of an advert it took.
func TestHeard(t *testing.T) {
	for _, tc := range []struct {
		name           string
		backup         bool
		prio, advPrio  uint8
		noteSrc, clash bool
	}{
		{name: "backup hears a master", backup: true, prio: 100, advPrio: 150, noteSrc: true},
		{name: "backup hears a master leave", backup: true, prio: 100, advPrio: 0},
		{name: "master hears a master", prio: 100, advPrio: 150},
		{name: "owner hears an owner", prio: 255, advPrio: 255, clash: true},
		{name: "backup owner hears an owner", backup: true, prio: 255, advPrio: 255, noteSrc: true, clash: true},
		{name: "owner hears a router", prio: 255, advPrio: 254},
		{name: "router hears an owner", backup: true, prio: 254, advPrio: 255, noteSrc: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := Advert{Priority: tc.advPrio}
			noteSrc, clash := heard(&a, tc.backup, tc.prio)
			if noteSrc != tc.noteSrc || clash != tc.clash {
				t.Errorf("heard: noteSrc %v clash %v, want %v %v", noteSrc, clash, tc.noteSrc, tc.clash)
			}
		})
	}
}
