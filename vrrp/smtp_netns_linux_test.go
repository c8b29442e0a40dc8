package vrrp

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/directord/directord/config"
	"github.com/directord/directord/internal/alert"
	"github.com/directord/directord/internal/alert/alerttest"
	"github.com/directord/directord/internal/nstest"
)

// TestSMTPAlertTransitions: an instance with smtp_alert mails keepalived's
// alerts for its transitions (BACKUP at start, MASTER, Stopping) to an
// SMTP server on the host's loopback, with keepalived's dialogue.
func TestSMTPAlertTransitions(t *testing.T) {
	nstest.RequireRoot(t)
	srv := alerttest.NewServer(t)
	a, _ := peers(t, "dd-mail")
	conf := "global_defs {\n router_id lb1\n notification_email {\n  ops@example.com\n  oncall@example.com\n }\n" +
		" notification_email_from lb1@example.com\n smtp_server " + strings.Replace(srv.Addr(), ":", " ", 1) +
		"\n smtp_helo_name lb1.example.com\n smtp_alert_vrrp\n}\n" +
		nstest.Instance("dda", 150, 3, "0.1", "192.0.2.100/24", "")
	cfg, diags := config.Parse("/test.conf", conf, nil, config.Options{Hostname: a.Name})
	if diags.HasErrors() {
		t.Fatalf("config: %s", diags.Errors())
	}
	log := slog.New(slog.NewTextHandler(testWriter{t, a.Name}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	m := alert.New(&cfg.Global, log)
	defer m.Close()
	var n *Node
	var err error
	a.Do(t, func() { n, err = NewNode(cfg, a.NL, log) })
	if err != nil {
		t.Fatal(err)
	}
	n.SetAlerts(m)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	nd := &node{ns: a, n: n, cancel: cancel, done: done}
	t.Cleanup(nd.stop)
	nstest.WaitFor(t, 5*time.Second, "a master", func() bool { return nd.state(t) == Master })
	nd.stop()
	for _, want := range []struct{ subject, body string }{
		{"Entering BACKUP state", "=> VRRP Instance is no longer owning VRRP VIPs <="},
		{"Entering MASTER state", "=> VRRP Instance is now owning VRRP VIPs <="},
		{"Stopping", "=> VRRP Instance stopping <="},
	} {
		ses := srv.Next(t)
		if !strings.Contains(ses.Data, "\r\nSubject: [lb1] VRRP Instance VI_1 - "+want.subject+"\r\n") ||
			!strings.Contains(ses.Data, "\r\nTo: ops@example.com, oncall@example.com\r\n\r\n"+want.body+"\r\n") {
			t.Errorf("mail:\n%s\nwant %q, %q", ses.Data, want.subject, want.body)
		}
		if got := strings.Join(ses.Cmds, "|"); got != "HELO lb1.example.com|MAIL FROM:<lb1@example.com>|RCPT TO:<ops@example.com>|RCPT TO:<oncall@example.com>|DATA|QUIT" {
			t.Errorf("dialogue %s", got)
		}
	}
}
