package config

import (
	"testing"
	"time"
)

// TestSMTPAlertInheritance checks keepalived's smtp_alert defaults: the
// object's own, else smtp_alert_vrrp / smtp_alert_checker, else
// smtp_alert, else no (yes for a real server), and nothing at all
// without notification_email and smtp_server.
func TestSMTPAlertInheritance(t *testing.T) {
	const mail = " notification_email {\n  a@example.com\n }\n smtp_server 192.0.2.25\n"
	body := func(global, own string) string {
		return "global_defs {\n" + global + "}\n" +
			"vrrp_sync_group G {\n group {\n  VI_1\n }\n" + own + "}\n" +
			"vrrp_instance VI_1 {\n interface eth0\n virtual_router_id 1\n" + own + " virtual_ipaddress {\n  10.0.0.1\n }\n}\n" +
			"virtual_server 10.0.0.1 80 {\n protocol TCP\n" + own + " real_server 10.0.0.2 80 {\n" + own + "  TCP_CHECK {\n  }\n }\n}\n"
	}
	type want struct{ in, sg, vs, rs bool }
	for _, tc := range []struct {
		name, global, own string
		want              want
	}{
		{"no mail settings", " smtp_alert\n", " smtp_alert\n", want{}},
		{"defaults", mail, "", want{rs: true}},
		{"global smtp_alert", mail + " smtp_alert\n", "", want{true, true, true, true}},
		{"global smtp_alert off", mail + " smtp_alert off\n", "", want{}},
		{"per level", mail + " smtp_alert off\n smtp_alert_vrrp\n", "", want{in: true, sg: true}},
		{"checker level", mail + " smtp_alert\n smtp_alert_checker no\n", "", want{in: true, sg: true}},
		{"own wins", mail + " smtp_alert off\n smtp_alert_vrrp off\n smtp_alert_checker off\n", " smtp_alert\n", want{true, true, true, true}},
		{"own off", mail, " smtp_alert false\n", want{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mustParse(t, body(tc.global, tc.own), Options{Hostname: "h"})
			got := want{c.Instances[0].SMTPAlert, c.SyncGroups[0].SMTPAlert, c.VirtualServers[0].SMTPAlert, c.VirtualServers[0].RealServers[0].SMTPAlert}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestEmailSettings(t *testing.T) {
	for _, tc := range []struct {
		name, global string
		want         Email
	}{
		{"address, default port", " smtp_server 192.0.2.25\n", Email{Server: "192.0.2.25:25", ConnectTimeout: 30 * time.Second}},
		{"IPv6 and port", " smtp_server 2001:db8::25 2525\n", Email{Server: "[2001:db8::25]:2525", ConnectTimeout: 30 * time.Second}},
		{"a name", " smtp_server mail.example.com\n smtp_connect_timeout 5\n", Email{Server: "mail.example.com:25", ConnectTimeout: 5 * time.Second}},
		{"addresses", " notification_email {\n  a@x\n  b@x c@x\n }\n notification_email_from lb@x\n smtp_helo_name lb.x\n",
			Email{To: []string{"a@x", "b@x", "c@x"}, From: "lb@x", HeloName: "lb.x", ConnectTimeout: 30 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mustParse(t, "global_defs {\n"+tc.global+"}\n", Options{Hostname: "h"})
			e := c.Global.Email
			if e == nil {
				t.Fatal("no Email")
			}
			if e.Server != tc.want.Server || e.From != tc.want.From || e.HeloName != tc.want.HeloName ||
				e.ConnectTimeout != tc.want.ConnectTimeout || len(e.To) != len(tc.want.To) {
				t.Fatalf("got %+v, want %+v", *e, tc.want)
			}
			for i := range e.To {
				if e.To[i] != tc.want.To[i] {
					t.Errorf("To[%d] = %q, want %q", i, e.To[i], tc.want.To[i])
				}
			}
		})
	}
}
