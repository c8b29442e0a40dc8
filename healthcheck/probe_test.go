package healthcheck

import (
	"bufio"
	"context"
	"crypto/md5"
	"crypto/tls"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/directord/directord/config"
)

// testServer is a local HTTP(S) server that records what it was sent.
type testServer struct {
	*httptest.Server
	mu    sync.Mutex
	hosts []string
	snis  []string
	// conns counts the connections accepted; closed receives the address
	// of each that ended; asked counts the requests per connection.
	conns   atomic.Int64
	resumed atomic.Int64 // requests on a resumed TLS session
	// accepted receives a value for each connection the server took.
	accepted chan struct{}
	closed   chan string
	asked    map[string]int
}

const body = "this cache works\n"

func newServer(t *testing.T, tlsOn bool) *testServer {
	t.Helper()
	var mod func(*tls.Config)
	if tlsOn {
		mod = func(*tls.Config) {}
	}
	return newServerWith(t, mod)
}

// newServerWith is newServer, over TLS with mod's changes to the
// server's configuration where mod is not nil.
func newServerWith(t *testing.T, mod func(*tls.Config)) *testServer {
	t.Helper()
	tlsOn := mod != nil
	s := &testServer{closed: make(chan string, 100), accepted: make(chan struct{}, 100), asked: map[string]int{}}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hosts = append(s.hosts, r.Host)
		s.asked[r.RemoteAddr]++
		n := s.asked[r.RemoteAddr]
		s.mu.Unlock()
		if r.TLS != nil && r.TLS.DidResume {
			s.resumed.Add(1)
		}
		switch r.URL.Path {
		case "/first-only": // answers a connection's first request only
			if n > 1 {
				<-r.Context().Done()
				return
			}
			fmt.Fprint(w, body)
		case "/close":
			w.Header().Set("Connection", "close")
			fmt.Fprint(w, body)
		case "/ok":
			fmt.Fprint(w, body)
		case "/fail":
			http.Error(w, "disk hung", http.StatusInternalServerError)
		case "/missing":
			http.NotFound(w, r)
		case "/slow":
			<-r.Context().Done()
		}
	})
	s.Server = httptest.NewUnstartedServer(h)
	s.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are the point
	s.Config.ConnState = func(c net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			s.conns.Add(1)
			select {
			case s.accepted <- struct{}{}:
			default:
			}
		case http.StateClosed, http.StateHijacked:
			select {
			case s.closed <- c.RemoteAddr().String():
			default:
			}
		}
	}
	if tlsOn {
		s.TLS = &tls.Config{GetConfigForClient: func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
			s.mu.Lock()
			s.snis = append(s.snis, hello.ServerName)
			s.mu.Unlock()
			return nil, nil
		}}
		mod(s.TLS)
		s.StartTLS()
	} else {
		s.Start()
	}
	t.Cleanup(s.Close)
	return s
}

func (s *testServer) addrPort() netip.AddrPort {
	return netip.MustParseAddrPort(s.Listener.Addr().String())
}

// checkerType is the checker type named typ ("SSL_GET").
func checkerType(typ string) config.CheckerType {
	var ct config.CheckerType
	if err := ct.UnmarshalText([]byte(typ)); err != nil {
		panic(err)
	}
	return ct
}

func httpChecker(typ string, s *testServer, urls ...*config.URL) (*config.Checker, *config.RealServer) {
	c := &config.Checker{CheckerSpec: &config.CheckerSpec{Type: checkerType(typ), ConnectTimeout: 500 * time.Millisecond, HTTP: &config.HTTPCheck{URLs: urls}}}
	return c, &config.RealServer{Addr: s.addrPort()}
}

func url(path string, codes ...config.StatusRange) *config.URL {
	if codes == nil {
		codes = []config.StatusRange{{Min: 200, Max: 299}}
	}
	return &config.URL{Path: path, StatusCodes: codes}
}

