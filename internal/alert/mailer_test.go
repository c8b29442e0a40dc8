package alert

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/directord/directord/config"
	"github.com/directord/directord/internal/alert/alerttest"
)

func global(server string) *config.Global {
	return &config.Global{RouterID: "lb1", Email: &config.Email{
		To: []string{"ops@example.com", "oncall@example.com"}, From: "lb1@example.com",
		Server: server, HeloName: "lb1.example.com", ConnectTimeout: 2 * time.Second}}
}

var fixed = time.Date(2026, 12, 1, 21, 0, 0, 0, time.FixedZone("", 3600))

// TestDialogue checks keepalived's dialogue and message byte for byte.
func TestDialogue(t *testing.T) {
	srv := alerttest.NewServer(t)
	m := New(global(srv.Addr()), slog.New(slog.DiscardHandler))
	m.Now = func() time.Time { return fixed }
	defer m.Close()
	m.Instance("VI_1", "MASTER")
	ses := srv.Next(t)
	wantCmds := []string{"HELO lb1.example.com", "MAIL FROM:<lb1@example.com>",
		"RCPT TO:<ops@example.com>", "RCPT TO:<oncall@example.com>", "DATA", "QUIT"}
	if strings.Join(ses.Cmds, "\n") != strings.Join(wantCmds, "\n") {
		t.Errorf("commands:\ngot:  %q\nwant: %q", ses.Cmds, wantCmds)
	}
	wantData := "Date: Tue, 01 Dec 2026 21:00:00 +0100\r\n" +
		"From: lb1@example.com\r\n" +
		"Subject: [lb1] VRRP Instance VI_1 - Entering MASTER state\r\n" +
		"X-Mailer: Keepalived\r\n" +
		"To: ops@example.com, oncall@example.com\r\n" +
		"\r\n" +
		"=> VRRP Instance is now owning VRRP VIPs <=\r\n" +
		"\r\n"
	if ses.Data != wantData {
		t.Errorf("data:\ngot:  %q\nwant: %q", ses.Data, wantData)
	}
}

// TestInstanceStates checks that a state already mailed is not mailed
// again, and no_email_faults.
func TestInstanceStates(t *testing.T) {
	srv := alerttest.NewServer(t)
	g := global(srv.Addr())
	g.Email.NoFaults = true
	m := New(g, slog.New(slog.DiscardHandler))
	defer m.Close()
	for _, st := range []string{"BACKUP", "BACKUP", "FAULT", "MASTER", "STOP"} {
		m.Instance("VI_1", st)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if sent, failed, dropped := m.Stats(); sent != 3 || failed != 0 || dropped != 0 {
		t.Errorf("sent %d, failed %d, dropped %d; want 3, 0, 0", sent, failed, dropped)
	}
	for _, want := range []string{"Entering BACKUP state", "Entering MASTER state", "Stopping"} {
		if got := srv.Next(t).Data; !strings.Contains(got, "Subject: [lb1] VRRP Instance VI_1 - "+want+"\r\n") {
			t.Errorf("want %q, got %q", want, got)
		}
	}
	select {
	case ses := <-srv.Sessions:
		t.Errorf("one mail too many: %q", ses.Data)
	default:
	}
}

// TestUnreachable checks that a refused connection and a server that
// never answers delay no caller, and that a full queue drops and counts.
func TestUnreachable(t *testing.T) {
	refused, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusedAddr := refused.Addr().String()
	refused.Close()

	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() { // accepts, never writes
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()

	for _, tc := range []struct{ name, addr string }{{"refused", refusedAddr}, {"silent", silent.Addr().String()}} {
		t.Run(tc.name, func(t *testing.T) {
			g := global(tc.addr)
			g.Email.ConnectTimeout = time.Hour
			m := New(g, slog.New(slog.DiscardHandler))
			defer m.Close()
			start := time.Now()
			const n = 3 * QueueSize
			for i := range n {
				m.Instance("VI_"+string(rune('a'+i%26))+string(rune('a'+i/26)), "MASTER")
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("%d alerts took %v to queue", n, d)
			}
			if tc.name == "silent" {
				sent, failed, dropped := m.Stats()
				if sent != 0 || dropped < n-QueueSize-1 {
					t.Errorf("sent %d, failed %d, dropped %d of %d; want at least %d dropped", sent, failed, dropped, n, n-QueueSize-1)
				}
			}
			start = time.Now()
			m.Close()
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("Close took %v", d)
			}
		})
	}
}

func TestNilMailer(t *testing.T) {
	var m *Mailer
	m.Instance("VI_1", "MASTER")
	m.Send(Message{})
	m.Close()
	if New(&config.Global{}, nil) != nil {
		t.Error("a Mailer without e-mail settings")
	}
}

// TestMailsInOrder: one sender, so mails reach the server in the order
// they were queued.
func TestMailsInOrder(t *testing.T) {
	srv := alerttest.NewServer(t)
	m := New(global(srv.Addr()), slog.New(slog.DiscardHandler))
	defer m.Close()
	for i := range 10 {
		m.Send(Message{Subject: fmt.Sprintf("n%d", i), Body: "b"})
	}
	for i := range 10 {
		ses := srv.Next(t)
		if want := fmt.Sprintf("Subject: n%d\r\n", i); !strings.Contains(ses.Data, want) {
			t.Fatalf("mail %d: %q, want %q", i, ses.Data, want)
		}
	}
}
