package config

import (
	"strings"
	"testing"
)

// TestVMAC checks use_vmac, vmac_xmit_base and vmac_prefix as keepalived
// 2.2.7 completes them (vrrp_vmac_handler, vrrp_complete_instance,
// create_vmac_name): the macvlan's name and MAC, where the addresses go,
// and the warnings, each with its line.
func TestVMAC(t *testing.T) {
	inst := func(name string, vrid int, lines string) string {
		return "vrrp_instance " + name + " {\n interface eth0\n virtual_router_id " + itoa(vrid) + "\n" + lines + "\n}\n"
	}
	type want struct{ name, mac, xmit string }
	tests := []struct {
		name  string
		conf  string
		want  []want // per instance; name "" for no VMAC
		diags string
		devs  string // AddrDev of the first instance's VIPs and excluded VIPs
	}{
		{"default name and MAC", inst("A", 11, " use_vmac\n virtual_ipaddress {\n  10.0.0.1/24\n }\n virtual_ipaddress_excluded {\n  10.0.1.1 dev eth1\n  10.0.2.1 dev eth0\n  2001:db8::1\n }"),
			[]want{{"vrrp.11", "00:00:5e:00:01:0b", ""}}, "", "vrrp.11 eth1 vrrp.11 eth0"},
		{"IPv6 MAC", inst("A", 255, " use_vmac\n virtual_ipaddress {\n  2001:db8::1\n }"),
			[]want{{"vrrp.255", "00:00:5e:00:02:ff", ""}}, "", "vrrp.255"},
		{"named, MAC given with the VRID", inst("A", 7, " use_vmac 02:aa:bb:cc:dd mine"),
			[]want{{"mine", "02:aa:bb:cc:dd:07", ""}}, "", ""},
		{"MAC given whole", inst("A", 7, " use_vmac 02:aa:bb:cc:dd:ee"),
			[]want{{"vrrp.7", "02:aa:bb:cc:dd:ee", ""}}, "", ""},
		{"xmit base", inst("A", 7, " use_vmac\n vmac_xmit_base"),
			[]want{{"vrrp.7", "00:00:5e:00:01:07", "x"}}, "", ""},
		{"prefix", "global_defs {\n vmac_prefix longprefix12345\n}\n" + inst("A", 200, " use_vmac"),
			[]want{{"longprefix1.200", "00:00:5e:00:01:c8", ""}}, "", ""},
		{"same VRID on two interfaces: the next name", inst("A", 5, " use_vmac") + strings.Replace(inst("B", 5, " use_vmac"), "eth0", "eth1", 1),
			[]want{{"vrrp.5", "00:00:5e:00:01:05", ""}, {"vrrp1.5", "00:00:5e:00:01:05", ""}}, "", ""},
		{"IPv6 tries vrrp6 first", inst("A", 5, " use_vmac") + inst("B", 5, " use_vmac\n virtual_ipaddress {\n  2001:db8::1\n }"),
			[]want{{"vrrp.5", "00:00:5e:00:01:05", ""}, {"vrrp6.5", "00:00:5e:00:02:05", ""}}, "", ""},
		{"a given name is not a default's", inst("A", 5, " use_vmac") + inst("B", 6, " use_vmac vrrp.5"),
			[]want{{"vrrp1.5", "00:00:5e:00:01:05", ""}, {"vrrp.5", "00:00:5e:00:01:06", ""}}, "", ""},
		{"name used twice", inst("A", 5, " use_vmac v") + inst("B", 6, " use_vmac v"),
			[]want{{"v", "00:00:5e:00:01:05", ""}, {"vrrp.6", "00:00:5e:00:01:06", ""}},
			"/k.conf:9: warning: use_vmac: B: another instance already uses v: a name of its own is given instead, as keepalived does", ""},
		{"xmit base without use_vmac", inst("A", 5, " vmac_xmit_base"), []want{{}},
			"/k.conf:4: warning: vmac_xmit_base: A: only valid with use_vmac: ignored, as keepalived does", ""},
		{"unicast sets xmit base", inst("A", 5, " use_vmac\n unicast_peer {\n  10.0.0.2\n }"),
			[]want{{"vrrp.5", "00:00:5e:00:01:05", "x"}},
			"/k.conf:4: warning: use_vmac: A: unicast with use_vmac needs vmac_xmit_base: set, as keepalived does", ""},
		{"strict clears xmit base and the MAC", inst("A", 5, " strict_mode\n use_vmac 02:00:00:00:00:01\n vmac_xmit_base\n virtual_ipaddress {\n  10.0.0.1\n }"),
			[]want{{"vrrp.5", "00:00:5e:00:01:05", ""}},
			"/k.conf:5: warning: use_vmac: A: strict mode has no MAC address of its own: the RFC's is used, as keepalived does\n" +
				"/k.conf:6: warning: vmac_xmit_base: A: does not go with strict mode: ignored, as keepalived does", "vrrp.5"},
		{"bad MACs", inst("A", 5, " use_vmac 01:00:00:00:00:01\n use_vmac 00:00:5e:00:01:05\n use_vmac 0:1:2\n use_vmac 000:1:2:3:4"),
			[]want{{"vrrp.5", "00:00:5e:00:01:05", ""}},
			"/k.conf:4: warning: use_vmac: A: \"01:00:00:00:00:01\" is a multicast address: ignored, as keepalived does\n" +
				"/k.conf:5: warning: use_vmac: A: \"00:00:5e:00:01:05\" is an RFC 5798 virtual router MAC, which use_vmac gives without one: ignored, as keepalived does\n" +
				"/k.conf:6: warning: use_vmac: A: \"0:1:2\" is not a MAC address: ignored, as keepalived does\n" +
				"/k.conf:7: warning: use_vmac: A: \"000:1:2:3:4\" is not a MAC address: ignored, as keepalived does", ""},
		{"bad name", inst("A", 5, " use_vmac a/b"),
			[]want{{"vrrp.5", "00:00:5e:00:01:05", ""}},
			"/k.conf:4: warning: use_vmac: A: \"a/b\" is too long or not an interface name: ignored, as keepalived does", ""},
		{"promote_secondaries goes", inst("A", 5, " use_vmac\n promote_secondaries"),
			[]want{{"vrrp.5", "00:00:5e:00:01:05", ""}},
			"/k.conf:5: warning: promote_secondaries: A: a macvlan always promotes secondaries: ignored, as keepalived does", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := parseDiags(t, tt.conf, tt.diags)
			if strings.Contains(tt.diags, ": error: ") {
				return // the file is refused: its model is not looked at
			}
			if len(cfg.Instances) != len(tt.want) {
				t.Fatalf("%d instances, want %d", len(cfg.Instances), len(tt.want))
			}
			for i, in := range cfg.Instances {
				var got want
				if v := in.VMAC; v != nil {
					got = want{v.Name, v.MAC, ""}
					if v.XmitBase {
						got.xmit = "x"
					}
				}
				if got != tt.want[i] {
					t.Errorf("%s: got %+v, want %+v", in.Name, got, tt.want[i])
				}
			}
			var devs []string
			for _, v := range append(append([]VIP{}, cfg.Instances[0].VIPs...), cfg.Instances[0].ExcludedVIPs...) {
				devs = append(devs, cfg.Instances[0].AddrDev(v))
			}
			if got := strings.Join(devs, " "); got != tt.devs {
				t.Errorf("address devices: got %q, want %q", got, tt.devs)
			}
		})
	}
}

