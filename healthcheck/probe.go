package healthcheck

import (
	"bufio"
	"cmp"
	"context"
	crand "crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/directord/directord/config"
)

// Prober runs one probe of a real server. A prober may keep a connection
// between probes (reuse_connection), and then is an io.Closer too: the
// Runner closes it when its checks stop, and calls Probe with the same
// ctx, one probe at a time.
type Prober interface {
	Probe(ctx context.Context) Result
}

// Target is where a checker connects, and from where.
type Target struct {
	Addr    netip.AddrPort // connect_ip/connect_port, else the real server's
	Bind    netip.AddrPort // bindto/bind_port; zero: the kernel's choice
	Timeout time.Duration  // connect_timeout: each step's limit (TCP_CHECK: the connection's)
	Mark    uint32         // fwmark: SO_MARK, for policy routing
	Dev     string         // bind_if: SO_BINDTODEVICE
}

// TargetOf resolves a checker's target against its real server.
func TargetOf(c *config.Checker, rs *config.RealServer) Target {
	t := Target{Addr: rs.Addr, Timeout: c.ConnectTimeout}
	if c.ConnectIP.IsValid() {
		t.Addr = netip.AddrPortFrom(c.ConnectIP, t.Addr.Port())
	}
	if c.ConnectPort != 0 {
		t.Addr = netip.AddrPortFrom(t.Addr.Addr(), c.ConnectPort)
	}
	if c.BindTo.IsValid() || c.BindPort != 0 {
		t.Bind = netip.AddrPortFrom(c.BindTo, c.BindPort)
	}
	if t.Timeout <= 0 {
		t.Timeout = 5 * time.Second
	}
	t.Mark, t.Dev = c.FWMark, c.BindIf
	return t
}

// closeNow closes a probe's connection with a reset (linger 0, which
// rawConn's Close sets), as keepalived does, so that no TIME_WAIT holds a
// fixed bind_port; TLS without its closing alert, which the reset makes
// moot.
func closeNow(c net.Conn) {
	if s, ok := c.(*stoppable); ok {
		s.stop()
	}
	socket(c).Close()
}

// socket is the TCP connection under a probe's connection: under its
// context watch (stoppable) and its TLS, if any.
func socket(c net.Conn) net.Conn {
	if s, ok := c.(*stoppable); ok {
		c = s.Conn
	}
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	return c
}

// LocalFault tells whether err is the director's own fault rather than
// the real server's: no descriptor, no memory or buffer, no such local
// address, its own network down, its own firewall (EPERM). Such a probe
// proves nothing. (No route, ENETUNREACH, may be a remote router's answer:
// it is a silent failure that EgressDown judges.)
func LocalFault(err error) bool {
	for _, e := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM,
		syscall.ENETDOWN, syscall.EADDRNOTAVAIL, syscall.EADDRINUSE, syscall.EPERM} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// failure is the Result of a failed probe: Unknown for a local fault,
// else Down.
func (c *Clock) failure(start time.Time, what string, err error) Result {
	o := Down
	if LocalFault(err) {
		o = Unknown
	}
	silent := errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH)
	return c.done(Result{Outcome: o, Reason: what + ": " + short(err), Weight: -1, Silent: silent}, start)
}

// short is an error without the addresses Go repeats in it.
func short(err error) string {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return "timed out"
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		var se *os.SyscallError
		if errors.As(oe.Err, &se) {
			return se.Err.Error()
		}
		return oe.Err.Error()
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return "timed out"
	}
	return err.Error()
}

// TCP is TCP_CHECK: the connection is accepted.
type TCP struct {
	clocked
	Target Target
}

// Probe connects and closes.
func (p *TCP) Probe(ctx context.Context) Result {
	start := p.clock.Now()
	c, err := p.Target.dial(ctx, start.Add(p.Target.Timeout))
	if err != nil {
		return p.clock.failure(start, "connect", err)
	}
	closeNow(c)
	return p.clock.done(Result{Outcome: Up, Reason: "connected", Weight: -1}, start)
}

// maxBody bounds what an HTTP check reads of a body (keepalived reads
// to the end, however long): a longer body is judged on what came, and
// fails its digest (a keepalived digest of more than that cannot match).
const maxBody = 16 << 20

