package healthcheck

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/directord/directord/config"
)

// udpDial opens a UDP socket connected to t.Addr, from t.Bind, with t's
// mark and device; recverr asks for ICMP errors in the socket's error
// queue (IP_RECVERR), as keepalived's UDP_CHECK does.
func udpDial(ctx context.Context, t Target, recverr bool) (*net.UDPConn, error) {
	addr := netip.AddrPortFrom(t.Addr.Addr().Unmap(), t.Addr.Port())
	d := net.Dialer{Control: func(network, address string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			set := func(level, opt, v int) {
				if serr == nil {
					serr = unix.SetsockoptInt(int(fd), level, opt, v)
				}
			}
			if recverr {
				if addr.Addr().Is4() {
					set(unix.SOL_IP, unix.IP_RECVERR, 1)
				} else {
					set(unix.SOL_IPV6, unix.IPV6_RECVERR, 1)
				}
			}
			if t.Bind.Port() != 0 {
				set(unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
			}
			if t.Mark != 0 {
				set(unix.SOL_SOCKET, unix.SO_MARK, int(t.Mark))
			}
			if t.Dev != "" && serr == nil {
				serr = unix.BindToDevice(int(fd), t.Dev)
			}
		})
		return errors.Join(err, serr)
	}}
	if t.Bind.IsValid() || t.Bind.Port() != 0 {
		b := t.Bind.Addr().Unmap()
		if !b.IsValid() {
			b = netip.IPv4Unspecified()
			if addr.Addr().Is6() {
				b = netip.IPv6Unspecified()
			}
		}
		d.LocalAddr = net.UDPAddrFromAddrPort(netip.AddrPortFrom(b, t.Bind.Port()))
	}
	network := "udp4"
	if addr.Addr().Is6() {
		network = "udp6"
	}
	c, err := d.DialContext(ctx, network, addr.String())
	if err != nil {
		return nil, err
	}
	return c.(*net.UDPConn), nil
}

// icmpError is an ICMP error the kernel queued for a socket (IP_RECVERR).
type icmpError struct {
	v6         bool
	typ, code  uint8
	errno      syscall.Errno
	unreachble bool // destination unreachable, of any code
}

func (e *icmpError) Error() string {
	if !e.unreachble {
		return fmt.Sprintf("ICMP type %d code %d", e.typ, e.code)
	}
	what := map[bool]map[uint8]string{
		false: {0: "network unreachable", 1: "host unreachable", 3: "port unreachable", 9: "network prohibited", 10: "host prohibited", 13: "communication prohibited"},
		true:  {0: "no route", 1: "communication prohibited", 3: "address unreachable", 4: "port unreachable", 5: "source address failed policy", 6: "reject route"},
	}[e.v6][e.code]
	if what == "" {
		what = fmt.Sprintf("destination unreachable, code %d", e.code)
	}
	return "ICMP " + what
}

// Unwrap is the errno the kernel gives for it, so that failure tells an
// unreachable host (silent) from a refusal.
func (e *icmpError) Unwrap() error { return e.errno }

// queuedICMP reads the first ICMP error of c's error queue, if any, as
// keepalived's udp_socket_error does.
func queuedICMP(c *net.UDPConn) *icmpError {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil
	}
	var out *icmpError
	rc.Control(func(fd uintptr) {
		var oob [512]byte
		var b [64]byte
		_, oobn, _, _, err := unix.Recvmsg(int(fd), b[:], oob[:], unix.MSG_ERRQUEUE|unix.MSG_DONTWAIT)
		if err != nil {
			return
		}
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil {
			return
		}
		for _, m := range msgs {
			v4 := m.Header.Level == unix.SOL_IP && m.Header.Type == unix.IP_RECVERR
			v6 := m.Header.Level == unix.SOL_IPV6 && m.Header.Type == unix.IPV6_RECVERR
			if (!v4 && !v6) || len(m.Data) < int(unsafe.Sizeof(unix.SockExtendedErr{})) {
				continue
			}
			ee := (*unix.SockExtendedErr)(unsafe.Pointer(&m.Data[0]))
			if (v4 && ee.Origin != unix.SO_EE_ORIGIN_ICMP) || (v6 && ee.Origin != unix.SO_EE_ORIGIN_ICMP6) {
				continue
			}
			out = &icmpError{v6: v6, typ: ee.Type, code: ee.Code, errno: syscall.Errno(ee.Errno),
				unreachble: (v4 && ee.Type == 3) || (v6 && ee.Type == 1)}
			return
		}
	})
	return out
}