// TestGarpExtraIf checks garp_extra_if and its global and deprecated
// forms as keepalived 2.2.7 resolves them: the instance's, else the
// global one; 0 unless "all" and an address on another interface than
// the instance's own (its macvlan with use_vmac).
func TestGarpExtraIf(t *testing.T) {
	other := "\n virtual_ipaddress_excluded {\n  10.0.1.1 dev eth1\n }"
	tests := []struct {
		name  string
		conf  string
		want  string
		diags string
	}{
		{"all with another interface", vi(" garp_extra_if 3 all" + other), "3s all", ""},
		{"all first", vi(" garp_extra_if all 3" + other), "3s all", ""},
		{"without all", vi(" garp_extra_if 3" + other), "0s", ""},
		{"no other interface", vi(" garp_extra_if 3 all\n virtual_ipaddress {\n  10.0.0.1\n }"), "0s", ""},
		{"the macvlan's interface is another", vi(" use_vmac\n garp_extra_if 3 all\n virtual_ipaddress_excluded {\n  10.0.1.1 dev eth0\n  2001:db8::1 dev eth0\n }"), "3s all", ""},
		{"global", "global_defs {\n vrrp_garp_extra_if all 5\n}\n" + vi(other), "5s all", ""},
		{"instance over global", "global_defs {\n vrrp_garp_extra_if all 5\n}\n" + vi(" garp_extra_if 0"+other), "0s", ""},
		{"deprecated", vi(" vmac_garp_intvl 2 all" + other), "2s all",
			"/k.conf:4: warning: vmac_garp_intvl: deprecated: read as garp_extra_if, as keepalived does"},
		{"no time", vi(" garp_extra_if all" + other), "0s",
			"/k.conf:4: warning: garp_extra_if: given without a time: ignored, as keepalived does"},
		{"global 0", "global_defs {\n vrrp_garp_extra_if 0 all\n}\n", "",
			"/k.conf:2: warning: vrrp_garp_extra_if: \"0\" is not a whole number of seconds from 1 to 86400: ignored, as keepalived does"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := parseDiags(t, tt.conf, tt.diags)
			got := ""
			if len(cfg.Instances) > 0 {
				g := cfg.Instances[0].Garp
				got = g.ExtraIf.String()
				if g.ExtraIfAll {
					got += " all"
				}
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
