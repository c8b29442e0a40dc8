package config

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func bgpConf(bgp, vs string) string {
	return "global_defs {\n" + bgp + "}\n" +
		"virtual_server 10.1.0.100 443 {\n protocol TCP\n" + vs + " real_server 10.2.0.1 443 {\n }\n}\n"
}

func TestBGPBlock(t *testing.T) {
	u := func(v uint32) *uint32 { return &v }
	c, diags := Parse("/k.conf", bgpConf(` bgp_withdraw_wait 3
 bgp {
  local_as 4200000001
  router_id 10.0.1.2
  neighbor 10.0.1.1 {
   remote_as 65000.1
   hold_time 9
   bfd 100 3
   communities 65010:7 no-export
   med 5
   multihop
  }
  neighbor 2001:db8::1 {
   remote_as 4200000001
   local_pref 300
   bfd
   passive no
  }
 }
`, " announce bgp dev eth7\n"), nil, Options{Hostname: "h"})
	if diags.HasErrors() {
		t.Fatalf("errors:\n%s", diags.Errors())
	}
	want := &BGP{
		LocalAS: 4200000001, RouterID: netip.MustParseAddr("10.0.1.2"), ListenPort: 179, WithdrawWait: 3 * time.Second,
		Neighbors: []*Neighbor{
			{Addr: netip.MustParseAddr("10.0.1.1"), RemoteAS: 65000<<16 | 1, HoldTime: 9 * time.Second, Port: 179,
				BFD: &BFD{Interval: 100 * time.Millisecond, Multiplier: 3}, Communities: []string{"65010:7", "no-export"},
				MED: u(5), Multihop: 255},
			{Addr: netip.MustParseAddr("2001:db8::1"), RemoteAS: 4200000001, HoldTime: 90 * time.Second, Port: 179,
				LocalPref: u(300), BFD: &BFD{Interval: 300 * time.Millisecond, Multiplier: 3}},
		},
	}
	if d := cmp.Diff(want, c.Global.BGP, cmpopts.IgnoreFields(BGP{}, "Pos"), cmpopts.IgnoreFields(Neighbor{}, "Pos"),
		cmpopts.IgnoreUnexported(BGP{}), cmpopts.EquateComparable(netip.Addr{})); d != "" {
		t.Errorf("bgp (-want +got):\n%s", d)
	}
	vs := c.VirtualServers[0]
	if vs.Announce == nil || vs.Announce.Dev != "eth7" {
		t.Errorf("announce = %+v, want dev eth7", vs.Announce)
	}
	if got := vs.AnnouncedPrefix(); got != netip.MustParsePrefix("10.1.0.100/32") {
		t.Errorf("prefix %s", got)
	}
}

func TestBGPDefaults(t *testing.T) {
	c, diags := Parse("/k.conf", bgpConf(" bgp {\n  local_as 65010\n  neighbor 10.0.1.1 {\n   remote_as 65000\n  }\n }\n", " announce bgp\n"), nil, Options{Hostname: "h"})
	if diags.HasErrors() || len(diags) > 0 {
		t.Fatalf("diagnostics:\n%s", diags)
	}
	b := c.Global.BGP
	if b.WithdrawWait != DefaultWithdrawWait || b.ListenPort != 179 || b.RouterID.IsValid() {
		t.Errorf("defaults: %+v", b)
	}
	if n := b.Neighbors[0]; n.HoldTime != 90*time.Second || n.Port != 179 || n.BFD != nil {
		t.Errorf("neighbor defaults: %+v", n)
	}
	if c.VirtualServers[0].Announce.Dev != "lo" {
		t.Errorf("announce dev %q, want lo", c.VirtualServers[0].Announce.Dev)
	}
}

// TestKeepalivedFileHasNoBGP: a file without the extension gets none of it.
func TestKeepalivedFileHasNoBGP(t *testing.T) {
	c := mustParse(t, bgpConf(" router_id lb1\n", ""), Options{Hostname: "h"})
	if c.Global.BGP != nil || c.VirtualServers[0].Announce != nil {
		t.Errorf("bgp %+v, announce %+v", c.Global.BGP, c.VirtualServers[0].Announce)
	}
}

