package vrrp

import (
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestSocketOf checks the socket an instance's configuration asks for
// (what TestUnicastFaultNoPeer, TestUnicastTTL, TestAHKeepalivedInterop
// and TestVMACBesideKeepalived otherwise see only in namespaces, as root).
func TestSocketOf(t *testing.T) {
	tests := []struct {
		name  string
		conf  string
		want  sockSettings
		extra string // global_defs lines
	}{
		{name: "multicast, the global group",
			conf: inst("VI_1", "eth0", 51, 100, ""),
			want: sockSettings{Interface: "eth0", Group: netip.MustParseAddr("224.0.0.18"),
				Key: "eth0/false/224.0.0.18/ah=false"}},
		{name: "vrrp_mcast_group4 of global_defs", extra: "vrrp_mcast_group4 224.0.0.33",
			conf: inst("VI_1", "eth0", 51, 100, ""),
			want: sockSettings{Interface: "eth0", Group: netip.MustParseAddr("224.0.0.33"),
				Key: "eth0/false/224.0.0.33/ah=false"}},
		{name: "mcast_dst_ip wins",
			conf: inst("VI_1", "eth0", 51, 100, "mcast_dst_ip 224.0.0.19"),
			want: sockSettings{Interface: "eth0", Group: netip.MustParseAddr("224.0.0.19"),
				Key: "eth0/false/224.0.0.19/ah=false"}},
		{name: "unicast with its TTL",
			conf: inst("VI_1", "eth0", 51, 100, "unicast_ttl 7\n unicast_peer {\n 192.0.2.9\n }"),
			want: sockSettings{Interface: "eth0", Unicast: true, TTL: 7,
				Key: "eth0/false/invalid IP/ah=false/ttl=7"}},
		{name: "unicast_fault_no_peer without peers: unicast, in FAULT",
			conf: inst("VI_1", "eth0", 51, 100, "unicast_fault_no_peer"),
			want: sockSettings{Interface: "eth0", Unicast: true, NoPeer: true, TTL: 255,
				Key: "eth0/false/invalid IP/ah=false/ttl=255"}},
		{name: "unicast_fault_no_peer with a peer runs",
			conf: inst("VI_1", "eth0", 51, 100, "unicast_fault_no_peer\n unicast_peer {\n 192.0.2.9\n }"),
			want: sockSettings{Interface: "eth0", Unicast: true, TTL: 255,
				Key: "eth0/false/invalid IP/ah=false/ttl=255"}},
		{name: "auth_type AH",
			conf: inst("VI_1", "eth0", 51, 100, "authentication {\n auth_type AH\n auth_pass secret\n }"),
			want: sockSettings{Interface: "eth0", AH: true, Group: netip.MustParseAddr("224.0.0.18"),
				Key: "eth0/false/224.0.0.18/ah=true"}},
		{name: "IPv6 to its group",
			conf: "vrrp_instance V6 {\n interface eth0\n virtual_router_id 9\n priority 100\n virtual_ipaddress {\n 2001:db8::9/64\n }\n}\n",
			want: sockSettings{IPv6: true, Interface: "eth0", Group: netip.MustParseAddr("ff02::12"),
				Key: "eth0/true/ff02::12/ah=false"}},
		{name: "use_vmac sends on its macvlan",
			conf: inst("VI_1", "eth0", 51, 100, "use_vmac vrrp.51"),
			want: sockSettings{Interface: "vrrp.51", Group: netip.MustParseAddr("224.0.0.18"),
				Key: "vrrp.51/false/224.0.0.18/ah=false"}},
		{name: "vmac_xmit_base sends on the base interface",
			conf: inst("VI_1", "eth0", 51, 100, "use_vmac vrrp.51\n vmac_xmit_base"),
			want: sockSettings{Interface: "eth0", Group: netip.MustParseAddr("224.0.0.18"),
				Key: "eth0/false/224.0.0.18/ah=false"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := tt.conf
			if tt.extra != "" {
				text = "global_defs {\n " + tt.extra + "\n}\n" + text
			}
			cfg := planConf(t, text)
			got := socketOf(cfg, cfg.Instances[0])
			if d := cmp.Diff(tt.want, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); d != "" {
				t.Errorf("socketOf (-want +got):\n%s", d)
			}
		})
	}
}

// TestAdvertOf checks what an instance sends and accepts (the Params,
// Expect and destinations that the namespace tests TestChecksumAsV2,
// TestUnicastSrcAbsent, TestAdvertAddressesChecked and
// TestNamespaceElectionAndHandOver exercise only as root).
func TestAdvertOf(t *testing.T) {
	addr := netip.MustParseAddr
	me := addr("192.0.2.1")
	tests := []struct {
		name    string
		conf    string
		primary netip.Addr
		check   func(t *testing.T, a advertSettings)
	}{
		{"multicast VRRPv2 with a password", inst("VI_1", "eth0", 51, 150,
			"advert_int 2\n nopreempt\n authentication {\n auth_type PASS\n auth_pass abc\n }"), me,
			func(t *testing.T, a advertSettings) {
				want := Expect{Version: 2, Interval: 2, AuthType: AuthSimple, AuthData: [8]byte{'a', 'b', 'c'},
					Addrs: []netip.Addr{addr("192.0.2.51")}, CheckAddrs: true}
				if d := cmp.Diff(want, a.Expect, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); d != "" {
					t.Errorf("Expect (-want +got):\n%s", d)
				}
				if len(a.Dsts) != 1 || a.Dsts[0] != addr("224.0.0.18") || a.MCast != addr("224.0.0.18") {
					t.Errorf("Dsts %v MCast %v, want the group", a.Dsts, a.MCast)
				}
				p := a.Params
				if p.Version != 2 || p.VRID != 51 || p.Priority != 150 || p.AdvertInt != 2*time.Second ||
					p.Preempt || p.Primary != me || p.InitMaster {
					t.Errorf("Params %+v", p)
				}
			}},
		{"VRRPv3 in centiseconds", inst("VI_1", "eth0", 51, 100, "version 3\n advert_int 0.5\n state MASTER"), me,
			func(t *testing.T, a advertSettings) {
				if a.Expect.Interval != 50 || a.Expect.Version != 3 || a.Expect.AuthType != 0 {
					t.Errorf("Expect %+v, want version 3, interval 50, no authentication", a.Expect)
				}
				if !a.Params.InitMaster || !a.Params.Preempt {
					t.Errorf("Params %+v, want InitMaster and Preempt", a.Params)
				}
			}},
		{"unicast: our own address is no destination, every peer is expected",
			inst("VI_1", "eth0", 51, 100, "check_unicast_src\n unicast_src_ip 192.0.2.1\n unicast_peer {\n 192.0.2.1\n 192.0.2.9 min_ttl 3 max_ttl 9\n 192.0.2.8\n }"), me,
			func(t *testing.T, a advertSettings) {
				if d := cmp.Diff([]netip.Addr{addr("192.0.2.9"), addr("192.0.2.8")}, a.Dsts,
					cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); d != "" {
					t.Errorf("Dsts (-want +got):\n%s", d)
				}
				e := a.Expect
				if !e.Unicast || !e.CheckSource || e.MinTTL != 3 || e.MaxTTL != 9 || len(e.Peers) != 3 || a.MCast.IsValid() {
					t.Errorf("Expect %+v MCast %v", e, a.MCast)
				}
			}},
		{"check_unicast_src means nothing to multicast", inst("VI_1", "eth0", 51, 100, "check_unicast_src"), me,
			func(t *testing.T, a advertSettings) {
				if a.Expect.CheckSource || a.Expect.Unicast {
					t.Errorf("Expect %+v", a.Expect)
				}
			}},
		{"AH: the password is the key, the advert's field stays zero",
			inst("VI_1", "eth0", 51, 100, "authentication {\n auth_type AH\n auth_pass secret\n }"), me,
			func(t *testing.T, a advertSettings) {
				if a.AHTTL != 255 {
					t.Errorf("AHTTL %d, want 255 for multicast", a.AHTTL)
				}
				if a.Expect.AuthType != AuthAH || a.Expect.AuthData != [8]byte{} || a.AHKey != NewAHKey("secret") {
					t.Errorf("Expect %+v key %v", a.Expect, a.AHKey)
				}
			}},
		{"v3_checksum_as_v2 and the advert sent", inst("VI_1", "eth0", 51, 100, "version 3\n advert_int 0.2\n v3_checksum_as_v2"), me,
			func(t *testing.T, a advertSettings) {
				if a.Mode != MessageOnly {
					t.Errorf("Mode %v, want MessageOnly", a.Mode)
				}
				want := Advert{Version: 3, VRID: 51, Priority: 7, Interval: 20, Addrs: []netip.Addr{addr("192.0.2.51")}}
				if d := cmp.Diff(want, newAdvert(&a.Params, &a.Expect, a.VIPs, 7), cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); d != "" {
					t.Errorf("advert (-want +got):\n%s", d)
				}
			}},
		{"AH over unicast: the header's TTL is unicast_ttl",
			inst("VI_1", "eth0", 51, 100, "unicast_ttl 9\n unicast_peer {\n 192.0.2.9\n }\n authentication {\n auth_type AH\n auth_pass secret\n }"), me,
			func(t *testing.T, a advertSettings) {
				if a.AHTTL != 9 || a.Mode != PseudoHeader {
					t.Errorf("AHTTL %d Mode %v, want 9, PseudoHeader", a.AHTTL, a.Mode)
				}
				if adv := newAdvert(&a.Params, &a.Expect, a.VIPs, 100); adv.AuthType != AuthAH || adv.AuthData != [8]byte{} {
					t.Errorf("advert %+v", adv)
				}
			}},
		{"garp settings", inst("VI_1", "eth0", 51, 100, "garp_master_repeat 3\n garp_master_delay 2\n garp_master_refresh 60\n garp_master_refresh_repeat 4"), me,
			func(t *testing.T, a advertSettings) {
				g := a.Params.Garp
				if g.Repeat != 3 || g.Delay != 2*time.Second || g.Refresh != time.Minute || g.RefreshRepeat != 4 {
					t.Errorf("Garp %+v", g)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := planConf(t, tt.conf)
			ci := cfg.Instances[0]
			tt.check(t, advertOf(ci, socketOf(cfg, ci), tt.primary))
		})
	}
}

// TestInstanceAddrs checks the devices of an instance's addresses, in the
// order they are added (TestAnnounceOnOwnDevice, TestAnnounceOnVIPOnlyDevice
// and TestVMACBesideKeepalived see them only in namespaces).
func TestInstanceAddrs(t *testing.T) {
	tests := []struct {
		name string
		conf string
		want []string // dev address
		devs map[string]int
	}{
		{"the interface by default, dev when given, excluded ones last",
			"vrrp_instance VI_1 {\n interface eth0\n virtual_router_id 51\n priority 100\n" +
				" virtual_ipaddress {\n 192.0.2.1/24\n 198.51.100.1/24 dev eth1\n }\n" +
				" virtual_ipaddress_excluded {\n 2001:db8::1/64\n 203.0.113.1/24 dev eth2\n }\n}\n",
			[]string{"eth0 192.0.2.1/24", "eth1 198.51.100.1/24", "eth0 2001:db8::1/64", "eth2 203.0.113.1/24"},
			map[string]int{"eth0": 2, "eth1": 1, "eth2": 1}},
		{"use_vmac: the instance's family goes on the macvlan",
			"vrrp_instance VI_1 {\n interface eth0\n use_vmac vrrp.51\n virtual_router_id 51\n priority 100\n" +
				" virtual_ipaddress {\n 192.0.2.1/24\n 198.51.100.1/24 dev eth1\n }\n" +
				" virtual_ipaddress_excluded {\n 2001:db8::1/64\n }\n}\n",
			[]string{"vrrp.51 192.0.2.1/24", "eth1 198.51.100.1/24", "eth0 2001:db8::1/64"},
			map[string]int{"vrrp.51": 1, "eth1": 1, "eth0": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := planConf(t, tt.conf)
			var got []string
			for _, a := range instanceAddrs(cfg.Instances[0]) {
				got = append(got, a.Dev+" "+a.VIP.Prefix.String())
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("instanceAddrs (-want +got):\n%s", d)
			}
			devs := map[string]int{}
			for dev, addrs := range addrsByDev(cfg.Instances[0]) {
				devs[dev] = len(addrs)
			}
			if d := cmp.Diff(tt.devs, devs); d != "" {
				t.Errorf("addrsByDev (-want +got):\n%s", d)
			}
		})
	}
}

// TestExpectFrom checks skip_check_adv_addr: a backup does not check
// again the master it heard last (TestAdvertAddressesChecked, as root).
func TestExpectFrom(t *testing.T) {
	master, other := netip.MustParseAddr("192.0.2.9"), netip.MustParseAddr("192.0.2.8")
	e := Expect{CheckAddrs: true, CheckSource: true, MinTTL: 3, MaxTTL: 9}
	relaxed := Expect{}
	tests := []struct {
		name         string
		skip, backup bool
		src          netip.Addr
		want         Expect
	}{
		{"skip_check_adv_addr, backup, the last master", true, true, master, relaxed},
		{"another source", true, true, other, e},
		{"as master", true, false, master, e},
		{"without skip_check_adv_addr", false, true, master, e},
	}
	for _, tt := range tests {
		got := expectFrom(e, tt.skip, tt.backup, tt.src, master)
		if d := cmp.Diff(tt.want, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); d != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, d)
		}
	}
}
