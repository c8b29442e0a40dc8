package vrrp

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"time"
)

// IPProto is VRRP's IP protocol number.
const IPProto = 112

// TypeAdvertisement is the only VRRP packet type.
const TypeAdvertisement = 1

// MaxAddrs is the most addresses one advert carries (an 8-bit count).
const MaxAddrs = 255

// Authentication types of VRRPv2 (RFC 2338; RFC 3768 keeps only none).
const (
	AuthNone   = 0
	AuthSimple = 1 // an 8-byte clear-text password
	AuthAH     = 2 // IPsec AH: the IP layer authenticates, the field is unused
)

// ChecksumMode says how a VRRPv3 IPv4 checksum is computed. VRRPv2 sums the
// message only; VRRPv3 over IPv6 always includes the IPv6 pseudo-header.
type ChecksumMode uint8

const (
	// PseudoHeader includes the IPv4 pseudo-header (RFC 5798 section 5.2.8),
	// as keepalived and most implementations send.
	PseudoHeader ChecksumMode = iota
	// MessageOnly sums the VRRP message alone, as VRRPv2 does: the form
	// RFC 9568 allows for IPv4 and keepalived's v3_checksum_as_v2 selects.
	MessageOnly
)

// Advert is a VRRP advertisement.
type Advert struct {
	Version  uint8 // 2 or 3
	VRID     uint8
	Priority uint8
	// Interval is the advertisement interval in the version's unit:
	// seconds (8 bits) for VRRPv2, centiseconds (12 bits) for VRRPv3.
	Interval uint16
	AuthType uint8   // VRRPv2 only
	AuthData [8]byte // VRRPv2 only: the password for AuthSimple
	Checksum uint16  // as received, or as computed by AppendMarshal
	// ChecksumMode is how the received checksum was computed (VRRPv3
	// over IPv4: both forms are accepted).
	ChecksumMode ChecksumMode
	// Addrs are the virtual addresses, all of the IP family the advert
	// travelled in.
	Addrs []netip.Addr
}

// IntervalDuration is the advert interval as a duration.
func (a *Advert) IntervalDuration() time.Duration {
	if a.Version == 2 {
		return time.Duration(a.Interval) * time.Second
	}
	return time.Duration(a.Interval) * 10 * time.Millisecond
}

// Len is the length of the encoded advert for the given family.
func (a *Advert) Len(ipv6 bool) int {
	return messageLen(a.Version, ipv6, len(a.Addrs))
}

func messageLen(version uint8, ipv6 bool, n int) int {
	size := 4
	if ipv6 {
		size = 16
	}
	l := 8 + size*n
	if version == 2 {
		l += 8 // authentication data
	}
	return l
}

// DropReason is why a received packet was not taken; each has a counter.
type DropReason uint8

const (
	DropNone        DropReason = iota
	DropTruncated              // shorter than its header or its address count says
	DropLength                 // longer than its address count says
	DropVersion                // not version 2 or 3, or not the instance's
	DropType                   // not an advertisement
	DropChecksum               // checksum wrong in every accepted form
	DropTTL                    // TTL / hop limit not 255 (or outside the unicast range)
	DropVRID                   // no instance with this VRID
	DropAuth                   // VRRPv2 authentication type or password mismatch
	DropInterval               // VRRPv2 advert interval differs from ours
	DropAddrs                  // address list differs from ours (when checked)
	DropFamily                 // VRRPv2 over IPv6, or addresses of another family
	DropSource                 // unicast source not among the peers
	DropDestination            // sent to another multicast group than ours, or unicast to a multicast instance
	DropControl                // the socket's control messages lack its interface or destination
	dropReasons
)

var dropNames = [...]string{"none", "truncated", "length", "version", "type", "checksum", "ttl", "vrid", "auth", "interval", "addresses", "family", "source", "destination", "control"}

func (r DropReason) String() string {
	if int(r) < len(dropNames) {
		return dropNames[r]
	}
	return fmt.Sprintf("DropReason(%d)", r)
}

// DropReasons lists every reason, for registering counters.
func DropReasons() []DropReason {
	out := make([]DropReason, 0, dropReasons-1)
	for r := DropTruncated; r < dropReasons; r++ {
		out = append(out, r)
	}
	return out
}

// DecodeError is returned by Unmarshal with the reason to count.
type DecodeError struct {
	Reason DropReason
	Detail string
}

func (e *DecodeError) Error() string { return "vrrp: " + e.Reason.String() + ": " + e.Detail }

func decodeErr(r DropReason, format string, args ...any) error {
	return &DecodeError{Reason: r, Detail: fmt.Sprintf(format, args...)}
}

