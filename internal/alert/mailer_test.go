package alert

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/directord/directord/config"
)

// smtpServer is a minimal SMTP server on loopback that records each
// session's commands and DATA, as keepalived's dialogue needs.
type smtpServer struct {
	ln       net.Listener
	sessions chan session
}

type session struct {
	cmds []string // every command line, without CRLF
	data string   // what came between DATA and the lone dot
}

func newSMTPServer(t *testing.T) *smtpServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &smtpServer{ln: ln, sessions: make(chan session, 16)}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(c)
		}
	}()
	return s
}

func (s *smtpServer) serve(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	var ses session
	io.WriteString(c, "220-mail.test ESMTP\r\n220 ready\r\n")
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimSuffix(line, "\r\n")
		ses.cmds = append(ses.cmds, line)
		switch verb, _, _ := strings.Cut(line, " "); verb {
		case "HELO", "MAIL", "RCPT":
			io.WriteString(c, "250 ok\r\n")
		case "DATA":
			io.WriteString(c, "354 go on\r\n")
			var b strings.Builder
			for {
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if l == ".\r\n" {
					break
				}
				b.WriteString(l)
			}
			ses.data = b.String()
			io.WriteString(c, "250 queued\r\n")
		case "QUIT":
			io.WriteString(c, "221 bye\r\n")
			s.sessions <- ses
			return
		default:
			io.WriteString(c, "500 what\r\n")
		}
	}
}

func (s *smtpServer) next(t *testing.T) session {
	t.Helper()
	select {
	case ses := <-s.sessions:
		return ses
	case <-time.After(10 * time.Second):
		t.Fatal("no mail reached the server")
		return session{}
	}
}

func global(server string) *config.Global {
	return &config.Global{RouterID: "lb1", Email: &config.Email{
		To: []string{"ops@example.com", "oncall@example.com"}, From: "lb1@example.com",
		Server: server, HeloName: "lb1.example.com", ConnectTimeout: 2 * time.Second}}
}

var fixed = time.Date(2026, 12, 1, 21, 0, 0, 0, time.FixedZone("", 3600))

// TestDialogue checks keepalived's dialogue and message byte for byte.
func TestDialogue(t *testing.T) {
	srv := newSMTPServer(t)
	m := New(global(srv.ln.Addr().String()), slog.New(slog.DiscardHandler))
	m.Now = func() time.Time { return fixed }
	defer m.Close()
	m.Instance("VI_1", "MASTER")
	ses := srv.next(t)
	wantCmds := []string{"HELO lb1.example.com", "MAIL FROM:<lb1@example.com>",
		"RCPT TO:<ops@example.com>", "RCPT TO:<oncall@example.com>", "DATA", "QUIT"}
	if strings.Join(ses.cmds, "\n") != strings.Join(wantCmds, "\n") {
		t.Errorf("commands:\ngot:  %q\nwant: %q", ses.cmds, wantCmds)
	}
	wantData := "Date: Tue, 01 Dec 2026 21:00:00 +0100\r\n" +
		"From: lb1@example.com\r\n" +
		"Subject: [lb1] VRRP Instance VI_1 - Entering MASTER state\r\n" +
		"X-Mailer: Keepalived\r\n" +
		"To: ops@example.com, oncall@example.com\r\n" +
		"\r\n" +
		"=> VRRP Instance is now owning VRRP VIPs <=\r\n" +
		"\r\n"
	if ses.data != wantData {
		t.Errorf("data:\ngot:  %q\nwant: %q", ses.data, wantData)
	}
}

// TestInstanceStates checks that a state already mailed is not mailed
// again, and no_email_faults.
func TestInstanceStates(t *testing.T) {
	srv := newSMTPServer(t)
	g := global(srv.ln.Addr().String())
	g.Email.NoFaults = true
	m := New(g, slog.New(slog.DiscardHandler))
	defer m.Close()
	for _, st := range []string{"BACKUP", "BACKUP", "FAULT", "MASTER", "STOP"} {
		m.Instance("VI_1", st)
	}
	for _, want := range []string{"Entering BACKUP state", "Entering MASTER state", "Stopping"} {
		if got := srv.next(t).data; !strings.Contains(got, "Subject: [lb1] VRRP Instance VI_1 - "+want+"\r\n") {
			t.Errorf("want %q, got %q", want, got)
		}
	}
	select {
	case ses := <-srv.sessions:
		t.Errorf("one mail too many: %q", ses.data)
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
