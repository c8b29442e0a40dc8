package vrrp

import (
	"net/netip"
	"syscall"
	"testing"

	"github.com/directord/directord/config"
)

// TestToNetlinkDAD: IPv6 virtual addresses are added with IFA_F_NODAD
// unless "-nodad" was given, as keepalived's netlink_ipaddress does;
// IPv4 addresses never carry it.
func TestToNetlinkDAD(t *testing.T) {
	for _, tc := range []struct {
		name  string
		vip   config.VIP
		nodad bool
	}{
		{"IPv6 by default", config.VIP{Prefix: netip.MustParsePrefix("2001:db8::100/64"), PreferredLft: -1}, true},
		{"IPv6 with -nodad", config.VIP{Prefix: netip.MustParsePrefix("2001:db8::100/64"), PreferredLft: -1, DAD: true}, false},
		{"IPv4", config.VIP{Prefix: netip.MustParsePrefix("192.0.2.100/24")}, false},
		{"IPv4 with -nodad", config.VIP{Prefix: netip.MustParsePrefix("192.0.2.100/24"), DAD: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := toNetlink(tc.vip).Flags&syscall.IFA_F_NODAD != 0
			if got != tc.nodad {
				t.Errorf("IFA_F_NODAD set: got %v, want %v", got, tc.nodad)
			}
		})
	}
}
