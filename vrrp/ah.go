package vrrp

import (
	"crypto/hmac"
	"crypto/md5"
	"encoding/binary"
	"net/netip"
	"sync"
)

// IPsec AH for VRRPv2 over IPv4, as keepalived 2.2.7 builds it for
// `auth_type AH` (RFC 2338 section 5.3.6.3; the header of RFC 2402). The
// packet is an IPv4 header with protocol 51, a 24-byte AH header and the
// VRRP message, whose authentication type is 2 and whose authentication
// data stays zero: the password is never sent. keepalived writes the IPv4
// header itself (IP_HDRINCL) and the receiver reads it back, because the
// integrity check value covers it:
//
//   - the ICV is HMAC-MD5 keyed with auth_pass (its first 8 bytes, zero
//     padded) over the whole packet with the IPv4 TOS, fragment word and
//     checksum zeroed, the TTL zeroed too when the instance is unicast, and
//     the ICV field itself zeroed; its first 12 bytes (HMAC-MD5-96) are sent;
//   - the SPI is the sender's IPv4 source address;
//   - the sequence number is one counter per instance for what it sends and
//     what it accepts: it counts up from 0, one per advert (the first is 1),
//     and a received advert is taken only if its number is above the
//     counter, which then becomes that number. A backup therefore sends, on
//     becoming master, numbers above the last master's.

// ProtoAH is the IP protocol number of IPsec AH.
const ProtoAH = 51

const (
	ipv4HeaderLen = 20
	ahHeaderLen   = 24 // next header, payload length, reserved, SPI, sequence number, ICV
	ahICVLen      = 12 // HMAC-MD5-96
	// ahPayloadLen is AH's length in 32-bit words minus 2 (RFC 2402 section 2.2).
	ahPayloadLen = ahHeaderLen/4 - 2
	// AHOverhead is what AH adds before the VRRP message: the IPv4 header
	// directord writes itself and the AH header.
	AHOverhead = ipv4HeaderLen + ahHeaderLen
	// ahTOS is the IPv4 TOS keepalived sends with: internet network control.
	ahTOS = 0xc0
)

// AHKey is the HMAC-MD5 key: auth_pass's first 8 bytes, padded with zeros,
// as keepalived keeps it.
type AHKey [8]byte

// NewAHKey returns the key for auth_pass.
func NewAHKey(pass string) AHKey {
	var k AHKey
	copy(k[:], pass)
	return k
}

// AHHeader is what the IPv4 and AH headers of an advert carry.
type AHHeader struct {
	Src, Dst netip.Addr
	TTL      uint8
	ID       uint16 // the IPv4 identification: keepalived counts it up, never 0
	SPI      uint32
	Seq      uint32
}

// AppendAH appends to b the IPv4 packet that carries msg, a VRRPv2 message,
// under AH with h's fields, the SPI being the source address whatever
// h.SPI says. unicast zeroes the TTL in the ICV, as keepalived does for an
// instance with unicast peers. The IPv4 checksum is computed too, although
// the kernel rewrites it.
func AppendAH(b []byte, h *AHHeader, msg []byte, key *AHKey, unicast bool) []byte {
	start := len(b)
	total := AHOverhead + len(msg)
	src, dst := h.Src.Unmap().As4(), h.Dst.Unmap().As4()
	b = append(b, 0x45, ahTOS)
	b = binary.BigEndian.AppendUint16(b, uint16(total))
	b = binary.BigEndian.AppendUint16(b, h.ID)
	b = append(b, 0, 0, h.TTL, ProtoAH, 0, 0)
	b = append(b, src[:]...)
	b = append(b, dst[:]...)
	b = append(b, IPProto, ahPayloadLen, 0, 0)
	b = append(b, src[:]...) // the SPI
	b = binary.BigEndian.AppendUint32(b, h.Seq)
	b = append(b, make([]byte, ahICVLen)...)
	b = append(b, msg...)
	pkt := b[start:]
	icv := ahICV(pkt, key, unicast)
	copy(pkt[ipv4HeaderLen+12:], icv[:ahICVLen])
	binary.BigEndian.PutUint16(pkt[10:12], checksum(pkt[:ipv4HeaderLen], 0))
	return b
}

// ahICV computes the HMAC-MD5 of pkt with the mutable fields and the ICV
// zeroed, on a copy of the headers: pkt is not changed.
func ahICV(pkt []byte, key *AHKey, unicast bool) [md5.Size]byte {
	ihl := int(pkt[0]&0x0f) * 4
	var hdr [60 + ahHeaderLen]byte // the longest IPv4 header, then AH
	n := copy(hdr[:], pkt[:ihl+ahHeaderLen])
	hdr[1] = 0                           // TOS
	hdr[6], hdr[7] = 0, 0                // flags and fragment offset
	hdr[10], hdr[11] = 0, 0              // header checksum
	clear(hdr[ihl+12 : ihl+ahHeaderLen]) // the ICV
	if unicast {
		hdr[8] = 0 // TTL
	}
	mac := hmac.New(md5.New, key[:])
	mac.Write(hdr[:n])
	mac.Write(pkt[ihl+ahHeaderLen:])
	var sum [md5.Size]byte
	mac.Sum(sum[:0])
	return sum
}