func TestBGPErrors(t *testing.T) {
	nb := func(body string) string {
		return " bgp {\n  local_as 65010\n  neighbor 10.0.1.1 {\n   remote_as 65000\n" + body + "  }\n }\n"
	}
	for _, tc := range []struct {
		name, bgp, vs, want string
	}{
		{"no local_as", " bgp {\n }\n", "", "/k.conf:2: error: bgp: needs local_as"},
		{"bad AS", " bgp {\n  local_as 0\n }\n", "", `/k.conf:3: error: local_as: "0" is not an AS number`},
		{"IPv6 router_id", " bgp {\n  local_as 1\n  router_id ::1\n }\n", "", "/k.conf:4: error: router_id: \"::1\": a BGP identifier is an IPv4 address"},
		{"no remote_as", " bgp {\n  local_as 1\n  neighbor 10.0.0.1 {\n  }\n }\n", "", "/k.conf:4: error: neighbor: neighbor 10.0.0.1 needs remote_as"},
		{"bad neighbor", " bgp {\n  local_as 1\n  neighbor router1 {\n  }\n }\n", "", `/k.conf:4: error: neighbor: "router1" is not an IP address`},
		{"twice", nb("") + " bgp {\n  local_as 1\n }\n", "", "/k.conf:8: error: bgp: bgp is already given at /k.conf:2"},
		{"duplicate neighbor", " bgp {\n  local_as 1\n  neighbor 10.0.0.1 {\n   remote_as 2\n  }\n  neighbor 10.0.0.1 {\n   remote_as 3\n  }\n }\n", "", "/k.conf:7: error: neighbor: neighbor 10.0.0.1 is already defined at /k.conf:4"},
		{"hold time 2", nb("   hold_time 2\n"), "", "/k.conf:6: error: hold_time: 2: a hold time is 0 or at least 3 seconds"},
		{"bfd interval", nb("   bfd 5 3\n"), "", `/k.conf:6: error: bfd: "5" is not an integer from 10 to 60000`},
		{"bfd multiplier", nb("   bfd 100 0\n"), "", `/k.conf:6: error: bfd: "0" is not an integer from 1 to 255`},
		{"community", nb("   communities 65536:1\n"), "", `/k.conf:6: error: communities: "65536:1" is not a community`},
		{"eBGP local_pref", nb("   local_pref 100\n"), "", "/k.conf:4: error: local_pref: neighbor 10.0.1.1: local_pref is sent only to iBGP neighbors"},
		{"family", nb("   source_address 2001:db8::2\n"), "", "/k.conf:4: error: source_address: neighbor 10.0.1.1: source_address 2001:db8::2 is of the other address family"},
		{"unknown in neighbor", nb("   hold 9\n"), "", "/k.conf:6: warning: hold: unknown keyword in neighbor, ignored as keepalived does"},
		{"announce without bgp", "", " announce bgp\n", "/k.conf:5: error: announce: announce bgp needs a bgp block in global_defs"},
		{"announce ospf", nb(""), " announce ospf\n", `/k.conf:11: error: announce: "ospf" is not bgp`},
		{"announce dev", nb(""), " announce bgp dev\n", `/k.conf:11: error: announce: "bgp dev": expected announce bgp [dev NAME]`},
		{"announce bad dev", nb(""), " announce bgp dev a/b\n", `/k.conf:11: error: announce: "a/b" is not an interface name`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, diags := Parse("/k.conf", bgpConf(tc.bgp, tc.vs), nil, Options{Hostname: "h"})
			if !strings.Contains(diags.String(), tc.want) {
				t.Errorf("diagnostics:\n%s\nwant one with %q", diags, tc.want)
			}
		})
	}
}