// mustHTTP is NewHTTP for a test that fails if it refuses.
func mustHTTP(t testing.TB, c *config.Checker, rs *config.RealServer, ca string) *HTTP {
	t.Helper()
	p, err := NewHTTP(c, rs, ca)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func probe(t *testing.T, p Prober) Result {
	t.Helper()
	return p.Probe(context.Background())
}

func TestHTTPProbe(t *testing.T) {
	sum := md5.Sum([]byte(body))
	digest := hex.EncodeToString(sum[:])
	withDigest := func(d string) *config.URL { u := url("/ok"); u.Digest = d; return u }
	tests := []struct {
		name    string
		urls    []*config.URL
		outcome Outcome
		reason  string
	}{
		{"200", []*config.URL{url("/ok")}, Up, "all URLs answered"},
		{"500", []*config.URL{url("/fail")}, Down, "GET /fail: status 500"},
		{"every URL must answer", []*config.URL{url("/ok"), url("/fail")}, Down, "GET /fail: status 500"},
		{"status_code range takes 404", []*config.URL{url("/missing", config.StatusRange{Min: 400, Max: 404})}, Up, ""},
		{"status_code range refuses 200", []*config.URL{url("/ok", config.StatusRange{Min: 300, Max: 399})}, Down, "GET /ok: status 200"},
		{"digest", []*config.URL{withDigest(strings.ToUpper(digest))}, Up, ""},
		{"wrong digest", []*config.URL{withDigest("00000000000000000000000000000000")}, Down, "GET /ok: digest " + digest + ", want 00000000000000000000000000000000"},
		{"timeout", []*config.URL{url("/slow")}, Down, "GET /slow: timed out"},
	}
	for _, typ := range []string{"HTTP_GET", "SSL_GET"} {
		s := newServer(t, typ == "SSL_GET")
		for _, tt := range tests {
			t.Run(typ+"/"+tt.name, func(t *testing.T) {
				c, rs := httpChecker(typ, s, tt.urls...)
				p := mustHTTP(t, c, rs, "")
				r := probe(t, p)
				if r.Outcome != tt.outcome || !strings.Contains(r.Reason, tt.reason) {
					t.Errorf("%s %q, want %s %q", r.Outcome, r.Reason, tt.outcome, tt.reason)
				}
				if r.Latency <= 0 {
					t.Errorf("latency %s", r.Latency)
				}
				// Only a failure without an answer may be our own link's.
				if r.Silent != (tt.name == "timeout") {
					t.Errorf("silent %v", r.Silent)
				}
			})
		}
	}
}

func TestHTTPProbeHostAndSNI(t *testing.T) {
	s := newServer(t, true)
	c, rs := httpChecker("SSL_GET", s, url("/ok"))
	c.HTTP.VirtualHost, c.HTTP.SNIVirtualHost = "cache.example.com", "cache.example.com"
	p, _ := NewHTTP(c, rs, "")
	if r := probe(t, p); r.Outcome != Up {
		t.Fatal(r)
	}
	// Without enable_sni, no testServer name, as keepalived.
	c.HTTP.EnableSNI = true
	p, _ = NewHTTP(c, rs, "")
	probe(t, p)
	c.HTTP.SNIName = "origin.example.com"
	p, _ = NewHTTP(c, rs, "")
	probe(t, p)
	u := url("/ok")
	u.VirtualHost = "per-url.example.com"
	c.HTTP.URLs = []*config.URL{u}
	p, _ = NewHTTP(c, rs, "")
	probe(t, p)
	s.mu.Lock()
	defer s.mu.Unlock()
	if want := []string{"cache.example.com", "cache.example.com", "cache.example.com", "per-url.example.com"}; strings.Join(s.hosts, " ") != strings.Join(want, " ") {
		t.Errorf("Host headers %q, want %q", s.hosts, want)
	}
	// Every probe is a new connection: one handshake each.
	if want := []string{"", "cache.example.com", "origin.example.com", "origin.example.com"}; strings.Join(s.snis, ",") != strings.Join(want, ",") {
		t.Errorf("SNI %q, want %q", s.snis, want)
	}
}

func TestSSLProbeFailures(t *testing.T) {
	plain := newServer(t, false)
	c, rs := httpChecker("SSL_GET", plain, url("/ok"))
	p, _ := NewHTTP(c, rs, "")
	if r := probe(t, p); r.Outcome != Down || !strings.HasPrefix(r.Reason, "TLS handshake: ") {
		t.Errorf("SSL_GET to a plain HTTP server: %s %q", r.Outcome, r.Reason)
	}

	// verify_certificate: against the test testServer's own certificate as
	// the CA, and the name it is valid for.
	s := newServer(t, true)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw}), 0o644)
	c, rs = httpChecker("SSL_GET", s, url("/ok"))
	c.HTTP.VerifyCertificate = true
	c.HTTP.SNIName = "example.com"
	p = mustHTTP(t, c, rs, ca)
	if r := probe(t, p); r.Outcome != Up {
		t.Errorf("verified: %s %q", r.Outcome, r.Reason)
	}
	c.HTTP.SNIName = "other.example.net"
	p, _ = NewHTTP(c, rs, ca)
	if r := probe(t, p); r.Outcome != Down || !strings.Contains(r.Reason, "certificate") {
		t.Errorf("wrong name: %s %q", r.Outcome, r.Reason)
	}
	c.HTTP.SNIName = "example.com"
	p, _ = NewHTTP(c, rs, "") // the system's roots do not know it
	if r := probe(t, p); r.Outcome != Down || !strings.Contains(r.Reason, "certificate") {
		t.Errorf("unknown CA: %s %q", r.Outcome, r.Reason)
	}
}

