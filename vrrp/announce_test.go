package vrrp

import (
	"encoding/hex"
	"net"
	"net/netip"
	"strings"
	"testing"
)

// Frames captured from keepalived 2.2.7 (tcpdump -xx on the peer of a veth
// whose other end had MAC aa:1f:5f:9d:f0:07), VIPs 192.0.2.100 and
// 2001:db8::100, net.ipv6.conf.IF.forwarding 1 and then 0.
var (
	keepalivedHW   = net.HardwareAddr{0xaa, 0x1f, 0x5f, 0x9d, 0xf0, 0x07}
	keepalivedGARP = `ffff ffff ffff aa1f 5f9d f007 0806 0001
		0800 0604 0001 aa1f 5f9d f007 c000 0264
		ffff ffff ffff c000 0264`
	keepalivedNARouter = `3333 0000 0001 aa1f 5f9d f007 86dd 6000
		0000 0020 3aff 2001 0db8 0000 0000 0000
		0000 0000 0100 ff02 0000 0000 0000 0000
		0000 0000 0001 8800 7f68 a000 0000 2001
		0db8 0000 0000 0000 0000 0000 0100 0201
		aa1f 5f9d f007`
	keepalivedNA = `3333 0000 0001 aa1f 5f9d f007 86dd 6000
		0000 0020 3aff 2001 0db8 0000 0000 0000
		0000 0000 0100 ff02 0000 0000 0000 0000
		0000 0000 0001 8800 ff68 2000 0000 2001
		0db8 0000 0000 0000 0000 0000 0100 0201
		aa1f 5f9d f007`
)

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAnnouncementsAsKeepalived: the frames are byte for byte keepalived's.
func TestAnnouncementsAsKeepalived(t *testing.T) {
	v4, v6 := netip.MustParseAddr("192.0.2.100"), netip.MustParseAddr("2001:db8::100")
	for _, tc := range []struct {
		name  string
		build func(b []byte) ([]byte, error)
		want  string
	}{
		{"gratuitous ARP", func(b []byte) ([]byte, error) { return AppendGARP(b, keepalivedHW, v4) }, keepalivedGARP},
		{"NA, forwarding", func(b []byte) ([]byte, error) { return AppendNA(b, keepalivedHW, v6, true) }, keepalivedNARouter},
		{"NA, not forwarding", func(b []byte) ([]byte, error) { return AppendNA(b, keepalivedHW, v6, false) }, keepalivedNA},
	} {
		t.Run(tc.name, func(t *testing.T) {
			buf := make([]byte, 0, NAFrameLen)
			got, err := tc.build(buf)
			if err != nil {
				t.Fatal(err)
			}
			if want := unhex(t, tc.want); string(got) != string(want) {
				t.Errorf("frame:\n got %x\nwant %x", got, want)
			}
			if n := testing.AllocsPerRun(10, func() { tc.build(buf[:0]) }); n != 0 {
				t.Errorf("%v allocations into a buffer large enough", n)
			}
		})
	}
}

// TestAnnouncementArgs: a wrong hardware address or family is an error,
// never a malformed frame.
func TestAnnouncementArgs(t *testing.T) {
	v4, v6 := netip.MustParseAddr("192.0.2.100"), netip.MustParseAddr("2001:db8::100")
	if _, err := AppendGARP(nil, net.HardwareAddr{1, 2, 3}, v4); err == nil {
		t.Error("GARP with a 3-byte hardware address")
	}
	if _, err := AppendGARP(nil, keepalivedHW, v6); err == nil {
		t.Error("GARP for an IPv6 address")
	}
	if _, err := AppendNA(nil, keepalivedHW, v4, false); err == nil {
		t.Error("NA for an IPv4 address")
	}
	if _, err := AppendNA(nil, nil, v6, false); err == nil {
		t.Error("NA without a hardware address")
	}
}