// ParseAH splits an IPv4 packet carrying AH into its headers and the VRRP
// message. It checks the structure only (lengths, AH carrying VRRP); the
// ICV, the SPI and the sequence number are VerifyAH's and AHState's.
func ParseAH(pkt []byte) (AHHeader, []byte, error) {
	var h AHHeader
	if len(pkt) < ipv4HeaderLen {
		return h, nil, decodeErr(DropTruncated, "%d bytes, an IPv4 header needs 20", len(pkt))
	}
	ihl := int(pkt[0]&0x0f) * 4
	switch {
	case pkt[0]>>4 != 4 || ihl < ipv4HeaderLen:
		return h, nil, decodeErr(DropVersion, "not an IPv4 header (%#02x)", pkt[0])
	case pkt[9] != ProtoAH:
		return h, nil, decodeErr(DropAuth, "IP protocol %d, not AH", pkt[9])
	case len(pkt) < ihl+ahHeaderLen:
		return h, nil, decodeErr(DropTruncated, "%d bytes, IPv4 and AH headers need %d", len(pkt), ihl+ahHeaderLen)
	}
	if total := int(binary.BigEndian.Uint16(pkt[2:4])); total != len(pkt) {
		return h, nil, decodeErr(DropLength, "IPv4 total length %d, %d bytes received", total, len(pkt))
	}
	ah := pkt[ihl:]
	switch {
	case ah[0] != IPProto:
		// keepalived ignores AH carrying another protocol.
		return h, nil, decodeErr(DropType, "AH next header %d, not VRRP", ah[0])
	case ah[1] != ahPayloadLen:
		return h, nil, decodeErr(DropAuth, "AH payload length %d, HMAC-MD5-96 has %d", ah[1], ahPayloadLen)
	}
	h.Src = netip.AddrFrom4([4]byte(pkt[12:16]))
	h.Dst = netip.AddrFrom4([4]byte(pkt[16:20]))
	h.TTL = pkt[8]
	h.ID = binary.BigEndian.Uint16(pkt[4:6])
	h.SPI = binary.BigEndian.Uint32(ah[4:8])
	h.Seq = binary.BigEndian.Uint32(ah[8:12])
	return h, pkt[ihl+ahHeaderLen:], nil
}

// VerifyAH reports whether pkt, which ParseAH took, carries the ICV that
// key gives and the SPI its source address: keepalived's checks, in its
// order, before the sequence number's.
func VerifyAH(pkt []byte, key *AHKey, unicast bool) bool {
	ihl := int(pkt[0]&0x0f) * 4
	icv := ahICV(pkt, key, unicast)
	if !hmac.Equal(icv[:ahICVLen], pkt[ihl+12:ihl+ahHeaderLen]) {
		return false
	}
	return [4]byte(pkt[ihl+4:ihl+8]) == [4]byte(pkt[12:16])
}

// AHState is one instance's AH: its key, and the IPv4 identification and
// sequence number counters, shared between the goroutine that sends and
// the one that receives.
type AHState struct {
	Key     AHKey
	Unicast bool // the TTL is left out of the ICV

	mu     sync.Mutex
	id     uint16
	seq    uint32
	cycled bool // the sequence number reached its end: keepalived's "cycle"
}

// Carry takes over o's counters: a reload that keeps an instance keeps
// its sequence numbers, as keepalived's restore_vrrp_state keeps its
// ipsecah_counter, so that a peer which heard them refuses none of the
// next ones.
func (s *AHState) Carry(o *AHState) {
	o.mu.Lock()
	id, seq, cycled := o.id, o.seq, o.cycled
	o.mu.Unlock()
	s.mu.Lock()
	s.id, s.seq, s.cycled = id, seq, cycled
	s.mu.Unlock()
}

// Next counts the IPv4 identification (skipping 0, which would make the
// kernel choose one) and the sequence number for the next advert. At
// 0xFFFFFFFE the sequence number stops, as keepalived's does, until the
// instance next becomes master (BecomeMaster).
func (s *AHState) Next() (id uint16, seq uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.id++
	if s.id == 0 {
		s.id = 1
	}
	if s.seq > 0xFFFFFFFD {
		s.cycled = true
	} else {
		s.seq++
	}
	return s.id, s.seq
}

// Accept takes a verified advert's sequence number if it is above the
// counter, which becomes it; a number already seen (or lower) is a replay.
// backup says the instance is a backup, where keepalived clears its cycle
// flag on a good advert.
func (s *AHState) Accept(seq uint32, backup bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if seq <= s.seq {
		return false
	}
	s.seq = seq
	if backup {
		s.cycled = false
	}
	return true
}

// BecomeMaster restarts the sequence number at 0 if it had reached its
// end, as keepalived does on becoming master.
func (s *AHState) BecomeMaster() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cycled {
		s.cycled, s.seq = false, 0
	}
}

// Seq is the counter, for tests and status.
func (s *AHState) Seq() uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seq
}