// TestSSLTimeoutSaysWhereTheTimeWent: a server that accepts and never
// answers the handshake times the probe out, and the reason says the
// connection was quick and the handshake took the time: the server's
// side, not this director's.
func TestSSLTimeoutSaysWhereTheTimeWent(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() }) // held, never answered
		}
	}()
	c := &config.Checker{CheckerSpec: &config.CheckerSpec{Type: config.CheckSSLGet, ConnectTimeout: 200 * time.Millisecond,
		HTTP: &config.HTTPCheck{URLs: []*config.URL{url("/ok")}}}}
	p := mustHTTP(t, c, &config.RealServer{Addr: netip.MustParseAddrPort(ln.Addr().String())}, "")
	r := probe(t, p)
	re := regexp.MustCompile(`^TLS handshake: timed out \(connected in [0-9.]+[µm]?s, handshake [0-9.]+m?s\)$`)
	if r.Outcome != Down || !r.Silent || !re.MatchString(r.Reason) {
		t.Errorf("%s silent %v %q, want down, silent, %v", r.Outcome, r.Silent, r.Reason, re)
	}
}

// closedPort is a loopback port nobody listens on.
func closedPort(t *testing.T) netip.AddrPort {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ap := netip.MustParseAddrPort(l.Addr().String())
	l.Close()
	return ap
}

func TestTCPProbe(t *testing.T) {
	s := newServer(t, false)
	p := &TCP{Target: Target{Addr: s.addrPort(), Timeout: time.Second}}
	if r := probe(t, p); r.Outcome != Up {
		t.Errorf("listening: %v", r)
	}
	p.Target.Addr = closedPort(t)
	if r := probe(t, p); r.Outcome != Down || r.Reason != "connect: connection refused" || r.Silent {
		t.Errorf("closed: %s %q", r.Outcome, r.Reason)
	}
}

func TestLocalFaultIsUnknown(t *testing.T) {
	s := newServer(t, false)
	// bindto an address this host does not have: the director's fault.
	c, rs := httpChecker("HTTP_GET", s, url("/ok"))
	c.BindTo = netip.MustParseAddr("192.0.2.99")
	p, _ := NewHTTP(c, rs, "")
	if r := probe(t, p); r.Outcome != Unknown || !strings.Contains(r.Reason, "cannot assign requested address") {
		t.Errorf("HTTP from a missing address: %s %q", r.Outcome, r.Reason)
	}
	tp := &TCP{Target: TargetOf(c, rs)}
	if r := probe(t, tp); r.Outcome != Unknown {
		t.Errorf("TCP from a missing address: %s %q", r.Outcome, r.Reason)
	}
}

func TestMiscProbe(t *testing.T) {
	dir := t.TempDir()
	sh := func(code string) *config.Script {
		f := filepath.Join(dir, fmt.Sprintf("s%d.sh", len(code)+int(time.Now().UnixNano()%1000000)))
		os.WriteFile(f, []byte("#!/bin/sh\n"+code+"\n"), 0o755)
		return &config.Script{Command: f, Args: []string{f}}
	}
	tests := []struct {
		name    string
		code    string
		dynamic bool
		outcome Outcome
		weight  int
		reason  string
	}{
		{"exit 0", "exit 0", false, Up, -1, "exit 0"},
		{"exit 1", "exit 1", false, Down, -1, "exit 1"},
		{"exit 7 without misc_dynamic", "exit 7", false, Down, -1, "exit 7"},
		{"dynamic exit 1", "exit 1", true, Down, -1, "exit 1"},
		{"dynamic exit 2: weight 0", "exit 2", true, Up, 0, "exit 2: weight 0"},
		{"dynamic exit 12: weight 10", "exit 12", true, Up, 10, "exit 12: weight 10"},
		{"timeout", "sleep 5", false, Down, -1, "timed out after 200ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A script that ends at once gets a timeout only a hang
			// reaches: starting /bin/sh on a busy host under -race took
			// more than 200 ms ("timed out after 200ms" for "exit 1").
			// The timeout's own case keeps 200 ms against a 5 s sleep.
			timeout := 10 * time.Second
			if tt.name == "timeout" {
				timeout = 200 * time.Millisecond
			}
			p := &Misc{Script: sh(tt.code), Timeout: timeout, Dynamic: tt.dynamic}
			r := probe(t, p)
			if r.Outcome != tt.outcome || r.Weight != tt.weight || r.Reason != tt.reason {
				t.Errorf("%s weight %d %q, want %s %d %q", r.Outcome, r.Weight, r.Reason, tt.outcome, tt.weight, tt.reason)
			}
		})
	}
	// enable_script_security refuses a script under /tmp.
	c := &config.Checker{CheckerSpec: &config.CheckerSpec{Type: config.CheckMisc, Misc: &config.MiscCheck{Script: sh("exit 0")}}}
	if _, err := NewMisc(c, &config.Global{EnableScriptSecurity: true}); err == nil && os.Geteuid() == 0 {
		t.Error("enable_script_security took a script under /tmp")
	}
	if _, err := NewMisc(c, &config.Global{}); err != nil {
		t.Error(err)
	}
}

