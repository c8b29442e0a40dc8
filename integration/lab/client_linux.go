package lab

import (
	"bufio"
	"cmp"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/directord/directord/internal/nstest"
)

// Get sends one request to the VIP from the client, on a new connection
// (TCP and TLS), and says which real server answered.
func (l *Lab) Get() Result { return l.GetFrom(0) }

// GetFrom is Get from the client's port port (0: any): with mh-port, the
// flow's hash is of the client's address and that port.
func (l *Lab) GetFrom(port uint16) Result {
	r := Result{Start: time.Now()}
	r.Server, r.Err = l.get(&r, port, r.Start.Add(RequestTimeout))
	r.End = time.Now()
	r.Withheld = l.Starve.Withheld(r.Start, r.End)
	return r
}

// get sends the request, noting in r when TCP connected and from which
// port.
func (l *Lab) get(r *Result, port uint16, deadline time.Time) (string, error) {
	c, err := dialFrom(l.Client, port, ServiceAddress, deadline)
	if err != nil {
		return "", fmt.Errorf("dial %s: %w", ServiceAddress, err)
	}
	r.Connected = time.Now()
	r.Port = uint16(c.LocalAddr().(*net.TCPAddr).Port)
	tc, err := l.handshake(c, deadline)
	if err != nil {
		return "", err
	}
	defer closeTCP(tc)
	return request(tc, bufio.NewReader(tc), true)
}

// closeTCP closes the TCP connection under c without TLS's close_notify.
// The server closes first (Connection: close), so an alert sent after
// would only draw its reset, and a reset connection closes without a FIN:
// the director, which sees only the client's side (direct routing), would
// count it active until its 15 minute timeout.
func closeTCP(c *tls.Conn) error { return c.NetConn().Close() }

// dial opens a TLS connection from the client to the VIP.
func (l *Lab) dial(deadline time.Time) (*tls.Conn, error) {
	c, err := dialFrom(l.Client, 0, ServiceAddress, deadline)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", ServiceAddress, err)
	}
	return l.handshake(c, deadline)
}

// handshake makes c, a connection to the VIP, a TLS one.
func (l *Lab) handshake(c net.Conn, deadline time.Time) (*tls.Conn, error) {
	tc := tls.Client(c, l.tls)
	tc.SetDeadline(deadline)
	if err := tc.Handshake(); err != nil {
		c.Close()
		return nil, fmt.Errorf("TLS handshake: %w", err)
	}
	return tc, nil
}

// dialFrom opens a TCP connection to addr from ns, from the local port
// port (SO_REUSEADDR; 0: one the kernel picks). Only the socket is made
// on a thread inside ns (a socket stays in the namespace it was made in);
// it connects from anywhere. A thread locked for a whole connect would
// hold the guest's one CPU's scheduler: each wake-up of its goroutine
// hands the CPU to that thread, and with many connects waiting through a
// failover, the test's own servers starved for seconds.
func dialFrom(ns *nstest.NS, port uint16, addr netip.AddrPort, deadline time.Time) (net.Conn, error) {
	var fd int
	err := inNS(ns, func() (err error) {
		fd, err = syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	if port != 0 {
		err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1)
		if err == nil {
			err = syscall.Bind(fd, &syscall.SockaddrInet4{Port: int(port)})
		}
		if err != nil {
			syscall.Close(fd)
			return nil, fmt.Errorf("bind port %d: %w", port, err)
		}
	}
	// A non-blocking descriptor: os.File waits for it in the runtime's
	// poller, with deadlines.
	f := os.NewFile(uintptr(fd), "tcp")
	defer f.Close()
	err = syscall.Connect(fd, &syscall.SockaddrInet4{Port: int(addr.Port()), Addr: addr.Addr().As4()})
	if err != nil && err != syscall.EINPROGRESS {
		return nil, os.NewSyscallError("connect", err)
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	if err := f.SetWriteDeadline(deadline); err != nil {
		return nil, err
	}
	var cerr error
	werr := rc.Write(func(fd uintptr) bool {
		// Connected, failed, or still connecting (wait until writable).
		if v, err := syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_ERROR); err != nil || v != 0 {
			cerr = os.NewSyscallError("connect", cmp.Or(err, error(syscall.Errno(v))))
			return true
		}
		_, err := syscall.Getpeername(int(fd))
		return err != syscall.ENOTCONN
	})
	if err := cmp.Or(cerr, werr); err != nil {
		return nil, err
	}
	return net.FileConn(f) // a copy of the descriptor; f's closes
}

// request sends GET / and returns the answer's body: the real server's
// name.
func request(w io.Writer, r *bufio.Reader, closing bool) (string, error) {
	hdr := ""
	if closing {
		hdr = "Connection: close\r\n"
	}
	if _, err := fmt.Fprintf(w, "GET / HTTP/1.1\r\nHost: %s\r\n%s\r\n", ServerName, hdr); err != nil {
		return "", err
	}
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("status %s", resp.Status)
	}
	return strings.TrimSpace(string(body)), nil
}

