package notifyfifo

import (
	"net/netip"
	"testing"

	"github.com/directord/directord/config"
)

// TestLines: keepalived 2.2.7's lines, byte for byte.
func TestLines(t *testing.T) {
	vs := &config.VirtualServer{Addr: netip.MustParseAddrPort("192.168.201.15:80"), Protocol: config.TCP}
	rs := &config.RealServer{Addr: netip.MustParseAddrPort("1.2.3.4:80")}
	vs6 := &config.VirtualServer{Addr: netip.MustParseAddrPort("[2001:db8::1]:443"), Protocol: config.SCTP}
	rs6 := &config.RealServer{Addr: netip.MustParseAddrPort("[2001:db8::a]:8443")}
	fwm := &config.VirtualServer{FWMark: 7}
	rsFwm := &config.RealServer{Addr: netip.MustParseAddrPort("10.0.0.2:0")}
	grp := &config.VirtualServer{Group: "web", Protocol: config.UDP}
	tests := []struct{ name, got, want string }{
		{"instance", InstanceLine("VI_1", "MASTER", 100), "INSTANCE \"VI_1\" MASTER 100\n"},
		{"instance stop", InstanceLine("VI 2", "STOP", 0), "INSTANCE \"VI 2\" STOP 0\n"},
		{"group", GroupLine("G1", "BACKUP"), "GROUP \"G1\" BACKUP 0\n"},
		{"vs up", VSLine(vs, true), "VS [192.168.201.15]:tcp:80 UP\n"},
		{"rs down", RSLine(vs, rs, false), "RS [1.2.3.4]:tcp:80 [192.168.201.15]:tcp:80 DOWN\n"},
		{"ipv6", RSLine(vs6, rs6, true), "RS [2001:db8::a]:sctp:8443 [2001:db8::1]:sctp:443 UP\n"},
		{"fwmark", RSLine(fwm, rsFwm, true), "RS [10.0.0.2]:none:0 FWM 7 UP\n"},
		{"fwmark vs", VSLine(fwm, false), "VS FWM 7 DOWN\n"},
		{"group vs", VSLine(grp, true), "VS [web]:0 UP\n"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}