// TestTLSSessionsSharedPerTarget: a Runner's SSL_GET checkers of the same
// settings share one TLS configuration, and each target still resumes its
// own session, by address, or by target where a server name is sent.
// Each test server has its own ticket keys: a session taken for another
// target would not resume.
func TestTLSSessionsSharedPerTarget(t *testing.T) {
	for _, sni := range []bool{false, true} {
		t.Run(fmt.Sprintf("enable_sni=%v", sni), func(t *testing.T) {
			a, b := newServer(t, true), newServer(t, true)
			ps := sslChecks(t, "", func(h *config.HTTPCheck) { h.EnableSNI, h.SNIName = sni, "cache.example" }, a, b)
			pa, pb := ps[0], ps[1]
			if shared := pa.TLS == pb.TLS; shared == sni {
				t.Errorf("one TLS configuration for both targets: %v, want %v", shared, !sni)
			}
			for range 2 {
				for _, p := range []*HTTP{pa, pb} {
					if res := probe(t, p); res.Outcome != Up {
						t.Fatal(res)
					}
				}
			}
			if a.resumed.Load() != 1 || b.resumed.Load() != 1 {
				t.Errorf("sessions resumed: %d and %d, want 1 each (the second probe of each target)", a.resumed.Load(), b.resumed.Load())
			}
			for _, s := range []*testServer{a, b} {
				s.mu.Lock()
				names := strings.Join(s.snis, ",")
				s.mu.Unlock()
				if want := map[bool]string{false: ",", true: "cache.example,cache.example"}[sni]; names != want {
					t.Errorf("server names sent %q, want %q", names, want)
				}
			}
		})
	}
}

// BenchmarkSSLProbe is one SSL_GET probe against a local HTTPS server
// (both sides in this process): a new connection, a resumed TLS session.
func BenchmarkSSLProbe(b *testing.B) {
	s := &testServer{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, body)
	}))
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.StartTLS()
	defer s.Close()
	c, rs := httpChecker("SSL_GET", s, url("/ok"))
	p, err := NewHTTP(c, rs, "")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if r := p.Probe(context.Background()); r.Outcome != Up {
			b.Fatal(r)
		}
	}
}

func TestTCPProbeFixedBindPort(t *testing.T) {
	s := newServer(t, false)
	free := closedPort(t)
	p := &TCP{Target: Target{Addr: s.addrPort(), Timeout: time.Second,
		Bind: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), free.Port())}}
	for i := range 3 {
		if r := probe(t, p); r.Outcome != Up {
			t.Fatalf("probe %d from a fixed bind_port: %v", i, r)
		}
	}
}

func TestNetUnreachableIsSilentNotLocal(t *testing.T) {
	r := NewClock().failure(time.Now(), "connect", &net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ENETUNREACH)})
	if r.Outcome != Down || !r.Silent {
		t.Errorf("ENETUNREACH: %s silent %v, want down and silent (EgressDown decides)", r.Outcome, r.Silent)
	}
}

// TestProbeBindPortAlone: a bind_port without bindto connects from that
// port, from any address.
func TestProbeBindPortAlone(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	from := make(chan netip.AddrPort, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		from <- netip.MustParseAddrPort(c.RemoteAddr().String())
		c.Close()
	}()
	free := closedPort(t)
	p := &TCP{Target: Target{Addr: netip.MustParseAddrPort(ln.Addr().String()), Timeout: time.Second,
		Bind: netip.AddrPortFrom(netip.Addr{}, free.Port())}}
	if r := probe(t, p); r.Outcome != Up {
		t.Fatalf("probe from bind_port %d: %v", free.Port(), r)
	}
	if got := <-from; got.Port() != free.Port() {
		t.Errorf("connected from %v, want port %d", got, free.Port())
	}
}

// takeSlots takes every slot of handshakes; the function it returns
// gives them back, once, and is also a cleanup of t.
func takeSlots(t *testing.T, handshakes chan struct{}) func() {
	for range cap(handshakes) {
		handshakes <- struct{}{}
	}
	var once sync.Once
	give := func() {
		once.Do(func() {
			for range cap(handshakes) {
				<-handshakes
			}
		})
	}
	t.Cleanup(give)
	return give
}

