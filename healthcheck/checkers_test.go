package healthcheck

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/directord/directord/config"
)

// udpServer serves UDP on loopback: answer gives the reply to each
// datagram (nil: none); got receives each datagram.
func udpServer(t *testing.T, answer func([]byte) [][]byte) (netip.AddrPort, chan []byte) {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	got := make(chan []byte, 16)
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := c.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			b := append([]byte(nil), buf[:n]...)
			select {
			case got <- b:
			default:
			}
			for _, r := range answer(b) {
				c.WriteToUDPAddrPort(r, from)
			}
		}
	}()
	return netip.MustParseAddrPort(c.LocalAddr().String()), got
}

// closedUDPPort is a loopback port nothing listens on: a datagram to it
// draws an ICMP port unreachable.
func closedUDPPort(t *testing.T) netip.AddrPort {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	a := netip.MustParseAddrPort(c.LocalAddr().String())
	c.Close()
	return a
}

func echo(b []byte) [][]byte { return [][]byte{b} }

// TestUDPProbeAsKeepalived judges UDP_CHECK as check_udp.c does, against
// a real echo server, a silent one and a closed port on loopback.
func TestUDPProbeAsKeepalived(t *testing.T) {
	echoAddr, echoGot := udpServer(t, echo)
	silent, _ := udpServer(t, func([]byte) [][]byte { return nil })
	closed := closedUDPPort(t)
	c6, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6loopback})
	if err != nil {
		t.Fatal(err)
	}
	closed6 := netip.MustParseAddrPort(c6.LocalAddr().String())
	c6.Close()
	const timeout = 300 * time.Millisecond
	for _, tc := range []struct {
		name   string
		addr   netip.AddrPort
		cfg    config.UDPCheck
		want   Outcome
		reason string
	}{
		{"echo", echoAddr, config.UDPCheck{MaxReply: 255}, Up, "replied 32 bytes"},
		{"silent without require_reply", silent, config.UDPCheck{MaxReply: 255}, Up, "no reply, none required"},
		{"silent with require_reply", silent, config.UDPCheck{RequireReply: true, MaxReply: 255}, Down, "reply: timed out"},
		{"closed port", closed, config.UDPCheck{MaxReply: 255}, Down, "reply: ICMP port unreachable"},
		{"closed IPv6 port", closed6, config.UDPCheck{MaxReply: 255}, Down, "reply: ICMP port unreachable"},
		{"closed port with require_reply", closed, config.UDPCheck{RequireReply: true, MaxReply: 255}, Down, "reply: ICMP port unreachable"},
		{"reply matches", echoAddr, config.UDPCheck{Payload: []byte{1, 2, 3}, RequireReply: true, Reply: []byte{1, 2, 3}, MaxReply: 255}, Up, "replied 3 bytes"},
		{"reply matches a wildcard", echoAddr, config.UDPCheck{Payload: []byte{1, 0x25}, RequireReply: true, Reply: []byte{1, 0x20}, ReplyMask: []byte{0, 0x0f}, MaxReply: 255}, Up, "replied 2 bytes"},
		{"reply differs", echoAddr, config.UDPCheck{Payload: []byte{1, 2}, RequireReply: true, Reply: []byte{1, 3}, MaxReply: 255}, Down, "reply: byte 1 is 0x02, want 0x03"},
		{"only the shorter is compared", echoAddr, config.UDPCheck{Payload: []byte{1}, RequireReply: true, Reply: []byte{1, 3}, MaxReply: 255}, Up, "replied 1 bytes"},
		{"reply too short", echoAddr, config.UDPCheck{Payload: []byte{1}, RequireReply: true, Reply: []byte{1}, MinReply: 2, MaxReply: 255}, Down, "reply: 1 bytes, below min_reply_length 2"},
		{"reply too long", echoAddr, config.UDPCheck{Payload: []byte{1, 2, 3}, RequireReply: true, Reply: []byte{1}, MaxReply: 2}, Down, "reply: more than max_reply_length 2 bytes"},
		{"lengths unchecked without reply data", echoAddr, config.UDPCheck{Payload: []byte{1, 2, 3}, RequireReply: true, MaxReply: 2}, Up, "replied 3 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &UDP{Target: Target{Addr: tc.addr, Timeout: timeout}, Cfg: tc.cfg}
			r := p.Probe(context.Background())
			if r.Outcome != tc.want || r.Reason != tc.reason {
				t.Errorf("got %s %q, want %s %q", r.Outcome, r.Reason, tc.want, tc.reason)
			}
		})
	}
	// The default payload is keepalived's set_buf filling.
	select {
	case b := <-echoGot:
		if string(b) != "keepalived check - keepalived ch" {
			t.Errorf("default payload %q", b)
		}
	default:
		t.Error("the echo server got nothing")
	}
}