// HTTP is HTTP_GET and SSL_GET: every URL answers with an accepted status
// and, where one is given, the body's MD5 digest. Each probe opens new
// connections, as keepalived does, so that the check proves the server
// accepts them; TLS sessions are resumed, which keeps the handshakes cheap.
// With reuse_connection (a directord extension) a passing probe keeps its
// connection for the next ones, up to that age.
type HTTP struct {
	clocked
	Target Target
	TLS    *tls.Config // the first URL's; nil for HTTP_GET
	URLs   []*config.URL
	// tlsURL is each URL's TLS configuration (SSL_GET): the server
	// name sent may be the URL's own virtualhost.
	tlsURL []*tls.Config
	Host   string        // the Host header unless a URL has its own virtualhost
	proto  string        // HTTP/1.0, or HTTP/1.1 with http_protocol 1.1
	close  bool          // ask for Connection: close (http_protocol 1.0C and 1.1)
	reuse  time.Duration // reuse_connection: 0 for a connection per URL and probe
	kept   *kept         // the connection the last passing probe kept; probes of a check run one at a time
	probes uint64        // probes so far, to tell a connection idle since an earlier probe
	// unreachable: the last connection failed; the next connects before
	// it takes a handshake slot (see dial).
	unreachable bool
	queued      time.Duration // this probe's wait for handshake slots
	// handshakes bounds the TLS handshakes in flight, across the checks
	// of a Runner (SSL_GET).
	handshakes chan struct{}
	// waiting, when set (by tests), is called as the probe starts to wait
	// for a slot, after the readings its Waited is measured from.
	waiting func()
}

// NewHTTP makes the prober of an HTTP_GET or SSL_GET checker; ca is the
// global SSL block's CA file, for verify_certificate.
func NewHTTP(c *config.Checker, rs *config.RealServer, ca string) (*HTTP, error) {
	return newHTTP(c, rs, ca, nil)
}

// newHTTP is NewHTTP with the TLS settings of a Runner's checks shared
// (tlsShare); nil: the prober's own.
func newHTTP(c *config.Checker, rs *config.RealServer, ca string, share *tlsShare) (*HTTP, error) {
	t := TargetOf(c, rs)
	h := c.HTTP
	p := &HTTP{Target: t, URLs: h.URLs, Host: h.VirtualHost, reuse: h.ReuseConnection}
	if p.Host == "" {
		p.Host = rs.VirtualHost()
	}
	if c.Type == config.CheckSSLGet {
		if share == nil {
			// The prober's own, so that its URLs of one server name
			// share a configuration (and a kept connection).
			share = newTLSShare(nil, 0)
		}
		p.handshakes = share.handshakes
		for _, u := range h.URLs {
			k := tlsKey{verify: h.VerifyCertificate, dev: t.Dev, mark: t.Mark, from: t.Bind.Addr()}
			name, err := serverName(h, u, p.Host)
			if err != nil {
				return nil, err
			}
			if name != "" {
				k.name = name
				// TLS keeps a session by server name where there is one,
				// else by address: one per target either way.
				k.target = t.Addr
			}
			if h.VerifyCertificate {
				k.ca = ca
			}
			cfg, err := share.config(k)
			if err != nil {
				return nil, err
			}
			p.tlsURL = append(p.tlsURL, cfg)
		}
		if len(p.tlsURL) > 0 {
			p.TLS = p.tlsURL[0]
		}
	}
	p.proto = "HTTP/1.0"
	if h.HTTPProtocol == "1.1" {
		p.proto = "HTTP/1.1"
	}
	p.close = h.HTTPProtocol == "1.1" || h.HTTPProtocol == "1.0C"
	return p, nil
}

// serverName is the name an SSL_GET checker's TLS client gives for u:
// with enable_sni, the name it sends, as keepalived's ssl_connect picks
// it (the URL's virtualhost, else the checker's, else the virtual
// server's: not the real server's, which only the Host header takes),
// unless sni_name (a directord extension) names it; with
// verify_certificate (a directord extension) the name the certificate
// must be valid for, which Go then sends too: the same, else sni_name,
// else the Host header's virtual host (host). "" for none.
func serverName(h *config.HTTPCheck, u *config.URL, host string) (string, error) {
	name := ""
	if h.EnableSNI {
		name = cmp.Or(h.SNIName, u.VirtualHost, h.SNIVirtualHost)
	}
	if h.VerifyCertificate {
		name = cmp.Or(name, h.SNIName, u.VirtualHost, host)
		if name == "" {
			return "", errors.New("verify_certificate needs a server name: sni_name or virtualhost")
		}
	}
	return name, nil
}