// TestHandshakeQueueIsNotTheServersTime: a probe that waits for a
// handshake slot (this director's CPU) longer than connect_timeout is not
// failed for it: its time counts from when it gets the slot. It waits
// before it connects: the server sees no connection while the slots are
// all taken (they are given back after three connect_timeouts).
func TestHandshakeQueueIsNotTheServersTime(t *testing.T) {
	s := newServer(t, true)
	c, rs := httpChecker("SSL_GET", s, url("/ok"))
	c.ConnectTimeout = 100 * time.Millisecond
	p := mustHTTP(t, c, rs, "")
	give := takeSlots(t, p.handshakes)
	var given atomic.Bool
	release := time.AfterFunc(3*c.ConnectTimeout, func() { given.Store(true); give() })
	defer release.Stop()
	early := make(chan bool, 1)
	go func() {
		<-s.accepted
		early <- !given.Load()
	}()
	r := probe(t, p)
	select {
	case e := <-early:
		if e {
			t.Error("the probe connected before it had a handshake slot")
		}
	case <-time.After(10 * time.Second):
		t.Error("the server saw no connection")
	}
	if r.Outcome != Up {
		t.Errorf("after waiting for a slot: %s %q", r.Outcome, r.Reason)
	}
	if r.Latency < 3*c.ConnectTimeout {
		t.Errorf("latency %v: the probe did not wait for a slot", r.Latency)
	}
}