// dnsServer answers DNS queries on loopback: first a datagram of another
// ID and one that is not a response (both to be passed over), then the
// answer with rcode.
func dnsServer(t *testing.T, rcode dnsmessage.RCode, questions chan<- dnsmessage.Message) netip.AddrPort {
	addr, _ := udpServer(t, func(b []byte) [][]byte {
		var q dnsmessage.Message
		if err := q.Unpack(b); err != nil {
			t.Errorf("query does not parse: %v", err)
			return nil
		}
		select {
		case questions <- q:
		default:
		}
		other := dnsmessage.Message{Header: dnsmessage.Header{ID: q.ID + 1, Response: true, RCode: dnsmessage.RCodeRefused}}
		notResponse := dnsmessage.Message{Header: dnsmessage.Header{ID: q.ID, RCode: dnsmessage.RCodeRefused}}
		a := dnsmessage.Message{Header: dnsmessage.Header{ID: q.ID, Response: true, Authoritative: true, RCode: rcode}, Questions: q.Questions}
		var out [][]byte
		for _, m := range []dnsmessage.Message{other, notResponse, a} {
			p, err := m.Pack()
			if err != nil {
				t.Error(err)
				return nil
			}
			out = append(out, p)
		}
		return out
	})
	return addr
}

// TestDNSProbeAsKeepalived asks a DNS server written with dnsmessage,
// as check_dns.c asks: the query must be keepalived's, and only the
// answer's ID, response bit and rcode decide.
func TestDNSProbeAsKeepalived(t *testing.T) {
	qs := make(chan dnsmessage.Message, 4)
	ok := dnsServer(t, dnsmessage.RCodeSuccess, qs)
	nx := dnsServer(t, dnsmessage.RCodeNameError, make(chan dnsmessage.Message, 4))
	silent, _ := udpServer(t, func([]byte) [][]byte { return nil })
	closed := closedUDPPort(t)
	for _, tc := range []struct {
		name      string
		addr      netip.AddrPort
		dnsName   string
		typ       string
		want      Outcome
		reason    string
		wantQName string
		wantQType dnsmessage.Type
	}{
		{"answered", ok, "www.example.com", "A", Up, "answered", "www.example.com.", dnsmessage.TypeA},
		{"the root by default", ok, "", "SOA", Up, "answered", ".", dnsmessage.TypeSOA},
		{"NXDOMAIN", nx, "example.com.", "MX", Down, "answer: NXDOMAIN (3)", "", 0},
		{"no answer", silent, "", "SOA", Down, "answer: timed out", "", 0},
		{"closed port", closed, "", "SOA", Down, "answer: connection refused", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &config.Checker{CheckerSpec: &config.CheckerSpec{Type: config.CheckDNS, ConnectTimeout: 300 * time.Millisecond, DNS: &config.DNSCheck{Type: tc.typ, Name: tc.dnsName}}}
			rs := &config.RealServer{Addr: tc.addr}
			p, err := NewDNS(c, rs)
			if err != nil {
				t.Fatal(err)
			}
			r := p.Probe(context.Background())
			if r.Outcome != tc.want || r.Reason != tc.reason {
				t.Errorf("got %s %q, want %s %q", r.Outcome, r.Reason, tc.want, tc.reason)
			}
			if tc.wantQName == "" {
				return
			}
			q := <-qs
			if !q.Header.RecursionDesired || q.Header.OpCode != 0 || q.Header.Response || len(q.Questions) != 1 {
				t.Fatalf("query %+v, want keepalived's: recursion desired, one question", q)
			}
			if got := q.Questions[0]; got.Name.String() != tc.wantQName || got.Type != tc.wantQType || got.Class != dnsmessage.ClassINET {
				t.Errorf("question %v, want %s %v IN", got, tc.wantQName, tc.wantQType)
			}
		})
	}
}