// tlsKey is what tells SSL_GET checkers' TLS settings apart.
type tlsKey struct {
	verify bool
	name   string         // the server name sent (enable_sni, verify_certificate)
	target netip.AddrPort // with a name: the sessions are kept by it
	ca     string         // verify_certificate's CA file
	// The path to the server: the same address through another
	// interface, mark or source may be another server (VRFs, overlapping
	// ranges), whose sessions are its own.
	dev  string
	mark uint32
	from netip.Addr
}

// tlsShare holds one TLS configuration, and so one session cache, for
// the SSL_GET checkers of the same settings. At 10,000 checks a
// configuration of each checker's own was a tenth of the checks' memory.
// It reads each CA file once, however many configurations verify
// against it (one per target with verify_certificate).
type tlsShare struct {
	configs map[tlsKey]*tls.Config
	pools   map[string]*x509.CertPool
	// cert is the global SSL block's certificate and key, offered to
	// every real server that asks for a client certificate, as
	// keepalived's one SSL context does.
	cert *tls.Certificate
	// clock is the checks' (Config.Time); handshakes bounds their TLS
	// handshakes in flight.
	clock      *Clock
	handshakes chan struct{}
}

// newTLSShare is a share of the checks of clock, at most handshakes TLS
// handshakes at a time (0: DefaultHandshakes).
func newTLSShare(clock *Clock, handshakes int) *tlsShare {
	if handshakes <= 0 {
		handshakes = DefaultHandshakes
	}
	return &tlsShare{configs: map[tlsKey]*tls.Config{}, pools: map[string]*x509.CertPool{},
		clock: clock, handshakes: make(chan struct{}, handshakes)}
}

// ClientCertificate reads the SSL block's certificate (a PEM chain, the
// client's own first) and key (PEM, decrypted with password if it is
// encrypted), as keepalived loads them into its SSL context. It returns
// none, with a warning, where the block has one of the two without the
// other: keepalived then offers no certificate either. Its diagnostics
// name the block's file:line; none are errors when it returns a
// certificate.
func ClientCertificate(ssl *config.SSL) (*tls.Certificate, config.Diagnostics) {
	if ssl == nil || ssl.Certificate == "" && ssl.Key == "" {
		return nil, nil
	}
	diag := func(sev config.Severity, format string, args ...any) config.Diagnostics {
		return config.Diagnostics{{Pos: ssl.Pos, Severity: sev, Keyword: "SSL", Message: fmt.Sprintf(format, args...)}}
	}
	if ssl.Certificate == "" || ssl.Key == "" {
		return nil, diag(config.Warning, "certificate and key go together: no client certificate is offered, as keepalived offers none")
	}
	certPEM, err := os.ReadFile(ssl.Certificate)
	if err != nil {
		return nil, diag(config.Error, "certificate: %v", err)
	}
	keyPEM, err := os.ReadFile(ssl.Key)
	if err != nil {
		return nil, diag(config.Error, "key: %v", err)
	}
	keyPEM, err = decryptKey(keyPEM, ssl.Password)
	if err != nil {
		return nil, diag(config.Error, "key %s: %v", ssl.Key, err)
	}
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, diag(config.Error, "certificate %s and key %s: %v", ssl.Certificate, ssl.Key, err)
	}
	return &c, nil
}

// Diagnostics are the faults of cfg that only reading its files shows,
// for directord -t and the start: the SSL block's certificate and key.
func Diagnostics(cfg *config.Config) config.Diagnostics {
	if cfg == nil {
		return nil
	}
	_, diags := ClientCertificate(cfg.SSL)
	return diags
}

// decryptKey is the PEM key file's first private key, decrypted with
// password where it is encrypted the way OpenSSL's "traditional" format
// is (Proc-Type: 4,ENCRYPTED). An encrypted PKCS #8 key ("ENCRYPTED
// PRIVATE KEY") is an error: Go's library cannot decrypt it.
func decryptKey(keyPEM []byte, password string) ([]byte, error) {
	rest := keyPEM
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return nil, errors.New("no private key in PEM")
		}
		switch {
		case b.Type == "ENCRYPTED PRIVATE KEY":
			return nil, errors.New("an encrypted PKCS #8 key is not supported by directord: decrypt it (openssl pkey -in KEY -out PLAIN) or encrypt it in the traditional format (openssl pkey -traditional -aes256)")
		case !strings.HasSuffix(b.Type, "PRIVATE KEY"):
			continue
		//lint:ignore SA1019 OpenSSL's traditional encrypted keys, as keepalived reads them
		case !x509.IsEncryptedPEMBlock(b):
			return pem.EncodeToMemory(b), nil
		case password == "":
			return nil, errors.New("the key is encrypted and the SSL block has no password")
		}
		//lint:ignore SA1019 as above
		der, err := x509.DecryptPEMBlock(b, []byte(password))
		if err != nil {
			return nil, err
		}
		return pem.EncodeToMemory(&pem.Block{Type: b.Type, Bytes: der}), nil
	}
}

