package config

import (
	"strconv"
	"strings"
	"testing"
)

// TestDynamicInterfaces: dynamic_interfaces and its allow_if_changes as
// keepalived 2.2.7's dynamic_interfaces_handler reads them; another word
// is reported and ignored, the keyword still on.
func TestDynamicInterfaces(t *testing.T) {
	tests := []struct {
		name, line     string
		dynamic, allow bool
		diags          string
	}{
		{"absent", "", false, false, ""},
		{"alone", " dynamic_interfaces", true, false, ""},
		{"allow_if_changes", " dynamic_interfaces allow_if_changes", true, true, ""},
		{"unknown option", " dynamic_interfaces sometimes", true, false,
			`/k.conf:2: warning: dynamic_interfaces: unknown dynamic_interfaces option "sometimes", ignored as keepalived does`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, _ := parseKeywordDiags(t, "global_defs {\n"+tt.line+"\n}\n"+vi(""), "dynamic_interfaces", tt.diags)
			if g := cfg.Global; g.DynamicInterfaces != tt.dynamic || g.AllowIfChanges != tt.allow {
				t.Errorf("dynamic %v allow %v; want %v %v", g.DynamicInterfaces, g.AllowIfChanges, tt.dynamic, tt.allow)
			}
		})
	}
}

// TestDisableLocalIGMP: disable_local_igmp takes no argument; keepalived
// turns it on whatever follows.
func TestDisableLocalIGMP(t *testing.T) {
	for _, tt := range []struct {
		name, line string
		on         bool
		diags      string
	}{
		{"absent", "", false, ""},
		{"alone", " disable_local_igmp", true, ""},
		{"with a word", " disable_local_igmp off", true,
			`/k.conf:2: warning: disable_local_igmp: takes no argument: "off" ignored, the keyword on, as keepalived does`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, _ := parseKeywordDiags(t, "global_defs {\n"+tt.line+"\n}\n"+vi(""), "disable_local_igmp", tt.diags)
			if cfg.Global.DisableLocalIGMP != tt.on {
				t.Errorf("DisableLocalIGMP %v, want %v", cfg.Global.DisableLocalIGMP, tt.on)
			}
		})
	}
}

// TestAddrVMACs: the macvlans keepalived 2.2.7's vrrp_complete_instance
// makes for addresses off the instance's interface (use_vmac_addr) or
// asking for one (an address's use_vmac), and their names
// (create_vmac_name with vmac_addr_prefix, else vmac_prefix).
func TestAddrVMACs(t *testing.T) {
	inst := func(name string, vrid int, extra, vips string) string {
		return "vrrp_instance " + name + " {\n interface eth0\n virtual_router_id " + strconv.Itoa(vrid) +
			"\n priority 100\n" + extra + " virtual_ipaddress {\n" + vips + " }\n}\n"
	}
	tests := []struct {
		name, conf string
		want       []string // address: device
		vmacs      string
		diags      string
	}{
		{"use_vmac_addr: other interfaces only",
			inst("VI_1", 51, " use_vmac_addr\n", "  10.0.0.1/24\n  10.1.0.1/24 dev eth1\n  10.1.0.2/24 dev eth1\n  10.2.0.1/24 dev eth2\n"),
			[]string{"10.0.0.1: eth0", "10.1.0.1: vrrp.51", "10.1.0.2: vrrp.51", "10.2.0.1: vrrp1.51"},
			"vrrp.51 on eth1 00:00:5e:00:01:33; vrrp1.51 on eth2 00:00:5e:00:01:33", ""},
		{"with use_vmac: the instance's name is taken first",
			inst("VI_1", 51, " use_vmac\n use_vmac_addr\n", "  10.0.0.1/24\n  10.1.0.1/24 dev eth1\n"),
			[]string{"10.0.0.1: vrrp.51", "10.1.0.1: vrrp1.51"},
			"vrrp1.51 on eth1 00:00:5e:00:01:33", ""},
		{"use_vmac with a MAC: the address's macvlan takes it, as keepalived's VRRP_VMAC_MAC_SPECIFIED",
			inst("VI_1", 51, " use_vmac 02:11:22:33:44:55\n use_vmac_addr\n", "  10.0.0.1/24\n  10.1.0.1/24 dev eth1\n"),
			[]string{"10.0.0.1: vrrp.51", "10.1.0.1: vrrp1.51"},
			"vrrp1.51 on eth1 02:11:22:33:44:55", ""},
		{"an address's own use_vmac",
			inst("VI_1", 7, "", "  10.0.0.1/24\n  10.1.0.1/24 dev eth1 use_vmac\n  10.2.0.1/24 dev eth2\n"),
			[]string{"10.0.0.1: eth0", "10.1.0.1: vrrp.7", "10.2.0.1: eth2"},
			"vrrp.7 on eth1 00:00:5e:00:01:07", ""},
		{"vmac_addr_prefix",
			"global_defs {\n vmac_prefix vm\n vmac_addr_prefix va\n}\n" + inst("VI_1", 9, " use_vmac_addr\n", "  10.0.0.1/24\n  10.1.0.1/24 dev eth1\n"),
			[]string{"10.0.0.1: eth0", "10.1.0.1: va.9"},
			"va.9 on eth1 00:00:5e:00:01:09", ""},
		{"vmac_prefix when no vmac_addr_prefix",
			"global_defs {\n vmac_prefix vm\n}\n" + inst("VI_1", 9, " use_vmac_addr\n", "  10.0.0.1/24\n  10.1.0.1/24 dev eth1\n"),
			[]string{"10.0.0.1: eth0", "10.1.0.1: vm.9"},
			"vm.9 on eth1 00:00:5e:00:01:09", ""},
		{"use_vmac on an address of the instance's macvlan",
			inst("VI_1", 5, " use_vmac\n", "  10.0.0.1/24 use_vmac\n"),
			[]string{"10.0.0.1: vrrp.5"}, "",
			"/k.conf:7: warning: use_vmac: VI_1: use_vmac given for 10.0.0.1 and for the instance: it goes on the instance's macvlan, as keepalived does"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, diags := parseKeywordDiags(t, tt.conf, "use_vmac", tt.diags)
			if diags.HasErrors() {
				t.Fatal(diags.Errors())
			}
			in := cfg.Instances[0]
			var got []string
			for _, v := range in.VIPs {
				got = append(got, v.Prefix.Addr().String()+": "+in.AddrDev(v))
			}
			if strings.Join(got, ", ") != strings.Join(tt.want, ", ") {
				t.Errorf("devices:\n%s\nwant:\n%s", strings.Join(got, ", "), strings.Join(tt.want, ", "))
			}
			var vm []string
			for _, a := range in.AddrVMACs {
				vm = append(vm, a.Name+" on "+a.Base+" "+a.MAC)
			}
			if strings.Join(vm, "; ") != tt.vmacs {
				t.Errorf("macvlans: %s, want %s", strings.Join(vm, "; "), tt.vmacs)
			}
		})
	}
}
