package healthcheck

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/directord/directord/config"
)

// SMTP is SMTP_CHECK: keepalived's dialogue (check_smtp.c). The banner's
// first line must be 220, the answer to "HELO name" 250, and the answer
// to QUIT any line; each step (the connection, each write and each line
// read) within connect_timeout.
type SMTP struct {
	clocked
	Target Target
	HELO   string // helo_name
}

// NewSMTP makes the prober of an SMTP_CHECK.
func NewSMTP(c *config.Checker, rs *config.RealServer) (*SMTP, error) {
	if c.SMTP == nil || c.SMTP.HELOName == "" {
		return nil, errors.New("SMTP_CHECK without a helo_name")
	}
	return &SMTP{Target: TargetOf(c, rs), HELO: c.SMTP.HELOName}, nil
}

// smtpLineMax is keepalived's SMTP_BUFF_MAX less its NUL: a longer line
// is read on from the start of its buffer.
const smtpLineMax = 511

// Probe runs the dialogue.
func (p *SMTP) Probe(ctx context.Context) Result {
	start := p.clock.Now()
	c, err := p.Target.dial(ctx, start.Add(p.Target.Timeout))
	if err != nil {
		return p.clock.failure(start, "connect", err)
	}
	defer closeNow(c)
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) })
	defer stop()
	buf := make([]byte, smtpLineMax)
	fail := func(what string, err error) Result {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return p.clock.failure(start, what, err)
	}
	down := func(format string, args ...any) Result {
		return p.clock.done(Result{Outcome: Down, Reason: fmt.Sprintf(format, args...), Weight: -1}, start)
	}
	banner, err := p.line(ctx, c, buf)
	if err != nil {
		return fail("banner", err)
	}
	if smtpStatus(banner) != 220 {
		return down("bad greeting banner %q", clip(banner))
	}
	if err := p.write(ctx, c, "HELO "+p.HELO+"\r\n"); err != nil {
		return fail("HELO", err)
	}
	helo, err := p.line(ctx, c, buf)
	if err != nil {
		return fail("HELO", err)
	}
	if smtpStatus(helo) != 250 {
		return down("bad HELO response %q", clip(helo))
	}
	if err := p.write(ctx, c, "QUIT\r\n"); err != nil {
		return fail("QUIT", err)
	}
	if _, err := p.line(ctx, c, buf); err != nil {
		return fail("QUIT", err)
	}
	return p.clock.done(Result{Outcome: Up, Reason: "SMTP dialogue done", Weight: -1}, start)
}

// line reads, as keepalived's smtp_get_line_cb, until what it read holds
// a newline, each read within connect_timeout; what came after that
// read's newline is dropped, as keepalived drops it. The line is what
// was read up to the first newline (or NUL, where keepalived's string
// ends).
func (p *SMTP) line(ctx context.Context, c net.Conn, buf []byte) ([]byte, error) {
	n := 0
	for {
		if n >= len(buf) {
			n = 0 // keepalived: "Buffer overflow", and it reads on from the start
		}
		c.SetReadDeadline(p.clock.Now().Add(p.Target.Timeout))
		// After the deadline is set: a stop that came before it is seen
		// here, one after it sets the deadline past (see Probe).
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r, err := c.Read(buf[n:])
		if r == 0 && err == nil {
			continue
		}
		if r <= 0 {
			if err == nil || errors.Is(err, io.EOF) {
				err = errors.New("closed by the server")
			}
			return nil, err
		}
		n += r
		s := buf[:n]
		if i := bytes.IndexByte(s, 0); i >= 0 {
			s = s[:i]
		}
		if i := bytes.IndexByte(s, '\n'); i >= 0 {
			return s[:i+1], nil
		}
	}
}

func (p *SMTP) write(ctx context.Context, c net.Conn, s string) error {
	c.SetWriteDeadline(p.clock.Now().Add(p.Target.Timeout))
	if err := ctx.Err(); err != nil {
		return err
	}
	_, err := c.Write([]byte(s))
	return err
}

// smtpStatus is a reply's code as keepalived's smtp_get_status reads it:
// three digits at the start, followed by a space or the end; else -1 (so
// "220-" of a multi-line banner, or "220\r\n", is no status).
func smtpStatus(l []byte) int {
	if len(l) < 3 || (len(l) > 3 && l[3] != ' ') {
		return -1
	}
	v := 0
	for _, d := range l[:3] {
		if d < '0' || d > '9' {
			return -1
		}
		v = v*10 + int(d-'0')
	}
	return v
}

// clip is a server's line for a reason: without its line end, at most
// 80 bytes.
func clip(l []byte) string {
	l = bytes.TrimRight(l, "\r\n")
	if len(l) > 80 {
		l = l[:80]
	}
	return string(l)
}