// config is the configuration for k: the shared one, or with a nil
// share, one of its own.
func (s *tlsShare) config(k tlsKey) (*tls.Config, error) {
	if s != nil && s.configs[k] != nil {
		return s.configs[k], nil
	}
	pool, err := s.pool(k.ca)
	if err != nil {
		return nil, err
	}
	cfg := newTLSConfig(k, pool, s.clock)
	if s != nil && s.cert != nil {
		// Sent whatever the server's request names (its CAs), as
		// OpenSSL sends its one certificate: Go's own choice among
		// Certificates would send none to a server whose list of
		// acceptable CAs does not name the certificate's issuer.
		cert := s.cert
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
	}
	if s != nil {
		s.configs[k] = cfg
	}
	return cfg, nil
}

// pool is the CA file's pool, read once (every time with a nil share);
// nil for no file.
func (s *tlsShare) pool(path string) (*x509.CertPool, error) {
	if path == "" {
		return nil, nil
	}
	if s != nil && s.pools[path] != nil {
		return s.pools[path], nil
	}
	pool, err := readCA(path)
	if err == nil && s != nil {
		s.pools[path] = pool
	}
	return pool, err
}

// readCA reads verify_certificate's CA file.
func readCA(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("SSL ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("SSL ca %s: no certificate", path)
	}
	return pool, nil
}

// tlsRand is the source of the TLS clients' random values: ChaCha8
// (math/rand/v2's cryptographically strong generator), seeded from the
// system's source. crypto/tls reads two values a handshake from
// Config.Rand, the hello's random and session ID, both sent in clear;
// where there is no vDSO each read of the system's source is a system
// call. The key share's private key still comes from the system's source:
// crypto/ecdh ignores Config.Rand (unless GODEBUG=cryptocustomrand=1).
// So would TLS 1.2's RSA key exchange, the one secret crypto/tls draws
// from Config.Rand, were it on (Go leaves it off: tlsrsakex); ChaCha8 is
// fit for that too.
var tlsRand = func() *lockedRand {
	var seed [32]byte
	crand.Read(seed[:])
	return &lockedRand{r: rand.NewChaCha8(seed)}
}()

type lockedRand struct {
	mu sync.Mutex
	r  *rand.ChaCha8
}

func (l *lockedRand) Read(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Read(b)
}

// newTLSConfig is the configuration for k, verifying against pool (k.ca's,
// or nil: the system's roots).
func newTLSConfig(k tlsKey, pool *x509.CertPool, clock *Clock) *tls.Config {
	cfg := &tls.Config{
		Rand:               tlsRand,
		InsecureSkipVerify: !k.verify, // keepalived never verifies
		// One session per cache key: the server's address, or the server
		// name sent, which is kept apart by target (tlsKey). A check
		// resumes its last session: no certificate, no signature.
		ClientSessionCache: &sessions{m: map[string]*tls.ClientSessionState{}},
		// TLS 1.2 and 1.3: keepalived's OpenSSL 3 client cannot make a
		// TLS 1.0 or 1.1 handshake either (their MD5 and SHA-1 signatures
		// are below its default security level).
		MinVersion: tls.VersionTLS12,
		// The groups of OpenSSL's default client that Go has, in its
		// order, so that a server that allows only P-384 (ssl_ecdh_curve
		// secp384r1) or P-521 is checked as keepalived checks it (OpenSSL
		// also has X448 and the finite-field groups, which Go lacks). Not
		// the post-quantum hybrid Go prefers: it costs more than a health
		// check is worth, and OpenSSL 3.0 does not offer it.
		CurvePreferences: []tls.CurveID{tls.X25519, tls.CurveP256, tls.CurveP521, tls.CurveP384},
		Time:             clock.Coarse, // see Clock
		ServerName:       k.name,
	}
	cfg.RootCAs = pool
	return cfg
}

// sessions is a TLS client session cache of one session per key. Its
// keys are the targets of the checks that share it, a set the
// configuration bounds, so it needs no eviction (tls's LRU cache keeps a
// list beside its map, and each checker had one of its own).
type sessions struct {
	mu sync.Mutex
	m  map[string]*tls.ClientSessionState
}

