package healthcheck

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/directord/directord/config"
	"github.com/directord/directord/internal/testcert"
)

// rawServer is a loopback TCP server that reads each connection's
// request (up to its blank line), records it, and hands the connection
// to serve, which answers as it likes and closes it (or not: every
// connection is closed when the test ends).
type rawServer struct {
	ln   net.Listener
	mu   sync.Mutex
	reqs []string
}

func newRawServer(t *testing.T, network, addr string, serve func(c net.Conn, req string)) *rawServer {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	return startRaw(t, ln, serve)
}

// newRawTLSServer is newRawServer over TLS, on 127.0.0.1.
func newRawTLSServer(t *testing.T, serve func(c net.Conn, req string)) *rawServer {
	t.Helper()
	cert, err := testcert.Server("raw.test")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp4", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	return startRaw(t, ln, serve)
}

// newRawServerOf is the raw server a checker of type typ talks to, on
// 127.0.0.1: over TLS for SSL_GET, else plain.
func newRawServerOf(t *testing.T, typ string, serve func(c net.Conn, req string)) *rawServer {
	t.Helper()
	if typ == "SSL_GET" {
		return newRawTLSServer(t, serve)
	}
	return newRawServer(t, "tcp4", "127.0.0.1:0", serve)
}

func startRaw(t *testing.T, ln net.Listener, serve func(c net.Conn, req string)) *rawServer {
	s := &rawServer{ln: ln}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() {
				br := bufio.NewReader(c)
				var req strings.Builder
				for {
					l, err := br.ReadString('\n')
					req.WriteString(l)
					if err != nil || l == "\r\n" {
						break
					}
				}
				s.mu.Lock()
				s.reqs = append(s.reqs, req.String())
				s.mu.Unlock()
				serve(c, req.String())
			})
		}
	})
	return s
}

func (s *rawServer) addrPort() netip.AddrPort { return netip.MustParseAddrPort(s.ln.Addr().String()) }

func (s *rawServer) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.reqs...)
}

// replyWith writes a and closes c.
func replyWith(a string) func(c net.Conn, req string) {
	return func(c net.Conn, req string) {
		c.Write([]byte(a))
		c.Close()
	}
}

const okAnswer = "HTTP/1.0 200 OK\r\nContent-Length: 17\r\n\r\nthis cache works\n"

// rawChecker is an HTTP_GET checker of the raw server s.
func rawChecker(s *rawServer, urls ...*config.URL) (*config.Checker, *config.RealServer) {
	return rawCheckerOf("HTTP_GET", s, urls...)
}

// rawCheckerOf is a checker of type typ of the raw server s, whose
// connect_timeout leaves a TLS handshake under -race on a loaded machine
// its time (tests of timing set their own).
func rawCheckerOf(typ string, s *rawServer, urls ...*config.URL) (*config.Checker, *config.RealServer) {
	c := &config.Checker{CheckerSpec: &config.CheckerSpec{Type: checkerType(typ), ConnectTimeout: 2 * time.Second, HTTP: &config.HTTPCheck{URLs: urls}}}
	return c, &config.RealServer{Addr: s.addrPort()}
}

// TestHTTPRequestAsKeepalived: the request is byte for byte
// keepalived's (check_http.c's request_template): the path as written
// (a full URL too), User-Agent KeepAliveClient, Connection: close only
// with http_protocol 1.0C and 1.1, then Host: the virtual host, else the
// address connected to with its port ([] around an IPv6 address).
func TestHTTPRequestAsKeepalived(t *testing.T) {
	tests := []struct {
		name, network, addr string
		proto, vhost, path  string
		want                string // HOST stands for the server's address
	}{
		{"1.0", "tcp4", "127.0.0.1:0", "1.0", "", "/health?a=1",
			"GET /health?a=1 HTTP/1.0\r\nUser-Agent: KeepAliveClient\r\nHost: HOST\r\n\r\n"},
		{"1.0C", "tcp4", "127.0.0.1:0", "1.0C", "www.example.com", "/",
			"GET / HTTP/1.0\r\nUser-Agent: KeepAliveClient\r\nConnection: close\r\nHost: www.example.com\r\n\r\n"},
		{"1.1", "tcp4", "127.0.0.1:0", "1.1", "www.example.com:8080", "/",
			"GET / HTTP/1.1\r\nUser-Agent: KeepAliveClient\r\nConnection: close\r\nHost: www.example.com:8080\r\n\r\n"},
		{"full URL", "tcp4", "127.0.0.1:0", "1.0", "", "http://www.example.com/check",
			"GET http://www.example.com/check HTTP/1.0\r\nUser-Agent: KeepAliveClient\r\nHost: HOST\r\n\r\n"},
		{"IPv6", "tcp6", "[::1]:0", "1.0", "", "/",
			"GET / HTTP/1.0\r\nUser-Agent: KeepAliveClient\r\nHost: HOST\r\n\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newRawServer(t, tt.network, tt.addr, replyWith(okAnswer))
			c, rs := rawChecker(s, url(tt.path))
			c.HTTP.HTTPProtocol, c.HTTP.VirtualHost = tt.proto, tt.vhost
			p := mustHTTP(t, c, rs, "")
			if r := probe(t, p); r.Outcome != Up {
				t.Errorf("%s %q", r.Outcome, r.Reason)
			}
			want := strings.ReplaceAll(tt.want, "HOST", s.addrPort().String())
			if got := s.requests(); len(got) != 1 || got[0] != want {
				t.Errorf("request %q, want %q", got, want)
			}
		})
	}
}