// Conn is a long-lived connection from the client to the VIP (HTTP/1.1
// keep-alive over TLS): the kind of connection that connection sync
// carries across a failover.
type Conn struct {
	c      *tls.Conn
	r      *bufio.Reader
	p      *patientReader
	Server string // the real server behind it, from its first answer
}

// Dial opens a long-lived connection and sends its first request.
func (l *Lab) Dial() (*Conn, error) {
	tc, err := l.dial(time.Now().Add(RequestTimeout))
	if err != nil {
		return nil, err
	}
	c := &Conn{c: tc, p: &patientReader{c: tc, withheld: l.Starve.Withheld, now: time.Now}}
	c.r = bufio.NewReader(c.p)
	if c.Server, err = c.Get(); err != nil {
		tc.Close()
		return nil, err
	}
	return c, nil
}

// Get sends a request on the connection and returns who answered; TCP
// retransmits meanwhile if the path is down. The answer is waited for
// RequestTimeout, and again while the machine starves the client
// (patientReader).
func (c *Conn) Get() (string, error) {
	now := c.p.now()
	c.p.since, c.p.waits = now, 0
	c.c.SetDeadline(now.Add(RequestTimeout))
	return request(c.c, c.r, false)
}

// Waited is how many times the connection's answers were waited for
// again because the machine had starved the client: a figure for the
// log, as a starved wait is neither a failure nor a success.
func (c *Conn) Waited() int { return int(c.p.waited.Load()) }

// maxWaits bounds the waits one answer is given after its first, so that
// a machine that never lets the client run still ends the test.
const maxWaits = 3

// patientReader reads a long-lived connection's answers. A read that
// times out when the machine has withheld all but less than Unstarved
// of the wait (the rule of Result.Starved) is given another
// RequestTimeout, up to maxWaits times for one answer: the client was
// not given the time to read, and the connection is judged once it is.
// A timeout while the client had the time, a reset or a wrong answer
// ends the request as before. It waits below HTTP's parser, so a read
// tried again loses nothing, and TLS keeps a connection usable after a
// read's time-out (a write's would not be, but the request is written
// at once, under a fresh deadline).
type patientReader struct {
	c interface {
		io.Reader
		SetReadDeadline(time.Time) error
	}
	withheld func(from, to time.Time) time.Duration // the lab's meter
	now      func() time.Time
	since    time.Time // this wait's start
	waits    int       // the waits this answer was given again
	waited   atomic.Int32
}

func (p *patientReader) Read(b []byte) (int, error) {
	for {
		n, err := p.c.Read(b)
		if n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) || p.waits >= maxWaits {
			return n, err
		}
		now := p.now()
		r := Result{Start: p.since, End: now, Err: err, Withheld: p.withheld(p.since, now)}
		if !r.Starved() {
			return n, err
		}
		p.waits++
		p.waited.Add(1)
		p.since = now
		p.c.SetReadDeadline(now.Add(RequestTimeout))
	}
}

// ClientPort is the connection's port on the client.
func (c *Conn) ClientPort() uint16 { return uint16(c.c.LocalAddr().(*net.TCPAddr).Port) }

// Close closes the connection.
func (c *Conn) Close() error { return closeTCP(c.c) }

// Traffic is a stream of requests from the client at a steady rate, each
// on a new connection, whether or not earlier ones have answered (as
// users keep arriving when a site stalls); at most 64 at a time.
type Traffic struct {
	l    *Lab
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	res  []Result
}

// StartTraffic starts rate requests a second; Stop ends it.
func (l *Lab) StartTraffic(rate int) *Traffic {
	tr := &Traffic{l: l, stop: make(chan struct{}), done: make(chan struct{})}
	go tr.run(time.Second / time.Duration(rate))
	l.t.Cleanup(func() { tr.Stop() })
	return tr
}

func (tr *Traffic) run(every time.Duration) {
	defer close(tr.done)
	var wg sync.WaitGroup
	defer wg.Wait()
	slots := make(chan struct{}, 64)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-tr.stop:
			return
		case <-tick.C:
		}
		select {
		case <-tr.stop:
			return
		case slots <- struct{}{}:
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := tr.l.Get()
			tr.mu.Lock()
			tr.res = append(tr.res, r)
			tr.mu.Unlock()
			<-slots
		}()
	}
}

// Stop stops sending, waits for the requests in flight and returns every
// result.
func (tr *Traffic) Stop() []Result {
	select {
	case <-tr.stop:
	default:
		close(tr.stop)
	}
	<-tr.done
	return tr.Results()
}

// Results returns the results so far, in the order they ended.
func (tr *Traffic) Results() []Result {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]Result(nil), tr.res...)
}

// Answered counts the requests started at or after since that have
// succeeded so far.
func (tr *Traffic) Answered(since time.Time) int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	n := 0
	for _, r := range tr.res {
		if r.Err == nil && !r.Start.Before(since) {
			n++
		}
	}
	return n
}