func (s *sessions) Get(key string) (*tls.ClientSessionState, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cs, ok := s.m[key]
	return cs, ok
}

// Put keeps cs, or forgets the key's session for a nil cs (tls's
// signal that it failed).
func (s *sessions) Put(key string, cs *tls.ClientSessionState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cs == nil {
		delete(s.m, key)
		return
	}
	s.m[key] = cs
}

// dial opens the probe's connection: TCP, then TLS for SSL_GET, with our
// own handshake (without enable_sni no server name is sent, as keepalived).
//
// The connection's own deadline bounds the handshake, the request and the
// answer; ctx ended early (directord stopping) moves it to now. That is
// cheaper than HandshakeContext, which watches the context from a
// goroutine of its own.
//
// The time spent waiting for a handshake slot, that is for this
// director's own CPU, does not count against the deadline: an overloaded
// director checks less often, where counting it would time out every
// handshake at once, fail healthy servers and add retries to the load.
//
// A probe waits for its slot as long as it takes: an overloaded
// director checks late, as keepalived's single loop does, and spends its
// CPU on checks it completes. While slots are free it connects first, so
// that silent servers (a rack without power) hold none for their
// connect_timeout. When every slot is taken it waits for one before it
// connects: probes that connected first and then gave up after a
// delay_loop without a slot made an overloaded director spend its CPU on
// connections opened, left waiting and closed unused on both sides, and
// it served no check at all (10,000 checks in the benchmark's guest). A
// check whose last connection failed always connects first.
func (p *HTTP) dial(ctx context.Context, cfg *tls.Config, start, deadline time.Time) (net.Conn, error) {
	var queued time.Duration
	early := cfg != nil && !p.unreachable && len(p.handshakes) == cap(p.handshakes)
	if early {
		q, err := p.slot(ctx, start)
		if err != nil {
			return nil, err
		}
		queued = q
		p.queued += q
		deadline = deadline.Add(queued)
	}
	// The connection's deadline is set once, by rawDial. Every clock
	// reading counts: where there is no vDSO (the benchmark's guest, some
	// virtual machines) each is a system call, and they were most of a
	// check's cost there.
	raw, err := p.Target.dial(ctx, deadline)
	p.unreachable = err != nil
	if err != nil {
		if early {
			<-p.handshakes
		}
		return nil, err
	}
	// Every path below ends in stop(), directly or through closeNow or
	// the stoppable's Close: ctx is the checks' own, which lives on.
	stop := context.AfterFunc(ctx, func() { raw.SetDeadline(time.Now()) })
	if cfg == nil {
		return &stoppable{raw, stop}, nil
	}
	connected := time.Since(start) - queued
	if !early {
		q, err := p.slot(ctx, start)
		if err != nil {
			stop()
			closeNow(raw)
			return nil, err
		}
		if q > 0 {
			queued = q - connected
			p.queued += queued
			// The connection's deadline, moved by the wait, unless ctx
			// has ended: the AfterFunc's "now" must not be overwritten.
			raw.SetDeadline(deadline.Add(queued))
			if ctx.Err() != nil {
				raw.SetDeadline(time.Now())
			}
		}
	}
	c := tls.Client(raw, cfg)
	err = c.Handshake()
	<-p.handshakes
	if err != nil {
		stop()
		closeNow(raw)
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		// Where the time went, for a timeout: the server's handshake, or
		// this director's wait for its connection and its CPU.
		return nil, &tlsError{err: err, took: time.Since(start) - connected - queued, connect: connected, queued: queued}
	}
	return &stoppable{c, stop}, nil
}