// TestHandshakeSlotWaits: with every slot taken, a probe waits for one as
// long as it takes (an overloaded director checks late) and opens no
// connection meanwhile; the checks stopping end the wait. A check whose
// last connection failed connects first and then waits.
func TestHandshakeSlotWaits(t *testing.T) {
	s := newServer(t, true)
	c, rs := httpChecker("SSL_GET", s, url("/ok"))
	p := mustHTTP(t, c, rs, "")
	give := takeSlots(t, p.handshakes)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Result)
	go func() { done <- p.Probe(ctx) }()
	select {
	case r := <-done:
		t.Fatalf("a probe without a slot returned: %s %q", r.Outcome, r.Reason)
	case <-s.accepted:
		t.Fatal("a probe without a slot connected")
	case <-time.After(2 * c.ConnectTimeout):
	}
	cancel()
	select {
	case r := <-done:
		if r.Outcome == Up {
			t.Errorf("a stopped probe: %s %q", r.Outcome, r.Reason)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("stopping did not end the wait for a slot")
	}

	// Waited is measured from readings taken before the probe calls
	// waiting: from that call to give() is a lower bound a busy machine
	// cannot break (the accept the server sees may come earlier).
	waiting := make(chan struct{}, 1)
	p.waiting = func() { waiting <- struct{}{} }
	p.unreachable = true
	go func() { done <- p.Probe(context.Background()) }()
	select {
	case <-s.accepted:
	case <-time.After(10 * time.Second):
		t.Fatal("the check whose last connection failed did not connect first")
	}
	select {
	case <-waiting:
	case r := <-done:
		t.Fatalf("connected, it returned without a slot: %s %q", r.Outcome, r.Reason)
	}
	began := time.Now()
	select {
	case r := <-done:
		t.Fatalf("connected, it returned without a slot: %s %q", r.Outcome, r.Reason)
	case <-time.After(2 * c.ConnectTimeout):
	}
	held := time.Since(began)
	give()
	select {
	case r := <-done:
		if r.Outcome != Up {
			t.Errorf("once given a slot: %s %q", r.Outcome, r.Reason)
		}
		if r.Waited < held {
			t.Errorf("waited at least %v for its slot, says %v", held, r.Waited)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the probe did not end once given a slot")
	}
	if n := s.conns.Load(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
	if n := len(p.handshakes); n != 0 {
		t.Errorf("%d handshake slots still taken", n)
	}

	// Every slot taken, a check that connected last time waits before
	// connecting, and says how long.
	give = takeSlots(t, p.handshakes)
	go func() { done <- p.Probe(context.Background()) }()
	select {
	case <-waiting:
	case r := <-done:
		t.Fatalf("returned without a slot: %s %q", r.Outcome, r.Reason)
	}
	began = time.Now()
	select {
	case r := <-done:
		t.Fatalf("returned without a slot: %s %q", r.Outcome, r.Reason)
	case <-time.After(2 * c.ConnectTimeout):
	}
	held = time.Since(began)
	give()
	select {
	case r := <-done:
		if r.Outcome != Up || r.Waited < held {
			t.Errorf("once given a slot: %s %q, waited %v, want at least %v", r.Outcome, r.Reason, r.Waited, held)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the probe did not end once given a slot")
	}
}

// TestHTTPReuseConnection: with reuse_connection a passing probe's
// connection carries the next probes, until it is too old; without it,
// each probe opens its own, as keepalived.
func TestHTTPReuseConnection(t *testing.T) {
	for _, typ := range []string{"HTTP_GET", "SSL_GET"} {
		for _, tt := range []struct {
			name  string
			reuse time.Duration
			path  string
			conns int64
		}{
			{"off", 0, "/ok", 5},
			{"on", time.Hour, "/ok", 1},
			{"too old at once", time.Nanosecond, "/ok", 5},
			{"server says close", time.Hour, "/close", 5},
		} {
			t.Run(typ+"/"+tt.name, func(t *testing.T) {
				s := newServer(t, typ == "SSL_GET")
				c, rs := httpChecker(typ, s, url(tt.path))
				c.HTTP.ReuseConnection = tt.reuse
				p := mustHTTP(t, c, rs, "")
				defer p.Close()
				for i := range 5 {
					if r := probe(t, p); r.Outcome != Up {
						t.Fatalf("probe %d: %s %q", i, r.Outcome, r.Reason)
					}
				}
				if n := s.conns.Load(); n != tt.conns {
					t.Errorf("%d connections for 5 probes, want %d", n, tt.conns)
				}
			})
		}
	}
}

// keeping makes a server and a prober of it with reuse_connection (an
// hour), closed with the test; timeout, if not 0, is its connect_timeout.
func keeping(t *testing.T, typ string, timeout time.Duration, urls ...*config.URL) (*testServer, *config.Checker, *HTTP) {
	t.Helper()
	s := newServer(t, typ == "SSL_GET")
	c, rs := httpChecker(typ, s, urls...)
	if timeout > 0 {
		c.ConnectTimeout = timeout
	}
	c.HTTP.ReuseConnection = time.Hour
	p := mustHTTP(t, c, rs, "")
	t.Cleanup(func() { p.Close() })
	return s, c, p
}

// TestHTTPReuseTwoURLs: the URLs of a probe share the kept connection.
func TestHTTPReuseTwoURLs(t *testing.T) {
	s, _, p := keeping(t, "SSL_GET", 0, url("/ok"), url("/missing", config.StatusRange{Min: 404, Max: 404}))
	for range 3 {
		if r := probe(t, p); r.Outcome != Up {
			t.Fatalf("%s %q", r.Outcome, r.Reason)
		}
	}
	if n := s.conns.Load(); n != 1 {
		t.Errorf("%d connections for 3 probes of 2 URLs, want 1", n)
	}
}

// TestHTTPReuseKeptConnectionFails: a kept connection that fails proves
// nothing of the server, which is asked again on a new connection within
// the same probe: closed by the server while idle, or hung (the probe
// then takes up to two connect_timeouts). An answer that fails (status
// 500) counts as it came, and its connection is not kept.
func TestHTTPReuseKeptConnectionFails(t *testing.T) {
	t.Run("closed while idle", func(t *testing.T) {
		s, _, p := keeping(t, "SSL_GET", 0, url("/ok"))
		probe(t, p)
		s.CloseClientConnections()
		<-s.closed
		if r := probe(t, p); r.Outcome != Up {
			t.Fatalf("after the server closed the kept connection: %s %q", r.Outcome, r.Reason)
		}
		if n := s.conns.Load(); n != 2 {
			t.Errorf("%d connections, want 2", n)
		}
	})
	t.Run("hung", func(t *testing.T) {
		s, c, p := keeping(t, "HTTP_GET", 0, url("/first-only"))
		probe(t, p)
		r := probe(t, p)
		if r.Outcome != Up {
			t.Fatalf("kept connection hung, a new one answers: %s %q", r.Outcome, r.Reason)
		}
		if r.Latency < c.ConnectTimeout {
			t.Errorf("latency %s: the kept connection was not waited for", r.Latency)
		}
		if n := s.conns.Load(); n != 2 {
			t.Errorf("%d connections, want 2", n)
		}
	})
	t.Run("hung for good", func(t *testing.T) {
		// The bound reuse_connection adds: the first failing probe waits
		// for the kept connection, then for a new one (two
		// connect_timeouts); the next, on a new connection, for one.
		u := url("/ok")
		_, c, p := keeping(t, "HTTP_GET", 200*time.Millisecond, u)
		probe(t, p)
		u.Path = "/slow"
		for i, want := range []time.Duration{2 * c.ConnectTimeout, c.ConnectTimeout} {
			r := probe(t, p)
			if r.Outcome != Down || r.Reason != "GET /slow: timed out" {
				t.Fatalf("probe %d: %s %q, want down: timed out", i, r.Outcome, r.Reason)
			}
			if r.Latency < want || r.Latency > want+c.ConnectTimeout/2 {
				t.Errorf("probe %d took %s, want %s", i, r.Latency, want)
			}
		}
	})
	t.Run("second URL hangs", func(t *testing.T) {
		// A connection used a moment ago by the probe's first URL is not
		// idle: its failure counts, and each probe takes one
		// connect_timeout, not two.
		_, c, p := keeping(t, "HTTP_GET", 200*time.Millisecond, url("/ok"), url("/slow"))
		for i := range 2 {
			r := probe(t, p)
			if r.Outcome != Down || r.Reason != "GET /slow: timed out" {
				t.Fatalf("probe %d: %s %q, want down: timed out", i, r.Outcome, r.Reason)
			}
			if r.Latency > c.ConnectTimeout*3/2 {
				t.Errorf("probe %d took %s, want about %s", i, r.Latency, c.ConnectTimeout)
			}
		}
	})
	t.Run("status 500", func(t *testing.T) {
		u := url("/ok")
		s, _, p := keeping(t, "HTTP_GET", 0, u)
		probe(t, p)
		u.Path = "/fail"
		if r := probe(t, p); r.Outcome != Down || r.Reason != "GET /fail: status 500" {
			t.Fatalf("%s %q, want down: status 500", r.Outcome, r.Reason)
		}
		u.Path = "/ok"
		probe(t, p)
		if n := s.conns.Load(); n != 2 {
			t.Errorf("%d connections, want 2: a failed answer's connection is not kept", n)
		}
	})
}

// TestHTTPReuseClosedAtStop: the runner closes the kept connections when
// its checks stop.
func TestHTTPReuseClosedAtStop(t *testing.T) {
	s := newServer(t, true)
	c, rs := httpChecker("SSL_GET", s, url("/ok"))
	c.HTTP.ReuseConnection = time.Hour
	c.DelayLoop = 10 * time.Millisecond
	cfg := &config.Config{VirtualServers: []*config.VirtualServer{{RealServers: []*config.RealServer{rs}}}}
	rs.Checkers = []*config.Checker{c}
	rs.Weight = 1
	ups := make(chan Result, 10)
	r := newRunner(t, cfg, func(Event) {}, nil)
	r.OnResult = func(_ *Check, res Result) {
		select {
		case ups <- res:
		default:
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	for range 3 {
		if res := <-ups; res.Outcome != Up {
			t.Fatalf("%s %q", res.Outcome, res.Reason)
		}
	}
	if n := s.conns.Load(); n != 1 {
		t.Errorf("%d connections for 3 probes, want 1", n)
	}
	select {
	case a := <-s.closed:
		t.Fatalf("connection %s closed while the checks run", a)
	default:
	}
	cancel()
	<-done
	select {
	case <-s.closed: // the kept connection, closed by Run's end
	case <-time.After(10 * time.Second):
		t.Fatal("the kept connection is still open 10 s after the checks stopped")
	}
}

// TestHTTPReuseStaleAnswerWhileIdle: a server that writes something
// unasked on an idle kept connection (a 408 before closing it, as some
// do) is not judged by it: the next probe opens a new connection.
func TestHTTPReuseStaleAnswerWhileIdle(t *testing.T) {
	said := make(chan struct{}, 10)
	p, conns := rawServerProber(t, func(c net.Conn) {
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n")
		io.WriteString(c, "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n")
		said <- struct{}{}
	})
	for i := range 3 {
		if r := probe(t, p); r.Outcome != Up {
			t.Fatalf("probe %d: %s %q: the 408 said while idle was taken for the answer", i, r.Outcome, r.Reason)
		}
		<-said
	}
	if n := conns.Load(); n != 3 {
		t.Errorf("%d connections for 3 probes, want 3", n)
	}
}

// rawServerProber serves each connection to a listener on loopback with
// serve (which closes nothing: the connection is closed after it), and
// returns an HTTP_GET prober of it with reuse_connection, closed with the
// test, and the count of connections accepted.
func rawServerProber(t *testing.T, serve func(net.Conn)) (*HTTP, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	conns := new(atomic.Int64)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() {
				defer c.Close()
				serve(c)
			}()
		}
	}()
	c := &config.Checker{CheckerSpec: &config.CheckerSpec{Type: config.CheckHTTPGet, ConnectTimeout: 500 * time.Millisecond,
		HTTP: &config.HTTPCheck{URLs: []*config.URL{url("/")}, ReuseConnection: time.Hour}}}
	p := mustHTTP(t, c, &config.RealServer{Addr: netip.MustParseAddrPort(ln.Addr().String())}, "")
	t.Cleanup(func() { p.Close() })
	return p, conns
}

// TestHTTPReuseStopping: a probe on a kept connection when the checks are
// stopping (ctx ended) returns at once, rather than after connect_timeout.
func TestHTTPReuseStopping(t *testing.T) {
	_, c, p := keeping(t, "SSL_GET", 0, url("/ok"))
	ctx, cancel := context.WithCancel(context.Background())
	if r := p.Probe(ctx); r.Outcome != Up {
		t.Fatalf("%s %q", r.Outcome, r.Reason)
	}
	cancel()
	if r := p.Probe(ctx); r.Latency > c.ConnectTimeout/2 {
		t.Errorf("a probe after the checks stopped took %s (%s %q)", r.Latency, r.Outcome, r.Reason)
	}
}

// TestHTTPReuseStoppedInUse: the checks stopping while a probe waits on
// a kept connection (the server answered the first request and hangs on
// the second) end that probe at once, not after its connect_timeout: a
// kept connection is watched while in use, though not while idle.
func TestHTTPReuseStoppedInUse(t *testing.T) {
	asked := make(chan struct{}, 1)
	p, conns := rawServerProber(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n")
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		asked <- struct{}{}
		io.Copy(io.Discard, c) // hangs until the prober closes
	})
	p.Target.Timeout = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if r := p.Probe(ctx); r.Outcome != Up {
		t.Fatalf("%s %q", r.Outcome, r.Reason)
	}
	done := make(chan Result)
	go func() { done <- p.Probe(ctx) }()
	<-asked
	cancel()
	select {
	case r := <-done:
		if r.Outcome == Up {
			t.Errorf("the hung probe passed: %q", r.Reason)
		}
	case <-time.After(time.Minute):
		t.Fatal("the probe on the kept connection still waits a minute after the checks stopped")
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections, want 1 (the second probe on the kept one)", n)
	}
}

// TestHTTPReuseNotWithBytesAfterTheAnswer: an answer followed at once by
// more than it (here a 408, in the same write) leaves its connection
// unkept, though the server keeps it open: those bytes would answer the
// next request.
func TestHTTPReuseNotWithBytesAfterTheAnswer(t *testing.T) {
	p, conns := rawServerProber(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			if _, err := http.ReadRequest(br); err != nil {
				return
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\nHTTP/1.1 408 Request Timeout\r\n\r\n")
		}
	})
	for i := range 3 {
		if r := probe(t, p); r.Outcome != Up {
			t.Fatalf("probe %d: %s %q", i, r.Outcome, r.Reason)
		}
	}
	if n := conns.Load(); n != 3 {
		t.Errorf("%d connections for 3 probes, want 3: an answer with bytes after it kept its connection", n)
	}
}

// TestCAReadOnce: SSL_GET checkers that verify against the same CA file
// share its pool, read once, though each target has its TLS
// configuration (its sessions); and their handshakes verify.
func TestCAReadOnce(t *testing.T) {
	a, b := newServer(t, true), newServer(t, true)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	// httptest's servers share one certificate: it is the CA of both.
	os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: a.Certificate().Raw}), 0o644)
	ps := sslChecks(t, ca, func(h *config.HTTPCheck) { h.VerifyCertificate, h.SNIName = true, "example.com" }, a, b)
	pa, pb := ps[0], ps[1]
	if pa.TLS == pb.TLS {
		t.Error("one TLS configuration for two targets with verify_certificate")
	}
	if pa.TLS.RootCAs == nil || pa.TLS.RootCAs != pb.TLS.RootCAs {
		t.Error("the CA file read for each target")
	}
	if pa.TLS.Rand != tlsRand {
		t.Error("TLS reads the system's random source for its hello")
	}
	for _, p := range []*HTTP{pa, pb} {
		if res := probe(t, p); res.Outcome != Up {
			t.Errorf("verified against the shared CA: %s %q", res.Outcome, res.Reason)
		}
	}
}

// sslChecks makes a Runner of one SSL_GET checker of /ok for each of
// servers, set up by set, with the global SSL block's CA ca (if not
// ""), and returns their probers.
func sslChecks(t *testing.T, ca string, set func(*config.HTTPCheck), servers ...*testServer) []*HTTP {
	t.Helper()
	cfg := &config.Config{VirtualServers: []*config.VirtualServer{{}}}
	if ca != "" {
		cfg.SSL = &config.SSL{CA: ca}
	}
	vs := cfg.VirtualServers[0]
	for _, s := range servers {
		c, rs := httpChecker("SSL_GET", s, url("/ok"))
		set(c.HTTP)
		rs.Checkers = []*config.Checker{c}
		vs.RealServers = append(vs.RealServers, rs)
	}
	r := newRunner(t, cfg, func(Event) {}, nil)
	var ps []*HTTP
	for _, c := range r.checks {
		ps = append(ps, c.Prober.(*HTTP))
	}
	return ps
}