// Unmarshal decodes the VRRP message b, received in an IP packet from src to
// dst (which give the family and the pseudo-header). It checks the length
// against the address count, the version, the type and the checksum, and
// reuses a.Addrs's storage.
func (a *Advert) Unmarshal(b []byte, src, dst netip.Addr) error {
	if len(b) < 8 {
		return decodeErr(DropTruncated, "%d bytes, header needs 8", len(b))
	}
	// The checksum's pseudo-header needs both addresses, of one family.
	if !src.IsValid() || !dst.IsValid() || src.Unmap().Is4() != dst.Unmap().Is4() {
		return decodeErr(DropFamily, "source %v and destination %v", src, dst)
	}
	ipv6 := src.Is6() && !src.Is4In6()
	version, typ := b[0]>>4, b[0]&0x0f
	switch {
	case version != 2 && version != 3:
		return decodeErr(DropVersion, "version %d", version)
	case version == 2 && ipv6:
		return decodeErr(DropFamily, "VRRPv2 over IPv6")
	case typ != TypeAdvertisement:
		return decodeErr(DropType, "type %d", typ)
	}
	n := int(b[3])
	want := messageLen(version, ipv6, n)
	if len(b) < want {
		return decodeErr(DropTruncated, "%d bytes, %d addresses need %d", len(b), n, want)
	}
	if len(b) > want {
		return decodeErr(DropLength, "%d bytes, %d addresses need %d", len(b), n, want)
	}
	a.Version, a.VRID, a.Priority = version, b[1], b[2]
	a.Checksum = binary.BigEndian.Uint16(b[6:8])
	if version == 2 {
		a.AuthType, a.Interval = b[4], uint16(b[5])
		copy(a.AuthData[:], b[want-8:want])
	} else {
		a.AuthType, a.AuthData = 0, [8]byte{}
		a.Interval = binary.BigEndian.Uint16(b[4:6]) & 0x0fff
	}
	pseudoOK := func() bool { return checksum(b, pseudoSum(src, dst, len(b))) == 0 }
	switch {
	case version == 2:
		if checksum(b, 0) != 0 {
			return decodeErr(DropChecksum, "checksum %#04x", a.Checksum)
		}
		a.ChecksumMode = MessageOnly
	case ipv6:
		if !pseudoOK() {
			return decodeErr(DropChecksum, "checksum %#04x", a.Checksum)
		}
		a.ChecksumMode = PseudoHeader
	case pseudoOK():
		a.ChecksumMode = PseudoHeader
	case checksum(b, 0) == 0:
		// The message-only form of RFC 9568 and keepalived's
		// v3_checksum_as_v2.
		a.ChecksumMode = MessageOnly
	default:
		return decodeErr(DropChecksum, "checksum %#04x", a.Checksum)
	}
	a.Addrs = a.Addrs[:0]
	off := 8
	for i := 0; i < n; i++ {
		if ipv6 {
			a.Addrs = append(a.Addrs, netip.AddrFrom16([16]byte(b[off:off+16])))
			off += 16
		} else {
			a.Addrs = append(a.Addrs, netip.AddrFrom4([4]byte(b[off:off+4])))
			off += 4
		}
	}
	return nil
}

// AppendMarshal appends the encoded advert to b and returns it, computing
// the checksum for an IP packet from src to dst (the family comes from src;
// mode matters for VRRPv3 over IPv4 only). It fails if a field does not fit
// its version or an address is of the wrong family.
func (a *Advert) AppendMarshal(b []byte, src, dst netip.Addr, mode ChecksumMode) ([]byte, error) {
	ipv6 := src.Is6() && !src.Is4In6()
	switch {
	case a.Version != 2 && a.Version != 3:
		return b, fmt.Errorf("vrrp: version %d", a.Version)
	case a.Version == 2 && ipv6:
		return b, fmt.Errorf("vrrp: VRRPv2 over IPv6")
	case len(a.Addrs) > MaxAddrs:
		return b, fmt.Errorf("vrrp: %d addresses, at most %d fit", len(a.Addrs), MaxAddrs)
	case a.Version == 2 && a.Interval > 0xff:
		return b, fmt.Errorf("vrrp: VRRPv2 interval %d s does not fit 8 bits", a.Interval)
	case a.Version == 3 && a.Interval > 0x0fff:
		return b, fmt.Errorf("vrrp: VRRPv3 interval %d cs does not fit 12 bits", a.Interval)
	}
	start := len(b)
	b = append(b, a.Version<<4|TypeAdvertisement, a.VRID, a.Priority, uint8(len(a.Addrs)))
	if a.Version == 2 {
		b = append(b, a.AuthType, uint8(a.Interval))
	} else {
		b = binary.BigEndian.AppendUint16(b, a.Interval)
	}
	b = append(b, 0, 0)
	for _, addr := range a.Addrs {
		if addr.Is4In6() {
			addr = addr.Unmap()
		}
		if addr.Is6() != ipv6 {
			return b[:start], fmt.Errorf("vrrp: address %s is not of the advert's family", addr)
		}
		b = append(b, addr.AsSlice()...)
	}
	if a.Version == 2 {
		b = append(b, a.AuthData[:]...)
	}
	msg := b[start:]
	var initial uint32
	if a.Version == 3 && (ipv6 || mode == PseudoHeader) {
		initial = pseudoSum(src, dst, len(msg))
	}
	a.Checksum = checksum(msg, initial)
	binary.BigEndian.PutUint16(msg[6:8], a.Checksum)
	return b, nil
}