// slot takes a handshake slot, waiting for one as long as it takes (the
// slots are given in turn, and each handshake has its deadline), or
// until ctx ends. It returns how long after start it got one when it had
// to wait, else 0 (no clock reading).
func (p *HTTP) slot(ctx context.Context, start time.Time) (time.Duration, error) {
	select {
	case p.handshakes <- struct{}{}:
		return 0, nil
	default:
	}
	if p.waiting != nil {
		p.waiting()
	}
	select {
	case p.handshakes <- struct{}{}:
		return time.Since(start), nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// stoppable is a probe's connection with its context watch, undone at
// close.
type stoppable struct {
	net.Conn
	stop func() bool
}

func (s *stoppable) Close() error {
	s.stop()
	return s.Conn.Close()
}

// dial connects to the target by deadline; ctx ending stops it
// (rawconn_linux.go).
func (t Target) dial(ctx context.Context, deadline time.Time) (net.Conn, error) {
	return rawDial(ctx, t, deadline)
}

// DefaultHandshakes is the TLS handshakes in flight across a Runner's
// checks, at most, unless its Options say otherwise: what costs CPU in a
// check is the handshake.
const DefaultHandshakes = 32

// tlsError marks a handshake failure, to say so in the reason, with
// where the time went.
type tlsError struct {
	err                   error
	took, connect, queued time.Duration
}

// timing says, for a timeout, how long the connection, the wait for a
// handshake slot and the handshake took: "connected in 2ms, handshake
// 998ms"; "" for another failure.
func (e *tlsError) timing() string {
	if !errors.Is(e.err, context.DeadlineExceeded) && !errors.Is(e.err, os.ErrDeadlineExceeded) {
		return ""
	}
	r := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	s := "connected in " + r(e.connect)
	if e.queued > 0 {
		s += ", waited " + r(e.queued) + " for a handshake slot"
	}
	return s + ", handshake " + r(e.took)
}

func (e *tlsError) Error() string { return e.err.Error() }
func (e *tlsError) Unwrap() error { return e.err }

// Probe fetches every URL in turn; the first that fails decides.
func (p *HTTP) Probe(ctx context.Context) Result {
	p.queued = 0
	res := p.probe(ctx)
	res.Waited = p.queued
	return res
}

func (p *HTTP) probe(ctx context.Context) Result {
	p.probes++
	start := p.clock.Now()
	for i, u := range p.URLs {
		from := start
		if i > 0 {
			from = p.clock.Now()
		}
		var cfg *tls.Config
		if p.tlsURL != nil {
			cfg = p.tlsURL[i]
		}
		if r, ok := p.get(ctx, u, cfg, start, from.Add(p.Target.Timeout)); !ok {
			return r
		}
	}
	return p.clock.done(Result{Outcome: Up, Reason: "all URLs answered", Weight: -1}, start)
}

// get fetches one URL, whose connection (and TLS handshake) must be
// made by deadline (connect_timeout from its start; exchange times the
// rest): on a connection of its own, or with reuse_connection on the
// connection an earlier passing probe kept.
func (p *HTTP) get(ctx context.Context, u *config.URL, cfg *tls.Config, start, deadline time.Time) (Result, bool) {
	// The Host header as keepalived's http_request_thread writes it:
	// the URL's virtualhost, else the checker's, the real server's or
	// the virtual server's (p.Host), else the address connected to, with
	// its port. The path is sent as written: a full URL
	// (http://www.example.com/health) is the request's target as it is.
	host := cmp.Or(u.VirtualHost, p.Host, p.Target.Addr.String())
	path := u.Path
	if k := p.take(ctx, cfg, deadline.Add(-p.Target.Timeout)); k != nil {
		idle := k.probe != p.probes // kept by an earlier probe, not by this one's last URL
		// The context watch only while the connection is in use: held
		// by each idle connection it was 360 bytes of 10,000 kept
		// connections' live heap, for a stop that closes them anyway.
		watch := context.AfterFunc(ctx, func() { socket(k.conn).SetDeadline(time.Now()) })
		res, ok, keep, broken := p.exchange(ctx, k.conn, u, path, host, start)
		watch()
		if keep {
			k.probe = p.probes
			p.kept = k
			return res, ok
		}
		closeNow(k.conn)
		if !broken || !idle || ctx.Err() != nil {
			return res, ok
		}
		// The kept connection, idle since an earlier probe, failed (the
		// server closed or reset it while idle, or it hung): that proves
		// nothing of the server, which is asked again on a new
		// connection, with a connect_timeout of its own.
		deadline = p.clock.Now().Add(p.Target.Timeout)
	}
	return p.fresh(ctx, u, cfg, path, host, start, deadline)
}

// fresh fetches one URL on a connection of its own, opened for it, which
// it keeps for the next probes if it may (reuse_connection).
func (p *HTTP) fresh(ctx context.Context, u *config.URL, cfg *tls.Config, path, host string, start, deadline time.Time) (Result, bool) {
	// One request on a connection of its own, written and read here
	// rather than through net/http's Transport, whose goroutines and
	// channels per connection cost more than the request when thousands
	// of checks run.
	opened := deadline.Add(-p.Target.Timeout)
	conn, err := p.dial(ctx, cfg, opened, deadline)
	if err != nil {
		what := "GET " + path
		var te *tlsError
		if !errors.As(err, &te) {
			return p.clock.failure(start, what, err), false
		}
		r := p.clock.failure(start, "TLS handshake", err)
		if t := te.timing(); t != "" {
			r.Reason += " (" + t + ")"
		}
		return r, false
	}
	res, ok, keep, _ := p.exchange(ctx, conn, u, path, host, start)
	if keep {
		// Kept without its context watch (get watches it while in use).
		if s, ok := conn.(*stoppable); ok {
			s.stop()
			conn = s.Conn
		}
		p.kept = &kept{conn: conn, tls: cfg, until: opened.Add(p.reuse), ctx: ctx, probe: p.probes}
	} else {
		closeNow(conn)
	}
	return res, ok
}

// kept is the connection a passing probe left open for the next
// (reuse_connection), with nothing of it left unread.
type kept struct {
	conn  net.Conn
	tls   *tls.Config     // its TLS configuration: a URL of another server name needs its own
	until time.Time       // opened + reuse_connection: a new connection after
	ctx   context.Context // the checks' context, watched while it is in use
	probe uint64          // the probe that used it last
}

// take hands the kept connection to a probe starting at now, unless it
// is too old, or not quiet (the server sent something unasked while it
// was idle: a 408, its close; what is waiting would be taken for the
// answer), or watches another context: then it is closed. nil without
// one.
func (p *HTTP) take(ctx context.Context, cfg *tls.Config, now time.Time) *kept {
	k := p.kept
	p.kept = nil
	if k != nil && k.tls != cfg {
		closeNow(k.conn) // another server name
		return nil
	}
	if k == nil || k.probe == p.probes {
		return k // none, or used by this probe's last URL a moment ago
	}
	if !now.Before(k.until) || k.ctx != ctx || !quiet(k.conn) {
		closeNow(k.conn)
		return nil
	}
	return k
}

// readers are the probes' answer readers, lent for an exchange.
var readers = sync.Pool{New: func() any { return bufio.NewReader(nil) }}

// quiet tells whether nothing waits to be read on c (see rawConn.quiet);
// a connection of another kind is taken as quiet.
func quiet(c net.Conn) bool {
	if q, ok := socket(c).(interface{ quiet() bool }); ok {
		return q.quiet()
	}
	return true
}

// Close closes the connection kept for the next probe, if any: call it
// once the checks have stopped.
func (p *HTTP) Close() error {
	if p.kept != nil {
		closeNow(p.kept.conn)
		p.kept = nil
	}
	return nil
}

// request is the request for path to host, byte for byte as keepalived
// sends it (check_http.c's request_template): its User-Agent, then
// "Connection: close" with http_protocol 1.0C or 1.1 (none with 1.0,
// where closing is the default), then Host. reuse_connection (a
// directord extension) asks for "Connection: keep-alive" there instead.
func (p *HTTP) request(path, host string) []byte {
	b := make([]byte, 0, 64+len(path)+len(host))
	b = append(b, "GET "...)
	b = append(b, path...)
	b = append(b, ' ')
	b = append(b, p.proto...)
	b = append(b, "\r\nUser-Agent: KeepAliveClient\r\n"...)
	switch {
	case p.reuse > 0:
		b = append(b, "Connection: keep-alive\r\n"...)
	case p.close:
		b = append(b, "Connection: close\r\n"...)
	}
	b = append(b, "Host: "...)
	b = append(b, host...)
	return append(b, "\r\n\r\n"...)
}

// exchange sends the request for path on conn and judges the answer,
// with keepalived's timing (check_http.c): the request and the first of
// the answer each within connect_timeout (one from now: writing a
// request of a few hundred bytes takes no time), then, for HTTP_GET,
// each read within connect_timeout of the last (http_read_thread), for
// SSL_GET the rest of the answer within one (ssl_read_thread carries the
// time left over). The answer is read until the server closes, as
// keepalived reads it, and judged as keepalived judges it (answer); with
// reuse_connection, until its end as HTTP/1.1 frames it.
//
// broken says the connection failed (nothing, or not all, of an answer
// came: res says why); keep that conn may carry the next request (a
// passing answer, wholly read, that lets the connection stay open, with
// reuse_connection).
func (p *HTTP) exchange(ctx context.Context, conn net.Conn, u *config.URL, path, host string, start time.Time) (res Result, ok, keep, broken bool) {
	setDeadline(ctx, conn, p.clock.Now().Add(p.Target.Timeout), false)
	if _, err := conn.Write(p.request(path, host)); err != nil {
		return p.clock.failure(start, "GET "+path, err), false, false, true
	}
	a := newAnswer(u)
	r := &answerReader{ctx: ctx, clock: p.clock, conn: conn, a: a, timeout: p.Target.Timeout, perRead: p.tlsURL == nil}
	if p.reuse > 0 {
		return p.exchangeKept(r, u, path, start)
	}
	buf := buffers.Get().(*[4096]byte)
	defer buffers.Put(buf)
	for {
		_, err := r.Read(buf[:])
		if err == nil && !a.overflow {
			continue
		}
		if err == nil || errors.Is(err, io.EOF) {
			break // the end, or as much as directord reads
		}
		if res, failed := r.failed(start, path, err); failed {
			return res, false, false, true
		}
		break
	}
	if why, pass := a.judge(u); !pass {
		return p.clock.done(Result{Outcome: Down, Reason: "GET " + path + ": " + why, Weight: -1}, start), false, false, false
	}
	return Result{}, true, false, false
}

// exchangeKept is exchange's reading with reuse_connection (a directord
// extension): the answer is read to its end as HTTP/1.1 frames it
// (Content-Length, chunks), so that the connection can carry the next
// request; the answer's bytes are judged as keepalived judges them.
func (p *HTTP) exchangeKept(r *answerReader, u *config.URL, path string, start time.Time) (res Result, ok, keep, broken bool) {
	// The reader is lent for the exchange: a kept connection has nothing
	// buffered, and holding 4 KB per kept connection was a third of the
	// checks' memory at 10,000 real servers.
	br := readers.Get().(*bufio.Reader)
	br.Reset(r)
	defer func() {
		keep = keep && br.Buffered() == 0
		br.Reset(nil)
		readers.Put(br)
	}()
	resp, err := http.ReadResponse(br, nil)
	if err == nil {
		// Not resp.Body.Close(), which would read the rest of a long
		// body: the caller closes the connection unless the body was
		// read to its end.
		_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, maxBody))
	}
	if err != nil {
		if res, failed := r.failed(start, path, err); failed || !r.a.inBody {
			if !failed {
				res = p.clock.failure(start, "GET "+path, err)
			}
			return res, false, false, true
		}
	}
	if why, pass := r.a.judge(u); !pass {
		return p.clock.done(Result{Outcome: Down, Reason: "GET " + path + ": " + why, Weight: -1}, start), false, false, false
	}
	keep = err == nil && !resp.Close && !r.a.overflow && resp.StatusCode >= 200
	return Result{}, true, keep, false
}

