package vrrp

import (
	"bytes"
	"encoding/hex"
	"errors"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/directord/directord/internal/fuzztest"
)

// Known-good adverts, captured from Debian's keepalived 2.2.7 in a network
// namespace (a veth pair, read with AF_PACKET): each as it arrived, with the
// IP source and destination its checksum covers.
var captured = []struct {
	name     string
	src, dst string
	hex      string
	want     Advert
}{
	{
		name: "v2 IPv4 PASS auth, two addresses", src: "192.0.2.1", dst: "224.0.0.18",
		hex: "210ac802010154dbc0000264c00002657365637265740000",
		want: Advert{Version: 2, VRID: 10, Priority: 200, Interval: 1, AuthType: AuthSimple,
			AuthData: [8]byte{'s', 'e', 'c', 'r', 'e', 't'}, Checksum: 0x54db, ChecksumMode: MessageOnly,
			Addrs: addrs("192.0.2.100", "192.0.2.101")},
	},
	{
		name: "v2 IPv4 priority 0 on shutdown", src: "192.0.2.1", dst: "224.0.0.18",
		hex: "210a000201011cdcc0000264c00002657365637265740000",
		want: Advert{Version: 2, VRID: 10, Priority: 0, Interval: 1, AuthType: AuthSimple,
			AuthData: [8]byte{'s', 'e', 'c', 'r', 'e', 't'}, Checksum: 0x1cdc, ChecksumMode: MessageOnly,
			Addrs: addrs("192.0.2.100", "192.0.2.101")},
	},
	{
		name: "v3 IPv4 50 cs", src: "192.0.2.1", dst: "224.0.0.18",
		hex: "310b96010032d3c1c000026e",
		want: Advert{Version: 3, VRID: 11, Priority: 150, Interval: 50, Checksum: 0xd3c1,
			ChecksumMode: PseudoHeader, Addrs: addrs("192.0.2.110")},
	},
	{
		name: "v3 IPv4 priority 0", src: "192.0.2.1", dst: "224.0.0.18",
		hex: "310b0001003269c2c000026e",
		want: Advert{Version: 3, VRID: 11, Priority: 0, Interval: 50, Checksum: 0x69c2,
			ChecksumMode: PseudoHeader, Addrs: addrs("192.0.2.110")},
	},
	{
		name: "v3 IPv4 1 s", src: "192.0.2.1", dst: "224.0.0.18",
		hex: "310d78010064f179c0000282",
		want: Advert{Version: 3, VRID: 13, Priority: 120, Interval: 100, Checksum: 0xf179,
			ChecksumMode: PseudoHeader, Addrs: addrs("192.0.2.130")},
	},
	{
		name: "v3 IPv6 two addresses", src: "fe80::ac89:3bff:fec9:d93", dst: "ff02::12",
		hex: "310c640200641a0620010db800000000000000000000010020010db8000000000000000000000101",
		want: Advert{Version: 3, VRID: 12, Priority: 100, Interval: 100, Checksum: 0x1a06,
			ChecksumMode: PseudoHeader, Addrs: addrs("2001:db8::100", "2001:db8::101")},
	},
	{
		name: "v3 IPv6 priority 0", src: "fe80::ac89:3bff:fec9:d93", dst: "ff02::12",
		hex: "310c000200647e0620010db800000000000000000000010020010db8000000000000000000000101",
		want: Advert{Version: 3, VRID: 12, Priority: 0, Interval: 100, Checksum: 0x7e06,
			ChecksumMode: PseudoHeader, Addrs: addrs("2001:db8::100", "2001:db8::101")},
	},
}

func addrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddr(s)
	}
	return out
}

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCapturedDecode decodes keepalived's own bytes.
func TestCapturedDecode(t *testing.T) {
	for _, c := range captured {
		t.Run(c.name, func(t *testing.T) {
			var got Advert
			if err := got.Unmarshal(mustHex(t, c.hex), netip.MustParseAddr(c.src), netip.MustParseAddr(c.dst)); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got  %+v\nwant %+v", got, c.want)
			}
		})
	}
}

// TestCapturedEncode encodes the same fields and must produce keepalived's
// bytes exactly, checksum included.
func TestCapturedEncode(t *testing.T) {
	for _, c := range captured {
		t.Run(c.name, func(t *testing.T) {
			a := c.want
			a.Checksum = 0
			got, err := a.AppendMarshal(nil, netip.MustParseAddr(c.src), netip.MustParseAddr(c.dst), c.want.ChecksumMode)
			if err != nil {
				t.Fatal(err)
			}
			if want := mustHex(t, c.hex); !bytes.Equal(got, want) {
				t.Errorf("got  %x\nwant %x", got, want)
			}
			if a.Checksum != c.want.Checksum {
				t.Errorf("checksum %#04x, want %#04x", a.Checksum, c.want.Checksum)
			}
		})
	}
}