// udpPayload is what keepalived sends without a payload: its 32-byte
// buffer filled with "keepalived check - " (layer4.c's set_buf).
var udpPayload = []byte(strings.Repeat("keepalived check - ", 2)[:32])

// UDP is UDP_CHECK: a datagram is sent; an ICMP destination unreachable
// in answer fails, as does, with require_reply, no reply within
// connect_timeout, or a reply that does not match.
type UDP struct {
	clocked
	Target Target
	Cfg    config.UDPCheck
}

// NewUDP makes the prober of a UDP_CHECK.
func NewUDP(c *config.Checker, rs *config.RealServer) (*UDP, error) {
	if c.UDP == nil {
		return nil, errors.New("UDP_CHECK without its settings")
	}
	return &UDP{Target: TargetOf(c, rs), Cfg: *c.UDP}, nil
}

// Probe sends the payload and judges what comes back by connect_timeout.
func (p *UDP) Probe(ctx context.Context) Result {
	start := p.clock.Now()
	c, err := udpDial(ctx, p.Target, true)
	if err != nil {
		return p.clock.failure(start, "connect", err)
	}
	defer c.Close()
	payload := p.Cfg.Payload
	if payload == nil {
		payload = udpPayload
	}
	if _, err := c.Write(payload); err != nil {
		return p.clock.failure(start, "send", err)
	}
	c.SetReadDeadline(start.Add(p.Target.Timeout))
	stop := context.AfterFunc(ctx, func() { c.SetReadDeadline(time.Now()) })
	defer stop()
	buf := make([]byte, p.Cfg.MaxReply+1)
	n, err := c.Read(buf)
	switch {
	case ctx.Err() != nil:
		return p.clock.failure(start, "reply", ctx.Err())
	case errors.Is(err, unix.EAGAIN) || isTimeout(err):
		if p.Cfg.RequireReply {
			return p.clock.failure(start, "reply", context.DeadlineExceeded)
		}
		return p.clock.done(Result{Outcome: Up, Reason: "no reply, none required", Weight: -1}, start)
	case err != nil:
		if ie := queuedICMP(c); ie != nil {
			if ie.unreachble {
				return p.clock.failure(start, "reply", ie)
			}
			// keepalived's udp_socket_error takes any other ICMP error
			// (time exceeded, ...) as no answer.
			if p.Cfg.RequireReply {
				return p.clock.failure(start, "reply", ie)
			}
			return p.clock.done(Result{Outcome: Up, Reason: "no reply, none required (" + ie.Error() + ")", Weight: -1}, start)
		}
		return p.clock.failure(start, "reply", err)
	}
	if p.Cfg.Reply != nil {
		if why := p.mismatch(buf[:n]); why != "" {
			return p.clock.done(Result{Outcome: Down, Reason: "reply: " + why, Weight: -1}, start)
		}
	}
	return p.clock.done(Result{Outcome: Up, Reason: fmt.Sprintf("replied %d bytes", n), Weight: -1}, start)
}

