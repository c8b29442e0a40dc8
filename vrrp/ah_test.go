package vrrp

import (
	"bytes"
	"encoding/hex"
	"net/netip"
	"testing"
)

// AH adverts captured from Debian's keepalived 2.2.7 in a network namespace
// (tcpdump on the peer's end of a veth pair): VRRPv2, VRID 51, priority
// 150, advert_int 1, VIP 192.0.2.100, auth_type AH, auth_pass s3cret; the
// first two it sent, whole IPv4 packets (the checksum is the kernel's).
var capturedAH = []struct {
	name string
	hex  string
	id   uint16
	seq  uint32
}{
	{"first advert", "45c0004000010000ff3318b6c0000201e0000012" +
		"70040000c000020100000001dbf63c07114bcf7ec73aeafa" +
		"2133960102018465c00002640000000000000000", 1, 1},
	{"second advert", "45c0004000020000ff3318b5c0000201e0000012" +
		"70040000c0000201000000022d9b568de9e218e97945af40" +
		"2133960102018465c00002640000000000000000", 2, 2},
}

var ahKey = NewAHKey("s3cret")

func ahAdvert() Advert {
	return Advert{Version: 2, VRID: 51, Priority: 150, Interval: 1, AuthType: AuthAH,
		Addrs: addrs("192.0.2.100")}
}

// TestAHEncodeKeepalived: directord builds keepalived's packets byte for
// byte from the same fields and key.
func TestAHEncodeKeepalived(t *testing.T) {
	src, dst := netip.MustParseAddr("192.0.2.1"), Group4
	for _, c := range capturedAH {
		t.Run(c.name, func(t *testing.T) {
			a := ahAdvert()
			msg, err := a.AppendMarshal(nil, src, dst, MessageOnly)
			if err != nil {
				t.Fatal(err)
			}
			got := AppendAH(nil, &AHHeader{Src: src, Dst: dst, TTL: 255, ID: c.id, Seq: c.seq}, msg, &ahKey, false)
			if want := mustHex(t, c.hex); !bytes.Equal(got, want) {
				t.Errorf("AppendAH:\n got %x\nwant %x", got, want)
			}
		})
	}
}

// TestAHDecodeKeepalived: keepalived's packets parse, verify with the key
// and decode to the advert it sent; the password is not in them.
func TestAHDecodeKeepalived(t *testing.T) {
	for _, c := range capturedAH {
		t.Run(c.name, func(t *testing.T) {
			pkt := mustHex(t, c.hex)
			h, msg, err := ParseAH(pkt)
			if err != nil {
				t.Fatal(err)
			}
			want := AHHeader{Src: netip.MustParseAddr("192.0.2.1"), Dst: Group4, TTL: 255, ID: c.id, SPI: 0xc0000201, Seq: c.seq}
			if h != want {
				t.Errorf("ParseAH: got %+v, want %+v", h, want)
			}
			if !VerifyAH(pkt, &ahKey, false) {
				t.Error("VerifyAH refuses keepalived's packet")
			}
			var a Advert
			if err := a.Unmarshal(msg, h.Src, h.Dst); err != nil {
				t.Fatal(err)
			}
			if a.AuthType != AuthAH || a.AuthData != ([8]byte{}) || a.Priority != 150 || a.VRID != 51 {
				t.Errorf("advert %+v", a)
			}
			if bytes.Contains(pkt, []byte("s3cret")) {
				t.Error("the password travels in the packet")
			}
		})
	}
}

// TestAHVerify: what the ICV covers and what it leaves out, as keepalived
// computes it.
func TestAHVerify(t *testing.T) {
	good := func() []byte { return mustHex(t, capturedAH[0].hex) }
	cases := []struct {
		name    string
		mutate  func(b []byte)
		key     string
		unicast bool
		ok      bool
	}{
		{"as sent", func([]byte) {}, "s3cret", false, true},
		{"key padded with zeros", func([]byte) {}, "s3cret\x00\x00", false, true},
		{"wrong key", func([]byte) {}, "s3cret!", false, false},
		{"TOS changed on the way", func(b []byte) { b[1] = 0 }, "s3cret", false, true},
		{"checksum changed", func(b []byte) { b[10] ^= 0xff }, "s3cret", false, true},
		{"fragment word changed", func(b []byte) { b[6] = 0x40 }, "s3cret", false, true},
		{"TTL changed, multicast: covered", func(b []byte) { b[8] = 254 }, "s3cret", false, false},
		{"IPv4 ID changed: covered", func(b []byte) { b[5] = 9 }, "s3cret", false, false},
		{"priority changed", func(b []byte) { b[20+24+2] = 254 }, "s3cret", false, false},
		{"sequence number changed", func(b []byte) { b[20+11] = 7 }, "s3cret", false, false},
		{"ICV changed", func(b []byte) { b[20+12] ^= 1 }, "s3cret", false, false},
		{"source changed", func(b []byte) { b[15] = 9 }, "s3cret", false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := good()
			c.mutate(b)
			k := NewAHKey(c.key)
			if got := VerifyAH(b, &k, c.unicast); got != c.ok {
				t.Errorf("VerifyAH = %v, want %v", got, c.ok)
			}
		})
	}
	// Unicast: the TTL is out of the ICV (unicast_ttl, routers between).
	src, dst := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	a := ahAdvert()
	msg, _ := a.AppendMarshal(nil, src, dst, MessageOnly)
	b := AppendAH(nil, &AHHeader{Src: src, Dst: dst, TTL: 64, ID: 1, Seq: 1}, msg, &ahKey, true)
	b[8] = 60
	if !VerifyAH(b, &ahKey, true) {
		t.Error("unicast: a TTL lowered on the way breaks the ICV")
	}
	// The SPI must be the source address, even under a good ICV.
	b = AppendAH(nil, &AHHeader{Src: src, Dst: dst, TTL: 64, ID: 1, Seq: 1}, msg, &ahKey, true)
	b[20+7] ^= 1
	icv := ahICV(b, &ahKey, true)
	copy(b[20+12:], icv[:ahICVLen])
	if VerifyAH(b, &ahKey, true) {
		t.Error("an SPI other than the source address is accepted")
	}
}