// TestGopacketAgrees checks our VRRPv2 encoding with gopacket's decoder, an
// independent implementation.
func TestGopacketAgrees(t *testing.T) {
	src, dst := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("224.0.0.18")
	adverts := []Advert{
		{Version: 2, VRID: 1, Priority: 100, Interval: 1, Addrs: addrs("10.0.0.1")},
		{Version: 2, VRID: 255, Priority: 255, Interval: 255, AuthType: AuthSimple, AuthData: [8]byte{'p', 'w'},
			Addrs: addrs("10.0.0.1", "10.0.0.2", "10.0.0.3")},
		// gopacket refuses an advert with no address, which VRRP allows.
		{Version: 2, VRID: 51, Priority: 0, Interval: 3, Addrs: addrs("192.0.2.51")},
	}
	for i := range adverts {
		a := &adverts[i]
		b, err := a.AppendMarshal(nil, src, dst, MessageOnly)
		if err != nil {
			t.Fatal(err)
		}
		p := gopacket.NewPacket(b, layers.LayerTypeVRRP, gopacket.Default)
		l, ok := p.Layer(layers.LayerTypeVRRP).(*layers.VRRPv2)
		if !ok {
			t.Fatalf("gopacket did not decode %x: %v", b, p.ErrorLayer())
		}
		var got []netip.Addr
		for _, ip := range l.IPAddress {
			got = append(got, netip.AddrFrom4([4]byte(ip.To4())))
		}
		if l.Version != 2 || l.VirtualRtrID != a.VRID || l.Priority != a.Priority ||
			l.AdverInt != uint8(a.Interval) || uint8(l.AuthType) != a.AuthType ||
			l.Checksum != a.Checksum || int(l.CountIPAddr) != len(a.Addrs) || !sameAddrs(got, a.Addrs) {
			t.Errorf("gopacket read %+v from %x, we wrote %+v", l, b, a)
		}
	}
	// And keepalived's captured v2 bytes.
	for _, c := range captured[:2] {
		p := gopacket.NewPacket(mustHex(t, c.hex), layers.LayerTypeVRRP, gopacket.Default)
		l, ok := p.Layer(layers.LayerTypeVRRP).(*layers.VRRPv2)
		if !ok || l.VirtualRtrID != c.want.VRID || l.Priority != c.want.Priority || l.Checksum != c.want.Checksum {
			t.Errorf("%s: gopacket read %+v", c.name, l)
		}
	}
}

// TestChecksumForms encodes a VRRPv3 IPv4 advert in both checksum forms;
// Unmarshal takes either and says which it was, and a VRRPv3 IPv6 advert
// takes only the pseudo-header form.
func TestChecksumForms(t *testing.T) {
	src, dst := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("224.0.0.18")
	for _, mode := range []ChecksumMode{PseudoHeader, MessageOnly} {
		a := Advert{Version: 3, VRID: 9, Priority: 100, Interval: 100, Addrs: addrs("192.0.2.9")}
		b, err := a.AppendMarshal(nil, src, dst, mode)
		if err != nil {
			t.Fatal(err)
		}
		var got Advert
		if err := got.Unmarshal(b, src, dst); err != nil {
			t.Fatalf("mode %d: %v", mode, err)
		}
		if got.ChecksumMode != mode {
			t.Errorf("mode %d read as %d", mode, got.ChecksumMode)
		}
	}
	src6, dst6 := netip.MustParseAddr("fe80::1"), netip.MustParseAddr("ff02::12")
	a := Advert{Version: 3, VRID: 9, Priority: 100, Interval: 100, Addrs: addrs("2001:db8::9")}
	b, _ := a.AppendMarshal(nil, src6, dst6, MessageOnly) // mode is ignored for IPv6
	var got Advert
	if err := got.Unmarshal(b, src6, dst6); err != nil {
		t.Fatal(err)
	}
	b[6], b[7] = 0, 0
	b[6], b[7] = byte(checksum(b, 0)>>8), byte(checksum(b, 0))
	if err := got.Unmarshal(b, src6, dst6); reason(err) != DropChecksum {
		t.Errorf("message-only checksum over IPv6: %v, want a checksum drop", err)
	}
}

func reason(err error) DropReason {
	var de *DecodeError
	if errors.As(err, &de) {
		return de.Reason
	}
	return DropNone
}

