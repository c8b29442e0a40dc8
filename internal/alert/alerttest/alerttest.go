// Package alerttest is a minimal SMTP server on loopback for tests of
// e-mail alerts: it answers keepalived's dialogue and records it.
package alerttest

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// Server is a minimal SMTP server on loopback that records each
// session's commands and DATA, as keepalived's dialogue needs.
type Server struct {
	ln       net.Listener
	Sessions chan Session
}

// Session is one SMTP session as the server saw it.
type Session struct {
	Cmds []string // every command line, without CRLF
	Data string   // what came between DATA and the lone dot
}

// NewServer starts a Server, closed at the test's end.
func NewServer(t *testing.T) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{ln: ln, Sessions: make(chan Session, 16)}
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

func (s *Server) serve(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	var ses Session
	io.WriteString(c, "220-mail.test ESMTP\r\n220 ready\r\n")
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimSuffix(line, "\r\n")
		ses.Cmds = append(ses.Cmds, line)
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
			ses.Data = b.String()
			io.WriteString(c, "250 queued\r\n")
		case "QUIT":
			// The session is handed over before the client hears 221:
			// after it, the client opens its next mail, whose session
			// must not overtake this one.
			s.Sessions <- ses
			io.WriteString(c, "221 bye\r\n")
			return
		default:
			io.WriteString(c, "500 what\r\n")
		}
	}
}

// Next is the next session that ended with QUIT; it fails the test after
// 10 s without one.
func (s *Server) Next(t *testing.T) Session {
	t.Helper()
	select {
	case ses := <-s.Sessions:
		return ses
	case <-time.After(10 * time.Second):
		t.Fatal("no mail reached the server")
		return Session{}
	}
}

// Addr is the server's HOST:PORT.
func (s *Server) Addr() string { return s.ln.Addr().String() }
