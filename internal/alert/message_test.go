package alert

import (
	"net/netip"
	"testing"

	"github.com/directord/directord/config"
)

// TestMessages checks the subjects and bodies against keepalived 2.2.7's
// (smtp.c, vrrp_notify.c, ipwrapper.c, check_*.c).
func TestMessages(t *testing.T) {
	vs := &config.VirtualServer{Addr: netip.MustParseAddrPort("192.0.2.100:443"), Protocol: config.TCP, Quorum: 3, Hysteresis: 1}
	rs := &config.RealServer{Addr: netip.MustParseAddrPort("192.0.2.11:443"), Checkers: []*config.Checker{{CheckerSpec: &config.CheckerSpec{Type: config.CheckTCP}}}}
	http := &config.RealServer{Addr: netip.MustParseAddrPort("[2001:db8::1]:80"), Checkers: []*config.Checker{{CheckerSpec: &config.CheckerSpec{Type: config.CheckSSLGet}}}}
	fwm := &config.VirtualServer{FWMark: 7, Protocol: config.TCP}
	grp := &config.VirtualServer{Group: "web", Addr: netip.AddrPortFrom(netip.Addr{}, 80)}
	inst, _ := Instance("lb1", "VI_1", "BACKUP")
	del, _ := Instance("lb1", "VI_1", "DELETED")
	group, _ := Group("lb1", "G", "FAULT")
	for _, tc := range []struct {
		name string
		got  Message
		want Message
	}{
		{"instance", inst, Message{"[lb1] VRRP Instance VI_1 - Entering BACKUP state", "=> VRRP Instance is no longer owning VRRP VIPs <="}},
		{"deleted", del, Message{"[lb1] VRRP Instance VI_1 - Deleted", "=> VRRP Deleted at reload <="}},
		{"group", group, Message{"[lb1] VRRP Group G - Entering FAULT state", "=> All VRRP group instances are now in FAULT state <="}},
		{"tcp down", RealServer("lb1", vs, rs, false), Message{"[lb1] Realserver [192.0.2.11]:tcp:443 of virtual server [192.0.2.100]:tcp:443 - DOWN", "=> TCP CHECK failed on service <="}},
		{"tcp up", RealServer("lb1", vs, rs, true), Message{"[lb1] Realserver [192.0.2.11]:tcp:443 of virtual server [192.0.2.100]:tcp:443 - UP", "=> TCP CHECK succeed on service <="}},
		{"http down, fwmark", RealServer("lb1", fwm, http, false), Message{"[lb1] Realserver [2001:db8::1]:tcp:80 of virtual server FWM 7 - DOWN", "=> CHECK failed on service : HTTP request failed <="}},
		{"shutdown rs", Shutdown("lb1", vs, rs), Message{"[lb1] Realserver [192.0.2.11]:tcp:443 of virtual server [192.0.2.100]:tcp:443 - DOWN", "=> Shutting down <="}},
		{"shutdown vs", Shutdown("lb1", fwm, nil), Message{"[lb1] Virtualserver FWM 7 - DOWN", "=> Shutting down <="}},
		{"quorum lost", Quorum("lb1", vs, false, false, 1), Message{"[lb1] Virtualserver [192.0.2.100]:tcp:443 - DOWN", "=> Lost quorum 3+1=2 <= 1 <="}},
		{"quorum at start", Quorum("lb1", grp, true, true, 5), Message{"[lb1] Virtualserver [web]:80 - UP", "=> Starting with quorum up 0+0=0 <= 5 <="}},
	} {
		if tc.got != tc.want {
			t.Errorf("%s:\ngot:  %q\nwant: %q", tc.name, tc.got, tc.want)
		}
	}
	if _, ok := Instance("lb1", "VI_1", "INIT"); ok {
		t.Error("INIT mailed")
	}
}