// TestMalformed: every malformed advert is refused with its reason, and
// never changes the Advert's fields beyond what was already decoded.
func TestMalformed(t *testing.T) {
	v2 := mustHex(t, captured[0].hex)
	v3 := mustHex(t, captured[2].hex)
	v4src, v4dst := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("224.0.0.18")
	v6src, v6dst := netip.MustParseAddr("fe80::1"), netip.MustParseAddr("ff02::12")
	mod := func(b []byte, f func([]byte)) []byte {
		c := append([]byte(nil), b...)
		f(c)
		return c
	}
	tests := []struct {
		name     string
		b        []byte
		src, dst netip.Addr
		want     DropReason
	}{
		{"empty", nil, v4src, v4dst, DropTruncated},
		{"header only", v2[:7], v4src, v4dst, DropTruncated},
		{"count says more than there is", mod(v2, func(b []byte) { b[3] = 3 }), v4src, v4dst, DropTruncated},
		{"count says less than there is", mod(v2, func(b []byte) { b[3] = 1 }), v4src, v4dst, DropLength},
		{"trailing byte", append(append([]byte(nil), v3...), 0), v4src, v4dst, DropLength},
		{"version 1", mod(v2, func(b []byte) { b[0] = 0x11 }), v4src, v4dst, DropVersion},
		{"version 4", mod(v3, func(b []byte) { b[0] = 0x41 }), v4src, v4dst, DropVersion},
		{"type 2", mod(v2, func(b []byte) { b[0] = 0x22 }), v4src, v4dst, DropType},
		{"v2 checksum", mod(v2, func(b []byte) { b[7] ^= 1 }), v4src, v4dst, DropChecksum},
		{"v2 payload changed", mod(v2, func(b []byte) { b[2] = 201 }), v4src, v4dst, DropChecksum},
		{"v3 checksum", mod(v3, func(b []byte) { b[6] ^= 0x80 }), v4src, v4dst, DropChecksum},
		{"v3 from another source", v3, netip.MustParseAddr("192.0.2.9"), v4dst, DropChecksum},
		{"v2 over IPv6", v2, v6src, v6dst, DropFamily},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a Advert
			err := a.Unmarshal(tt.b, tt.src, tt.dst)
			if got := reason(err); got != tt.want {
				t.Errorf("got %v (%v), want %v", got, err, tt.want)
			}
		})
	}
}

func TestMarshalRefuses(t *testing.T) {
	v4, v6 := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("fe80::1")
	many := make([]netip.Addr, 256)
	for i := range many {
		many[i] = netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)})
	}
	tests := []struct {
		name string
		a    Advert
		src  netip.Addr
	}{
		{"version", Advert{Version: 4}, v4},
		{"v2 over IPv6", Advert{Version: 2}, v6},
		{"256 addresses", Advert{Version: 3, Addrs: many}, v4},
		{"v2 interval", Advert{Version: 2, Interval: 256}, v4},
		{"v3 interval", Advert{Version: 3, Interval: 4096}, v4},
		{"mixed family", Advert{Version: 3, Addrs: addrs("2001:db8::1")}, v4},
	}
	for _, tt := range tests {
		b, err := tt.a.AppendMarshal([]byte{1, 2}, tt.src, tt.src, PseudoHeader)
		if err == nil || !bytes.Equal(b, []byte{1, 2}) {
			t.Errorf("%s: err %v, buffer %x: want an error and the buffer as it was", tt.name, err, b)
		}
	}
}