// mismatch says how a reply differs from require_reply, as keepalived's
// check_udp_reply judges it: its length within min_reply_length and
// max_reply_length, and its first bytes (as many as both have) equal to
// the reply's, but for the wildcard bits.
func (p *UDP) mismatch(b []byte) string {
	if len(b) < p.Cfg.MinReply {
		return fmt.Sprintf("%d bytes, below min_reply_length %d", len(b), p.Cfg.MinReply)
	}
	if len(b) > p.Cfg.MaxReply {
		return fmt.Sprintf("more than max_reply_length %d bytes", p.Cfg.MaxReply)
	}
	for i := 0; i < len(b) && i < len(p.Cfg.Reply); i++ {
		m := byte(0)
		if p.Cfg.ReplyMask != nil {
			m = p.Cfg.ReplyMask[i]
		}
		if (b[i]^p.Cfg.Reply[i])&^m != 0 {
			return fmt.Sprintf("byte %d is %#02x, want %#02x", i, b[i], p.Cfg.Reply[i])
		}
	}
	return ""
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// DNS is DNS_CHECK: a query over UDP whose answer must come back, with
// the query's ID and the response bit, and rcode 0 (NOERROR), within
// connect_timeout. What the answer holds is not looked at, as in
// keepalived.
type DNS struct {
	clocked
	Target Target
	query  []byte // with a zero ID, set per probe
}

// NewDNS makes the prober of a DNS_CHECK.
func NewDNS(c *config.Checker, rs *config.RealServer) (*DNS, error) {
	if c.DNS == nil || config.DNSType(c.DNS.Type) == 0 {
		return nil, errors.New("DNS_CHECK without a known type")
	}
	return &DNS{Target: TargetOf(c, rs), query: dnsQuery(c.DNS.Name, config.DNSType(c.DNS.Type))}, nil
}

// dnsQuery is keepalived's query (check_dns.c's dns_make_query): flags
// with recursion desired alone, one question of class IN.
func dnsQuery(name string, typ uint16) []byte {
	q := []byte{0, 0, 0x01, 0, 0, 1, 0, 0, 0, 0, 0, 0}
	if name != "." {
		for _, l := range strings.Split(strings.TrimSuffix(name, "."), ".") {
			if l != "" {
				q = append(q, byte(len(l)))
				q = append(q, l...)
			}
		}
	}
	return append(q, 0, byte(typ>>8), byte(typ), 0, 1)
}

var dnsRcodes = map[int]string{1: "FORMERR", 2: "SERVFAIL", 3: "NXDOMAIN", 4: "NOTIMP", 5: "REFUSED"}

// Probe asks the query and waits for its answer by connect_timeout.
func (p *DNS) Probe(ctx context.Context) Result {
	start := p.clock.Now()
	c, err := udpDial(ctx, p.Target, false)
	if err != nil {
		return p.clock.failure(start, "connect", err)
	}
	defer c.Close()
	q := append([]byte(nil), p.query...)
	id := uint16(rand.Uint32())
	q[0], q[1] = byte(id>>8), byte(id)
	c.SetDeadline(start.Add(p.Target.Timeout))
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) })
	defer stop()
	if _, err := c.Write(q); err != nil {
		return p.clock.failure(start, "send", err)
	}
	buf := make([]byte, 768) // keepalived's DNS_BUFFER_SIZE
	for {
		n, err := c.Read(buf)
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		if err != nil {
			return p.clock.failure(start, "answer", err)
		}
		// As keepalived: datagrams too short (it checks 8 bytes, the ID
		// and flags being in the first 4), of another ID, or not
		// responses are passed over.
		if n < 8 || buf[0] != q[0] || buf[1] != q[1] || buf[2]&0x80 == 0 {
			continue
		}
		if rc := int(buf[3] & 0x0f); rc != 0 {
			name := dnsRcodes[rc]
			if name == "" {
				name = "rcode"
			}
			return p.clock.done(Result{Outcome: Down, Reason: fmt.Sprintf("answer: %s (%d)", name, rc), Weight: -1}, start)
		}
		return p.clock.done(Result{Outcome: Up, Reason: "answered", Weight: -1}, start)
	}
}