// buffers are the answers' read buffers, as large as keepalived's.
var buffers = sync.Pool{New: func() any { return new([4096]byte) }}

// answerReader reads an answer from conn into a, with keepalived's
// timeouts (see exchange).
type answerReader struct {
	ctx     context.Context
	clock   *Clock
	conn    net.Conn
	a       *answer
	timeout time.Duration
	perRead bool // HTTP_GET: each read has a timeout of its own
	reads   int  // reads that brought something
}

func (r *answerReader) Read(b []byte) (int, error) {
	if r.reads > 0 && (r.perRead || r.reads == 1) {
		setDeadline(r.ctx, r.conn, r.clock.Now().Add(r.timeout), true)
	}
	n, err := r.conn.Read(b)
	if n > 0 {
		r.reads++
		r.a.Write(b[:n])
	}
	return n, err
}

// failed tells whether the read error err fails the answer, as
// keepalived takes it: a timeout always ("Timeout HTTP read", "Timeout
// SSL read"); another error over HTTP always ("Read error"), over TLS
// only before the head's end (ssl_read_thread judges what came before a
// reset, as before a close). It is silent (maybe this director's own
// link) only if nothing at all came.
func (r *answerReader) failed(start time.Time, path string, err error) (Result, bool) {
	timeout := errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) || r.ctx.Err() != nil
	if !timeout && !r.perRead && r.a.inBody {
		return Result{}, false
	}
	what := "GET " + path
	if r.a.inBody {
		what += ": body"
	}
	res := r.clock.failure(start, what, err)
	if r.reads > 0 {
		res.Silent = false
	}
	return res, true
}

// setDeadline sets conn's deadline (its read deadline alone with read),
// or, once ctx has ended (the checks stop), ends it now: the watch
// that ends it (context.AfterFunc) may have run before.
func setDeadline(ctx context.Context, conn net.Conn, t time.Time, read bool) {
	if read {
		conn.SetReadDeadline(t)
	} else {
		conn.SetDeadline(t)
	}
	if ctx.Err() != nil {
		conn.SetDeadline(time.Now())
	}
}