func TestCheck(t *testing.T) {
	src := netip.MustParseAddr("192.0.2.1")
	v2 := captured[0].want
	v3 := captured[2].want
	pass := [8]byte{'s', 'e', 'c', 'r', 'e', 't'}
	base2 := Expect{Version: 2, Interval: 1, AuthType: AuthSimple, AuthData: pass}
	tests := []struct {
		name string
		a    Advert
		ttl  uint8
		e    Expect
		want DropReason
	}{
		{"v2 good", v2, 255, base2, DropNone},
		{"ttl 254", v2, 254, base2, DropTTL},
		{"wrong version", v3, 255, base2, DropVersion},
		{"wrong password", v2, 255, Expect{Version: 2, Interval: 1, AuthType: AuthSimple, AuthData: [8]byte{'x'}}, DropAuth},
		{"wrong auth type", v2, 255, Expect{Version: 2, Interval: 1}, DropAuth},
		{"v2 interval mismatch", v2, 255, Expect{Version: 2, Interval: 2, AuthType: AuthSimple, AuthData: pass}, DropInterval},
		{"v3 interval adopted", v3, 255, Expect{Version: 3, Interval: 100}, DropNone},
		{"v3 interval 0", func() Advert { a := v3; a.Interval = 0; return a }(), 255, Expect{Version: 3, Interval: 100}, DropInterval},
		{"addresses checked", v3, 255, Expect{Version: 3, CheckAddrs: true, Addrs: addrs("192.0.2.111")}, DropAddrs},
		{"addresses in another order", v2, 255, Expect{Version: 2, Interval: 1, AuthType: AuthSimple, AuthData: pass,
			CheckAddrs: true, Addrs: addrs("192.0.2.101", "192.0.2.100")}, DropNone},
		{"unicast any ttl", v3, 64, Expect{Version: 3, Unicast: true}, DropNone},
		{"unicast ttl range", v3, 64, Expect{Version: 3, Unicast: true, MinTTL: 250}, DropTTL},
		{"unicast unknown source", v3, 255, Expect{Version: 3, Unicast: true, CheckSource: true, Peers: addrs("192.0.2.2")}, DropSource},
		{"unicast known source", v3, 255, Expect{Version: 3, Unicast: true, CheckSource: true, Peers: addrs("192.0.2.1")}, DropNone},
	}
	for _, tt := range tests {
		if got := tt.a.Check(tt.ttl, src, &tt.e); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestInterval(t *testing.T) {
	if d := captured[0].want.IntervalDuration(); d != time.Second {
		t.Errorf("v2: %v", d)
	}
	if d := captured[2].want.IntervalDuration(); d != 500*time.Millisecond {
		t.Errorf("v3: %v", d)
	}
}

// TestNoAllocations: decoding into an Advert with room for the addresses,
// and encoding into a buffer with room, allocate nothing.
func TestNoAllocations(t *testing.T) {
	c := captured[5]
	b := mustHex(t, c.hex)
	src, dst := netip.MustParseAddr(c.src), netip.MustParseAddr(c.dst)
	a := Advert{Addrs: make([]netip.Addr, 0, MaxAddrs)}
	buf := make([]byte, 0, 2048)
	allocs := testing.AllocsPerRun(100, func() {
		if err := a.Unmarshal(b, src, dst); err != nil {
			t.Fatal(err)
		}
		if _, err := a.AppendMarshal(buf[:0], src, dst, PseudoHeader); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per decode and encode", allocs)
	}
}

// FuzzUnmarshal: any bytes decode without panic; what decodes re-encodes to
// the same bytes, in the checksum form it came in.
func FuzzUnmarshal(f *testing.F) {
	for _, c := range captured {
		b, _ := hex.DecodeString(c.hex)
		f.Add(b, c.src == "192.0.2.1")
	}
	f.Add([]byte{0x21, 1, 1, 255}, true)
	// The VRRP message inside keepalived's AH advert (auth type 2, zero data).
	f.Add([]byte{0x21, 0x33, 0x96, 0x01, 0x02, 0x01, 0x84, 0x65, 192, 0, 2, 100, 0, 0, 0, 0, 0, 0, 0, 0}, true)
	f.Fuzz(func(t *testing.T, b []byte, ipv4 bool) {
		fuzztest.Bound(t)
		src, dst := netip.MustParseAddr("fe80::1"), netip.MustParseAddr("ff02::12")
		if ipv4 {
			src, dst = netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("224.0.0.18")
		}
		// keepalived's captured adverts must decode to what they hold: the
		// target reaches the decoder. (The IPv6 ones' checksums cover
		// their own source; fe80::1 is not it.)
		var known *Advert
		for i, c := range captured {
			if hex.EncodeToString(b) == c.hex && ipv4 == (c.src == "192.0.2.1") {
				known = &captured[i].want
				src, dst = netip.MustParseAddr(c.src), netip.MustParseAddr(c.dst)
			}
		}
		var a Advert
		if err := a.Unmarshal(b, src, dst); err != nil {
			if reason(err) == DropNone {
				t.Fatalf("error without a reason: %v", err)
			}
			if known != nil {
				t.Fatalf("captured advert %x: %v", b, err)
			}
			return
		}
		if known != nil && !reflect.DeepEqual(a, *known) {
			t.Fatalf("captured advert %x: %+v, want %+v", b, a, *known)
		}
		out, err := a.AppendMarshal(nil, src, dst, a.ChecksumMode)
		if err != nil {
			t.Fatalf("decoded %x but cannot encode %+v: %v", b, a, err)
		}
		// The reserved bits of VRRPv3's interval word are not kept.
		want := append([]byte(nil), b...)
		if a.Version == 3 {
			want[4] &= 0x0f
			if !bytes.Equal(out[:4], want[:4]) || !bytes.Equal(out[8:], want[8:]) {
				t.Fatalf("round trip: %x -> %x", b, out)
			}
			return
		}
		if !bytes.Equal(out, want) {
			t.Fatalf("round trip: %x -> %x", b, out)
		}
	})
}