// TestAnnounceAddresses: what fwmark and group virtual servers announce
// (directord's extension: announce bgp address ADDR... names what a
// fwmark has no address for), and the faults, each at file:line.
func TestAnnounceAddresses(t *testing.T) {
	const head = "global_defs {\n bgp {\n  local_as 1\n  neighbor 10.0.1.1 {\n   remote_as 2\n  }\n }\n}\n"
	vs := func(id, announce string) string {
		proto := " protocol TCP\n"
		if strings.HasPrefix(id, "fwmark") {
			proto = ""
		}
		return "virtual_server " + id + " {\n" + proto + " " + announce + "\n real_server 10.2.0.1 443 {\n }\n}\n"
	}
	const groups = `virtual_server_group web {
 10.1.0.1-3 443
 10.1.0.2 80
 2001:db8::7 443
}
virtual_server_group marks {
 fwmark 3
}
virtual_server_group mixed {
 10.1.0.9 443
 fwmark 4
}
`
	ps := func(s ...string) []netip.Prefix {
		var out []netip.Prefix
		for _, x := range s {
			out = append(out, netip.MustParsePrefix(x))
		}
		return out
	}
	for _, tc := range []struct {
		name, text string
		want       []netip.Prefix
		dev        string
		diag       string
	}{
		{"fwmark", vs("fwmark 7", "announce bgp address 10.1.0.100 2001:db8::100 dev eth1"), ps("10.1.0.100/32", "2001:db8::100/128"), "eth1", ""},
		{"fwmark, dev first", vs("fwmark 7", "announce bgp dev eth1 address 10.1.0.100"), ps("10.1.0.100/32"), "eth1", ""},
		{"group: each address of its ranges, once", groups + vs("group web", "announce bgp"),
			ps("10.1.0.1/32", "10.1.0.2/32", "10.1.0.3/32", "2001:db8::7/128"), "lo", ""},
		{"group of fwmarks", groups + vs("group marks", "announce bgp address 10.1.0.50"), ps("10.1.0.50/32"), "lo", ""},
		{"group of both", groups + vs("group mixed", "announce bgp address 10.1.0.50"), ps("10.1.0.9/32", "10.1.0.50/32"), "lo", ""},
		{"group of both, fwmark's not named", groups + vs("group mixed", "announce bgp"), ps("10.1.0.9/32"), "lo",
			"/k.conf:23: warning: announce: the fwmark entries of virtual_server_group mixed are not announced"},
		{"fwmark without address", vs("fwmark 7", "announce bgp"), nil, "",
			"/k.conf:10: error: announce: a fwmark virtual server has no address"},
		{"group of fwmarks without address", groups + vs("group marks", "announce bgp"), nil, "",
			"/k.conf:23: error: announce: virtual_server_group marks has only fwmark entries"},
		{"an address virtual server names addresses", vs("10.1.0.100 443", "announce bgp address 10.1.0.101"), nil, "",
			"/k.conf:11: error: announce: TCP 10.1.0.100:443 announces its own address"},
		{"not an address", vs("fwmark 7", "announce bgp address lo"), nil, "",
			"/k.conf:10: error: announce: \"lo\" is not a unicast address to announce"},
		{"not unicast", vs("fwmark 7", "announce bgp address 224.0.0.18"), nil, "",
			"/k.conf:10: error: announce: \"224.0.0.18\" is not a unicast address to announce"},
		{"address without addresses", vs("fwmark 7", "announce bgp address"), nil, "",
			"/k.conf:10: error: announce: \"bgp address\": expected announce bgp [dev NAME] [address ADDR...]"},
		{"dev twice", vs("fwmark 7", "announce bgp dev a dev b"), nil, "",
			"/k.conf:10: error: announce: \"bgp dev a dev b\": expected"},
		{"too many", "virtual_server_group big {\n 10.1.0.0/21 443\n}\n" + vs("group big", "announce bgp"), nil, "",
			"/k.conf:14: error: announce: more than 1024 addresses to announce for group big"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, diags := Parse("/k.conf", head+tc.text, nil, Options{Hostname: "h"})
			if tc.diag != "" && !strings.Contains(diags.String(), tc.diag) {
				t.Errorf("diagnostics:\n%s\nwant %q", diags, tc.diag)
			}
			if tc.diag == "" && len(diags) > 0 {
				t.Errorf("diagnostics:\n%s", diags)
			}
			if c == nil {
				return
			}
			v := c.VirtualServers[len(c.VirtualServers)-1]
			if tc.want == nil {
				if !diags.HasErrors() {
					t.Errorf("no error")
				}
				return
			}
			if d := cmp.Diff(tc.want, v.AnnouncedPrefixes(), cmpopts.EquateComparable(netip.Prefix{})); d != "" {
				t.Errorf("prefixes (-want +got):\n%s", d)
			}
			if v.Announce.Dev != tc.dev {
				t.Errorf("dev %q, want %q", v.Announce.Dev, tc.dev)
			}
			if v.AnnouncedPrefix() != tc.want[0] {
				t.Errorf("AnnouncedPrefix %s", v.AnnouncedPrefix())
			}
		})
	}
}

func TestParseCommunity(t *testing.T) {
	for s, want := range map[string]uint32{"65000:100": 65000<<16 | 100, "no-export": 0xFFFFFF01, "NO-ADVERTISE": 0xFFFFFF02, "0:0": 0} {
		if got, err := ParseCommunity(s); err != nil || got != want {
			t.Errorf("ParseCommunity(%q) = %#x, %v; want %#x", s, got, err, want)
		}
	}
	for _, s := range []string{"", "1", "a:b", "1:2:3", "70000:1"} {
		if _, err := ParseCommunity(s); err == nil {
			t.Errorf("ParseCommunity(%q) accepted", s)
		}
	}
}