// TestHostAndSNIAsKeepalived: the Host header takes the URL's
// virtualhost, else the checker's, the real server's, the virtual
// server's; enable_sni sends the URL's, else the checker's, else the
// virtual server's, and never the real server's (keepalived's
// ssl_connect), resolved from a configuration file.
func TestHostAndSNIAsKeepalived(t *testing.T) {
	s := newServer(t, true)
	conf := func(vs, rs, checker, u string) string {
		line := func(v string) string {
			if v == "" {
				return ""
			}
			return "virtualhost " + v + "\n"
		}
		return "virtual_server 192.0.2.1 443 {\n" + line(vs) +
			fmt.Sprintf("real_server %s %d {\n", s.addrPort().Addr(), s.addrPort().Port()) + line(rs) +
			"SSL_GET {\nenable_sni\n" + line(checker) + "url {\npath /ok\n" + line(u) + "}\n}\n}\n}\n"
	}
	tests := []struct {
		name             string
		vs, rs, chk, url string
		host, sni        string
	}{
		{"url", "vs.test", "rs.test", "chk.test", "url.test", "url.test", "url.test"},
		{"checker", "vs.test", "rs.test", "chk.test", "", "chk.test", "chk.test"},
		{"real server: Host only", "vs.test", "rs.test", "", "", "rs.test", "vs.test"},
		{"real server alone: no SNI", "", "rs.test", "", "", "rs.test", ""},
		{"virtual server", "vs.test", "", "", "", "vs.test", "vs.test"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := parse(t, conf(tt.vs, tt.rs, tt.chk, tt.url))
			rs := cfg.VirtualServers[0].RealServers[0]
			p := mustHTTP(t, rs.Checkers[0], rs, "")
			s.mu.Lock()
			s.hosts, s.snis = nil, nil
			s.mu.Unlock()
			if r := probe(t, p); r.Outcome != Up {
				t.Fatalf("%s %q", r.Outcome, r.Reason)
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			if len(s.hosts) != 1 || s.hosts[0] != tt.host || len(s.snis) != 1 || s.snis[0] != tt.sni {
				t.Errorf("Host %q, SNI %q; want %q, %q", s.hosts, s.snis, tt.host, tt.sni)
			}
		})
	}
}

// TestRequestMatchesGenhash: directord's request is byte for byte the
// one keepalived's own genhash sends (the same request code as its
// checker), for each http_protocol, with and without a virtual host.
// Skipped without genhash (Debian's keepalived package).
func TestRequestMatchesGenhash(t *testing.T) {
	genhash, err := exec.LookPath("genhash")
	if err != nil {
		t.Skip("no genhash")
	}
	for _, proto := range []string{"1.0", "1.0C", "1.1"} {
		for _, vhost := range []string{"", "www.example.com"} {
			t.Run(proto+"/"+vhost, func(t *testing.T) {
				s := newRawServer(t, "tcp4", "127.0.0.1:0", replyWith(okAnswer))
				args := []string{"-s", "127.0.0.1", "-p", strconv.Itoa(int(s.addrPort().Port())), "-u", "/health?a=1",
					"-P", strings.ToLower(proto)}
				if vhost != "" {
					args = append(args, "-V", vhost)
				}
				if out, err := exec.Command(genhash, args...).CombinedOutput(); err != nil {
					t.Fatalf("genhash: %v: %s", err, out)
				}
				c, rs := rawChecker(s, url("/health?a=1"))
				c.HTTP.HTTPProtocol, c.HTTP.VirtualHost = proto, vhost
				p := mustHTTP(t, c, rs, "")
				if r := probe(t, p); r.Outcome != Up {
					t.Fatalf("%s %q", r.Outcome, r.Reason)
				}
				got := s.requests()
				if len(got) != 2 || got[0] != got[1] {
					t.Errorf("genhash sent %q, directord %q", got[0], got[len(got)-1])
				}
			})
		}
	}
}

// TestSNIRoutingServer: a real server that routes by SNI and refuses a
// handshake for a name it does not serve passes with the URL's
// virtualhost as the name, where the checker's and the real server's
// differ (keepalived sends the URL's first).
func TestSNIRoutingServer(t *testing.T) {
	s := newServerWith(t, func(c *tls.Config) {
		serve := c.GetConfigForClient
		c.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
			serve(hello)
			if hello.ServerName != "app.test" {
				return nil, fmt.Errorf("no site %q here", hello.ServerName)
			}
			return nil, nil
		}
	})
	cfg := parse(t, "virtual_server 192.0.2.1 443 {\nvirtualhost vs.test\n"+
		fmt.Sprintf("real_server %s %d {\nvirtualhost rs.test\n", s.addrPort().Addr(), s.addrPort().Port())+
		"SSL_GET {\nenable_sni\nvirtualhost chk.test\nurl {\npath /ok\nvirtualhost app.test\n}\n}\n}\n}\n")
	rs := cfg.VirtualServers[0].RealServers[0]
	p := mustHTTP(t, rs.Checkers[0], rs, "")
	if r := probe(t, p); r.Outcome != Up {
		t.Errorf("%s %q", r.Outcome, r.Reason)
	}
	// The checker's name, which the server does not serve, is refused.
	rs.Checkers[0].HTTP.URLs[0].VirtualHost = ""
	p, _ = NewHTTP(rs.Checkers[0], rs, "")
	if r := probe(t, p); r.Outcome != Down || !strings.HasPrefix(r.Reason, "TLS handshake: ") {
		t.Errorf("chk.test: %s %q, want a refused handshake", r.Outcome, r.Reason)
	}
}