func TestAHParseErrors(t *testing.T) {
	good := mustHex(t, capturedAH[0].hex)
	mod := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	cases := []struct {
		name string
		b    []byte
		want DropReason
	}{
		{"empty", nil, DropTruncated},
		{"short IPv4 header", good[:19], DropTruncated},
		{"IPv6", mod(func(b []byte) []byte { b[0] = 0x65; return b }), DropVersion},
		{"IHL too small", mod(func(b []byte) []byte { b[0] = 0x44; return b }), DropVersion},
		{"not AH", mod(func(b []byte) []byte { b[9] = 112; return b }), DropAuth},
		{"short AH", good[:30], DropTruncated},
		{"total length mismatch", mod(func(b []byte) []byte { return append(b, 0) }), DropLength},
		{"AH over another protocol", mod(func(b []byte) []byte { b[20] = 6; return b }), DropType},
		{"another ICV length", mod(func(b []byte) []byte { b[21] = 5; return b }), DropAuth},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := ParseAH(c.b)
			if got := reason(err); got != c.want {
				t.Errorf("ParseAH: %v (reason %v), want %v", err, got, c.want)
			}
		})
	}
}

// TestAHKeyFromPass: keepalived keeps auth_pass's first 8 bytes, zero
// padded (the configuration reader warns about the rest).
func TestAHKeyFromPass(t *testing.T) {
	for pass, want := range map[string]AHKey{
		"s3cret":    {'s', '3', 'c', 'r', 'e', 't'},
		"12345678":  {'1', '2', '3', '4', '5', '6', '7', '8'},
		"123456789": {'1', '2', '3', '4', '5', '6', '7', '8'},
		"":          {},
	} {
		if got := NewAHKey(pass); got != want {
			t.Errorf("NewAHKey(%q) = %q, want %q", pass, got, want)
		}
	}
}

// TestAHSequence: one counter for what is sent and what is accepted, as
// keepalived keeps it.
func TestAHSequence(t *testing.T) {
	var s AHState
	if id, seq := s.Next(); id != 1 || seq != 1 {
		t.Fatalf("first advert: id %d seq %d, want 1 1", id, seq)
	}
	s.Next()
	if s.Accept(2, true) || s.Accept(1, true) {
		t.Error("a sequence number already used is accepted")
	}
	if !s.Accept(100, true) {
		t.Error("a higher sequence number is refused")
	}
	if s.Accept(100, true) {
		t.Error("a replayed advert is accepted")
	}
	if _, seq := s.Next(); seq != 101 {
		t.Errorf("after accepting 100, sent %d, want 101", seq)
	}
	// The IPv4 identification skips 0.
	s = AHState{id: 0xffff}
	if id, _ := s.Next(); id != 1 {
		t.Errorf("id after 0xffff: %d, want 1", id)
	}
	// The end of the sequence: it stops, and restarts on becoming master.
	s = AHState{seq: 0xFFFFFFFD}
	if _, seq := s.Next(); seq != 0xFFFFFFFE {
		t.Fatalf("seq %#x", seq)
	}
	if _, seq := s.Next(); seq != 0xFFFFFFFE {
		t.Errorf("past the end: seq %#x, want it held at 0xFFFFFFFE", seq)
	}
	s.BecomeMaster()
	if _, seq := s.Next(); seq != 1 {
		t.Errorf("after becoming master: seq %d, want 1", seq)
	}
	s.BecomeMaster() // not cycled: no reset
	if _, seq := s.Next(); seq != 2 {
		t.Errorf("seq %d, want 2", seq)
	}
}

// FuzzParseAH: any bytes parse or fail with a reason, without panic; what
// parses can be verified and its message decoded without panic.
func FuzzParseAH(f *testing.F) {
	for _, c := range capturedAH {
		b, _ := hex.DecodeString(c.hex)
		f.Add(b)
	}
	f.Add([]byte{0x4f, 0, 0, 20, 0, 0, 0, 0, 255, ProtoAH})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, msg, err := ParseAH(b)
		if err != nil {
			if reason(err) == DropNone {
				t.Fatalf("error without a reason: %v", err)
			}
			return
		}
		VerifyAH(b, &ahKey, false)
		VerifyAH(b, &ahKey, true)
		var a Advert
		a.Unmarshal(msg, h.Src, h.Dst)
	})
}

// TestAHCarry: a reload's new instance goes on from the old one's
// sequence numbers, so that a peer refuses none of its next adverts.
func TestAHCarry(t *testing.T) {
	var old AHState
	for range 5 {
		old.Next()
	}
	old.Accept(40, true)
	var s AHState
	s.Carry(&old)
	if _, seq := s.Next(); seq != 41 {
		t.Errorf("after a reload, sent %d, want 41", seq)
	}
	if s.Accept(40, true) {
		t.Error("after a reload, a sequence number already accepted is accepted again")
	}
}