// TestDNSQueryIsKeepalived's: the bytes keepalived 2.2.7 sent for
// "type A, name www.example.com", captured in the User-Mode Linux guest
// (keepalived -C against a UDP listener), less its random ID.
func TestDNSQueryIsKeepalived(t *testing.T) {
	const keepalived = "00000100000100000000000003777777076578616d706c6503636f6d0000010001"
	if got := fmt.Sprintf("%x", dnsQuery("www.example.com", 1)); got != keepalived {
		t.Errorf("query %s, want keepalived's %s", got, keepalived)
	}
}

// smtpServer runs a scripted SMTP server on loopback: it sends banner,
// then for each line it reads answers with the next of replies ("" to
// close without a word). got receives the lines read.
func smtpServer(t *testing.T, banner string, replies []string) (netip.AddrPort, chan string) {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	got := make(chan string, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.Write([]byte(banner))
				r := bufio.NewReader(c)
				for _, rep := range replies {
					l, err := r.ReadString('\n')
					if err != nil {
						return
					}
					got <- l
					if rep == "" {
						return
					}
					c.Write([]byte(rep))
				}
			}()
		}
	}()
	return netip.MustParseAddrPort(ln.Addr().String()), got
}

// TestSMTPProbeAsKeepalived runs keepalived's dialogue (check_smtp.c)
// against SMTP servers on loopback: banner 220, HELO name answered 250,
// QUIT answered by any line.
func TestSMTPProbeAsKeepalived(t *testing.T) {
	for _, tc := range []struct {
		name    string
		banner  string
		replies []string
		want    Outcome
		reason  string
		lines   []string
	}{
		{"dialogue", "220 mx.example ESMTP\r\n", []string{"250 mx.example Hello\r\n", "221 2.0.0 Bye\r\n"}, Up, "SMTP dialogue done",
			[]string{"HELO director.example\r\n", "QUIT\r\n"}},
		{"banner cut short", "22", nil, Down, "banner: closed by the server", nil},
		{"refused banner", "554 no service\r\n", nil, Down, `bad greeting banner "554 no service"`, nil},
		{"multi-line banner", "220-mx.example\r\n220 ESMTP\r\n", nil, Down, `bad greeting banner "220-mx.example"`, nil},
		{"banner without text", "220\r\n", nil, Down, `bad greeting banner "220"`, nil},
		{"HELO refused", "220 mx\r\n", []string{"501 bad name\r\n"}, Down, `bad HELO response "501 bad name"`, []string{"HELO director.example\r\n"}},
		{"QUIT answered by anything", "220 mx\r\n", []string{"250 ok\r\n", "500 what\r\n"}, Up, "SMTP dialogue done", nil},
		{"QUIT unanswered", "220 mx\r\n", []string{"250 ok\r\n", ""}, Down, "QUIT: closed by the server", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, got := smtpServer(t, tc.banner, tc.replies)
			p := &SMTP{Target: Target{Addr: addr, Timeout: 2 * time.Second}, HELO: "director.example"}
			r := p.Probe(context.Background())
			if r.Outcome != tc.want || r.Reason != tc.reason {
				t.Errorf("got %s %q, want %s %q", r.Outcome, r.Reason, tc.want, tc.reason)
			}
			for _, want := range tc.lines {
				if l := <-got; l != want {
					t.Errorf("server read %q, want %q", l, want)
				}
			}
		})
	}
}

// TestCheckerWithoutSettingsIsAnError: a checker made without its
// settings (not by the configuration's reader) is an error, not a panic.
func TestCheckerWithoutSettingsIsAnError(t *testing.T) {
	for _, typ := range []config.CheckerType{config.CheckUDP, config.CheckDNS, config.CheckSMTP} {
		cfg := &config.Config{VirtualServers: []*config.VirtualServer{{RealServers: []*config.RealServer{{
			Addr: netip.MustParseAddrPort("127.0.0.1:53"), Checkers: []*config.Checker{{CheckerSpec: &config.CheckerSpec{Type: typ}}}}}}}}
		if _, err := New(cfg, func(Event) {}, nil); err == nil || !strings.Contains(err.Error(), typ.String()) {
			t.Errorf("%s without settings: %v, want an error naming it", typ, err)
		}
	}
}

