package config

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"
)

// TestReadHexAsKeepalived reads UDP_CHECK's hex strings as keepalived's
// read_hex_str does (lib/parser.c).
func TestReadHexAsKeepalived(t *testing.T) {
	for _, tc := range []struct {
		name       string
		in         string
		wild       bool
		data, mask []byte
		ok         bool
	}{
		{"pairs", "0102ab", false, []byte{1, 2, 0xab}, nil, true},
		{"blanks between octets", " 01 02\tAB ", false, []byte{1, 2, 0xab}, nil, true},
		{"a lone digit is an octet", "1 2", false, []byte{1, 2}, nil, true},
		{"odd length", "123", false, []byte{0x12, 3}, nil, true},
		{"wildcard nibbles", "x1 2X xx", true, []byte{0x01, 0x20, 0}, []byte{0xf0, 0x0f, 0xff}, true},
		{"no wildcard in a payload", "x1", false, nil, nil, false},
		{"not hex", "0g", false, nil, nil, false},
		{"empty", "  ", false, nil, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, mask, ok := readHex(tc.in, tc.wild)
			if ok != tc.ok || !bytes.Equal(data, tc.data) || !bytes.Equal(mask, tc.mask) {
				t.Errorf("readHex(%q) = %x, %x, %v; want %x, %x, %v", tc.in, data, mask, ok, tc.data, tc.mask, tc.ok)
			}
		})
	}
}

// TestSMTPHostBlocks: each host block is a checker of its own; the
// checker itself checks too unless it has no connection option of its
// own, as keepalived's smtp_check_end_handler decides.
func TestSMTPHostBlocks(t *testing.T) {
	conf := func(own string) string {
		return "virtual_server 10.0.0.1 25 {\n real_server 10.0.0.2 25 {\n  SMTP_CHECK {\n" + own +
			"   helo_name a.example\n   host {\n    connect_ip 10.0.0.3\n   }\n   host {\n    connect_ip 10.0.0.4\n    connect_port 587\n    connect_timeout 2\n   }\n  }\n }\n}\n"
	}
	for _, tc := range []struct {
		name, own string
		want      []string
	}{
		{"hosts only", "", []string{"10.0.0.3:25 5s", "10.0.0.4:587 2s"}},
		{"own timeout", "   connect_timeout 10\n", []string{"10.0.0.2:25 10s", "10.0.0.3:25 10s", "10.0.0.4:587 2s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := mustParse(t, conf(tc.own), Options{})
			var got []string
			for _, c := range cfg.VirtualServers[0].RealServers[0].Checkers {
				addr := cfg.VirtualServers[0].RealServers[0].Addr
				if c.ConnectIP.IsValid() {
					addr = netip.AddrPortFrom(c.ConnectIP, addr.Port())
				}
				if c.ConnectPort != 0 {
					addr = netip.AddrPortFrom(addr.Addr(), c.ConnectPort)
				}
				got = append(got, addr.String()+" "+c.ConnectTimeout.String())
				if c.SMTP.HELOName != "a.example" {
					t.Errorf("helo_name %q", c.SMTP.HELOName)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("checkers %q, want %q", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("checker %d: %s, want %s", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// TestCheckerDiagnostics: bad UDP_CHECK and DNS_CHECK settings name
// their file:line, as errors or, where keepalived runs past them, as
// warnings.
func TestCheckerDiagnostics(t *testing.T) {
	for _, tc := range []struct {
		name, block, want string
	}{
		{"payload not hex", "UDP_CHECK {\n payload 0g\n}", "/k.conf:4: error: payload: \"0g\" is not a hexadecimal string"},
		{"payload empty", "UDP_CHECK {\n payload\n}", "/k.conf:4: error: payload: requires a payload (hexadecimal digits)"},
		{"reply not hex", "UDP_CHECK {\n require_reply 0z\n}", "/k.conf:4: error: require_reply: \"0z\" is not a hexadecimal string (x for a wildcard digit)"},
		{"lengths", "UDP_CHECK {\n min_reply_length 10\n max_reply_length 5\n}", "/k.conf:4: warning: min_reply_length: min_reply_length 10 is above max_reply_length 5: a reply with data will always fail, as in keepalived"},
		{"length range", "UDP_CHECK {\n max_reply_length 65536\n}", "/k.conf:4: error: max_reply_length:"},
		{"dns type", "DNS_CHECK {\n type AAA\n}", "/k.conf:4: warning: type: unknown DNS check type \"AAA\", ignored as keepalived does (SOA is asked)"},
		{"dns empty label", "DNS_CHECK {\n name a..b\n}", "/k.conf:4: warning: name: \"a..b\" has an empty label"},
		{"dns long label", "DNS_CHECK {\n name " + strings.Repeat("a", 64) + ".com\n}", "/k.conf:4: error: name: label"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := "virtual_server 10.0.0.1 53 {\n real_server 10.0.0.2 53 {\n  " + strings.ReplaceAll(tc.block, "\n", "\n  ") + "\n }\n}\n"
			_, diags := Parse("/k.conf", text, nil, Options{})
			for _, d := range diags {
				if strings.HasPrefix(d.String(), tc.want) {
					return
				}
			}
			t.Errorf("no diagnostic %q in:\n%s", tc.want, diags)
		})
	}
}