// pseudoSum is the one's complement sum of the IPv4 or IPv6 pseudo-header
// for a VRRP message of length n.
func pseudoSum(src, dst netip.Addr, n int) uint32 {
	var sum uint32
	add := func(b []byte) {
		for i := 0; i+1 < len(b); i += 2 {
			sum += uint32(b[i])<<8 | uint32(b[i+1])
		}
	}
	if src.Is4() || src.Is4In6() {
		s, d := src.Unmap().As4(), dst.Unmap().As4()
		add(s[:])
		add(d[:])
		sum += IPProto
		sum += uint32(n)
		return sum
	}
	s, d := src.As16(), dst.As16()
	add(s[:])
	add(d[:])
	sum += uint32(n) >> 16
	sum += uint32(n) & 0xffff
	sum += IPProto
	return sum
}

// checksum returns the Internet checksum of b added to the partial sum
// initial; over a message holding a correct checksum it returns 0.
func checksum(b []byte, initial uint32) uint16 {
	sum := initial
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// Expect is what an instance requires of the adverts it takes (RFC 3768
// section 7.1, RFC 9568 section 7.1, and keepalived's unicast options).
type Expect struct {
	Version uint8
	// Interval is ours, in the version's unit: a VRRPv2 advert with
	// another interval is dropped; a VRRPv3 backup adopts the master's.
	Interval uint16
	AuthType uint8 // VRRPv2
	AuthData [8]byte
	// Addrs are our virtual addresses, compared (in any order) with the
	// advert's when CheckAddrs is set.
	Addrs      []netip.Addr
	CheckAddrs bool
	// Unicast adverts carry the TTL the sender chose: it is checked only
	// against MinTTL/MaxTTL when one is set. Multicast adverts must come
	// with TTL (hop limit) 255.
	Unicast        bool
	MinTTL, MaxTTL uint8
	// Peers, when CheckSource is set, are the only sources taken.
	Peers       []netip.Addr
	CheckSource bool
}

// Check applies the receive rules to a decoded advert that arrived from src
// with the given TTL or hop limit, and says why it must be dropped, or
// DropNone.
func (a *Advert) Check(ttl uint8, src netip.Addr, e *Expect) DropReason {
	switch {
	case !e.Unicast && ttl != 255:
		return DropTTL
	case e.Unicast && ((e.MinTTL != 0 && ttl < e.MinTTL) || (e.MaxTTL != 0 && ttl > e.MaxTTL)):
		return DropTTL
	case a.Version != e.Version:
		return DropVersion
	case e.CheckSource && !containsAddr(e.Peers, src):
		return DropSource
	}
	if a.Version == 3 && a.Interval == 0 {
		// Adopted, it would make Master_Down_Interval 0: flapping.
		return DropInterval
	}
	if a.Version == 2 {
		if a.AuthType != e.AuthType || (e.AuthType == AuthSimple && a.AuthData != e.AuthData) {
			return DropAuth
		}
		if a.Interval != e.Interval {
			return DropInterval
		}
	}
	if e.CheckAddrs && !sameAddrs(a.Addrs, e.Addrs) {
		return DropAddrs
	}
	return DropNone
}

func containsAddr(list []netip.Addr, a netip.Addr) bool {
	for _, b := range list {
		if a == b {
			return true
		}
	}
	return false
}

// sameAddrs compares two address lists as sets; they are short (at most 255),
// so the quadratic check allocates nothing and costs little.
func sameAddrs(a, b []netip.Addr) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !containsAddr(b, x) {
			return false
		}
	}
	for _, x := range b {
		if !containsAddr(a, x) {
			return false
		}
	}
	return true
}