// TestSMTPSilentServerTimesOut: a server that never greets fails at
// connect_timeout, a silent failure.
func TestSMTPSilentServerTimesOut(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	p := &SMTP{Target: Target{Addr: netip.MustParseAddrPort(ln.Addr().String()), Timeout: 200 * time.Millisecond}, HELO: "x"}
	r := p.Probe(context.Background())
	if r.Outcome != Down || !r.Silent || !strings.HasPrefix(r.Reason, "banner: timed out") {
		t.Errorf("got %s %q silent %v, want down, banner: timed out, silent", r.Outcome, r.Reason, r.Silent)
	}
}

// TestRunnerRunsUDPDNSSMTP: the Runner makes and runs the three checkers
// from a configuration: one on a closed UDP port takes its real server
// out at its first failure (at start, before any success, keepalived's
// checker takes a real server down at once, whatever its retry: see
// TestStartAsKeepalived); those whose servers answer keep theirs.
func TestRunnerRunsUDPDNSSMTP(t *testing.T) {
	closed := closedUDPPort(t)
	dns := dnsServer(t, dnsmessage.RCodeSuccess, make(chan dnsmessage.Message, 4))
	smtp, _ := smtpServer(t, "220 mx\r\n", []string{"250 ok\r\n", "221 bye\r\n"})
	timing := "   connect_timeout 1\n   delay_loop 0.05\n   delay_before_retry 0.01\n   warmup 0\n"
	conf := fmt.Sprintf("virtual_server 192.0.2.1 53 {\n protocol UDP\n"+
		" real_server 127.0.0.1 %d {\n  UDP_CHECK {\n%s   retry 1\n  }\n }\n"+
		" real_server 127.0.0.1 %d {\n  DNS_CHECK {\n%s   type A\n   name example.com\n  }\n }\n"+
		" real_server 127.0.0.1 %d {\n  SMTP_CHECK {\n%s  }\n }\n}\n", closed.Port(), timing, dns.Port(), timing, smtp.Port(), timing)
	cfg := parse(t, conf)
	events := make(chan Event, 64)
	var mu sync.Mutex
	probes := map[string]int{}
	udpAtEvent := 0
	r, err := New(cfg, func(e Event) {
		mu.Lock()
		if udpAtEvent == 0 {
			udpAtEvent = probes["UDP_CHECK"]
		}
		mu.Unlock()
		events <- e
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(r.Checks()); n != 3 {
		t.Fatalf("%d checks, want 3", n)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for _, c := range r.Checks() {
		c.Prober = &counted{Prober: c.Prober, after: func(res Result) {
			mu.Lock()
			defer mu.Unlock()
			probes[c.Cfg.Type.String()]++
			if c.Cfg.Type != config.CheckUDP && res.Outcome != Up && ctx.Err() == nil {
				t.Errorf("%s: %v", c.Cfg.Type, res)
			}
		}}
	}
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	select {
	case e := <-events:
		if e.Real != 0 || e.Alive || !strings.Contains(e.Reason, "port unreachable") {
			t.Errorf("event %+v, want real server 0 down for the ICMP port unreachable", e)
		}
	case <-ctx.Done():
		t.Fatal("the UDP_CHECK never took its real server out")
	}
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if udpAtEvent != 1 {
		t.Errorf("UDP_CHECK probed %d times before its real server left, want 1 (a failure at start, before any success)", udpAtEvent)
	}
}

// TestSMTPStopsWithItsContext: a probe waiting on a silent server ends
// when its context does, not at connect_timeout.
func TestSMTPStopsWithItsContext(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	p := &SMTP{Target: Target{Addr: netip.MustParseAddrPort(ln.Addr().String()), Timeout: time.Hour}, HELO: "x"}
	ctx, cancel := context.WithCancel(t.Context())
	res := make(chan Result, 1)
	go func() { res <- p.Probe(ctx) }()
	c, err := ln.Accept() // the probe is connected: it waits for the banner
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cancel()
	select {
	case r := <-res:
		if !strings.Contains(r.Reason, "context canceled") {
			t.Errorf("reason %q, want the context's end", r.Reason)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the probe did not stop with its context")
	}
}
