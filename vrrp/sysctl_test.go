package vrrp

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPromoteDevices checks where the Node sets promote_secondaries
// (TestPromoteSecondaries and the use_vmac tests see it as root).
func TestPromoteDevices(t *testing.T) {
	tests := []struct {
		name string
		conf string
		want []string
	}{
		{"IPv4 VIPs' devices, each once",
			"vrrp_instance VI_1 {\n interface eth0\n virtual_router_id 51\n priority 100\n" +
				" virtual_ipaddress {\n 192.0.2.1/24\n 192.0.2.2/24\n 198.51.100.1/24 dev eth1\n }\n" +
				" virtual_ipaddress_excluded {\n 203.0.113.1/24 dev eth2\n }\n}\n",
			[]string{"eth0", "eth1", "eth2"}},
		{"IPv6 VIPs need none",
			"vrrp_instance VI_1 {\n interface eth0\n virtual_router_id 51\n priority 100\n" +
				" virtual_ipaddress {\n 2001:db8::1/64\n }\n}\n", nil},
		{"promote_secondaries: its interface, IPv6 VIPs or not",
			"vrrp_instance VI_1 {\n interface eth3\n promote_secondaries\n virtual_router_id 51\n priority 100\n" +
				" virtual_ipaddress {\n 2001:db8::1/64\n }\n" +
				" virtual_ipaddress_excluded {\n 192.0.2.1/24 dev eth1\n }\n}\n",
			[]string{"eth3", "eth1"}},
		{"use_vmac: not its macvlan, whose sysctls go with the link",
			"vrrp_instance VI_1 {\n interface eth0\n use_vmac vrrp.51\n virtual_router_id 51\n priority 100\n" +
				" virtual_ipaddress {\n 192.0.2.1/24\n 198.51.100.1/24 dev eth1\n }\n}\n",
			[]string{"eth1"}},
		{"use_vmac_addr: not the macvlans of other interfaces' addresses",
			"vrrp_instance VI_1 {\n interface eth0\n use_vmac_addr\n virtual_router_id 51\n priority 100\n" +
				" virtual_ipaddress {\n 192.0.2.1/24\n 198.51.100.1/24 dev eth1\n }\n}\n",
			[]string{"eth0"}},
		{"two instances, in order",
			inst("VI_1", "eth1", 51, 100, "") + inst("VI_2", "eth0", 52, 100, "") + inst("VI_3", "eth1", 53, 100, ""),
			[]string{"eth1", "eth0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := promoteDevices(planConf(t, tt.conf).Instances)
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("promoteDevices (-want +got):\n%s", d)
			}
		})
	}
	if got, want := promotePath("eth0"), "/proc/sys/net/ipv4/conf/eth0/promote_secondaries"; got != want {
		t.Errorf("promotePath = %q, want %q", got, want)
	}
}

// TestSysctlsToTake checks which saved sysctls a reload hands to the new
// Node (TestVMACReload* see the values restored, as root).
func TestSysctlsToTake(t *testing.T) {
	const (
		prom = "/proc/sys/net/ipv4/conf/eth0/promote_secondaries"
		rpA  = "/proc/sys/net/ipv4/conf/all/rp_filter"
		rpE  = "/proc/sys/net/ipv4/conf/eth0/rp_filter"
		arp  = "/proc/sys/net/ipv4/conf/vrrp.51/arp_ignore"
	)
	tests := []struct {
		name        string
		mine, saved []string
		rpCleared   bool
		want        []string
	}{
		{"what both set", []string{prom, arp}, []string{prom, rpA}, false, []string{prom}},
		{"the old's rp_filters when the new found them cleared", []string{prom}, []string{prom, rpA, rpE, arp}, true,
			[]string{prom, rpA, rpE}},
		{"not without", []string{prom}, []string{rpA, rpE}, false, nil},
		{"an rp_filter the new sets itself, once", []string{rpA}, []string{rpA}, true, []string{rpA}},
		{"nothing saved", []string{prom, rpA}, nil, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := sysctlsToTake(tt.mine, tt.saved, tt.rpCleared)
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("sysctlsToTake (-want +got):\n%s", d)
			}
		})
	}
}
