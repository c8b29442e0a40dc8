package alert

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/user"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/directord/directord/config"
)

// QueueSize is how many alerts wait for the SMTP server before new ones
// are dropped.
const QueueSize = 64

// Mailer sends alerts to global_defs' smtp_server, in the background.
type Mailer struct {
	routerID string
	server   string
	from     string
	helo     string
	to       []string
	timeout  time.Duration
	noFaults bool
	log      *slog.Logger
	// Now gives the Date header's time; time.Now by default.
	Now func() time.Time

	q       chan Message
	done    chan struct{}
	stop    context.CancelFunc
	ctx     context.Context
	sent    atomic.Uint64
	failed  atomic.Uint64
	dropped atomic.Uint64

	mu      sync.Mutex
	last    map[string]string // "INSTANCE name" / "GROUP name": the last state mailed
	pending int               // queued or being sent
	idle    chan struct{}     // closed when pending falls to 0, for Flush
}

// New returns a Mailer for g's e-mail settings, running until Close; nil
// when g mails nothing (no notification_email or no smtp_server).
func New(g *config.Global, log *slog.Logger) *Mailer {
	e := g.Email
	if !e.Enabled() {
		return nil
	}
	host, _ := os.Hostname()
	m := &Mailer{
		routerID: g.RouterID, server: e.Server, from: e.From, helo: e.HeloName,
		to: e.To, timeout: e.ConnectTimeout, noFaults: e.NoFaults, log: log,
		Now: time.Now, q: make(chan Message, QueueSize), done: make(chan struct{}),
		last: map[string]string{},
	}
	// keepalived's defaults: USER@HOST and the host name.
	if m.from == "" && host != "" {
		name := "root"
		if u, err := user.Current(); err == nil {
			name = u.Username
		}
		m.from = name + "@" + host
	}
	if m.helo == "" {
		m.helo = host
	}
	if m.helo == "" {
		m.helo = "localhost"
	}
	if m.timeout <= 0 {
		m.timeout = 30 * time.Second
	}
	m.ctx, m.stop = context.WithCancel(context.Background())
	go m.run()
	return m
}

// RouterID is the router_id in the alerts' subjects.
func (m *Mailer) RouterID() string { return m.routerID }

// Send queues msg and returns at once; when the queue is full it drops
// msg and counts it.
func (m *Mailer) Send(msg Message) {
	if m == nil {
		return
	}
	if m.ctx.Err() != nil {
		m.dropped.Add(1)
		return
	}
	m.mu.Lock()
	m.pending++
	m.mu.Unlock()
	select {
	case m.q <- msg:
	default:
		m.finished()
		m.dropped.Add(1)
		m.log.Warn("smtp alert dropped: the queue is full", "subject", msg.Subject, "dropped", m.dropped.Load())
	}
}

// Instance mails VRRP instance name entering state, unless that state was
// the last one mailed for it, or it is FAULT and no_email_faults is set
// (keepalived's vrrp_smtp_notifier).
func (m *Mailer) Instance(name, state string) {
	if m == nil || !m.changed("INSTANCE "+name, state) {
		return
	}
	if msg, ok := Instance(m.routerID, name, state); ok {
		m.Send(msg)
	}
}

// Group is Instance for a sync group.
func (m *Mailer) Group(name, state string) {
	if m == nil || state == "DELETED" || !m.changed("GROUP "+name, state) {
		return
	}
	if msg, ok := Group(m.routerID, name, state); ok {
		m.Send(msg)
	}
}

func (m *Mailer) changed(key, state string) bool {
	if m.noFaults && state == "FAULT" {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.last[key] == state {
		return false
	}
	m.last[key] = state
	return true
}

// Stats are the counts of mails sent, failed and dropped.
func (m *Mailer) Stats() (sent, failed, dropped uint64) {
	if m == nil {
		return 0, 0, 0
	}
	return m.sent.Load(), m.failed.Load(), m.dropped.Load()
}

// Close stops the Mailer: a mail being sent is cut, those queued are
// dropped. It returns once its goroutine has ended.
func (m *Mailer) Close() {
	if m == nil {
		return
	}
	m.stop()
	<-m.done
}

func (m *Mailer) run() {
	defer close(m.done)
	for {
		var msg Message
		select {
		case <-m.ctx.Done():
			return
		case msg = <-m.q:
		}
		if err := m.mail(m.ctx, msg); err != nil {
			m.failed.Add(1)
			m.log.Warn("smtp alert not sent", "server", m.server, "subject", msg.Subject, "err", err)
		} else {
			m.sent.Add(1)
			m.log.Info("smtp alert sent", "server", m.server, "subject", msg.Subject)
		}
		m.finished()
	}
}

func (m *Mailer) finished() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pending--
	if m.pending == 0 && m.idle != nil {
		close(m.idle)
		m.idle = nil
	}
}

// Flush waits until every queued alert has been sent or given up, or ctx
// ends: at stop, so that the last transitions (Stopping) are mailed.
func (m *Mailer) Flush(ctx context.Context) error {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	if m.pending == 0 {
		m.mu.Unlock()
		return nil
	}
	if m.idle == nil {
		m.idle = make(chan struct{})
	}
	idle := m.idle
	m.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-m.done:
		return nil
	}
}

// mail runs keepalived's dialogue: 220, HELO, MAIL FROM, RCPT TO for each
// address, DATA, the message, QUIT. Each step has m.timeout.
func (m *Mailer) mail(ctx context.Context, msg Message) error {
	d := net.Dialer{Timeout: m.timeout}
	conn, err := d.DialContext(ctx, "tcp", m.server)
	if err != nil {
		return err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	r := bufio.NewReader(conn)
	step := func(cmd string, want int) error {
		if err := conn.SetDeadline(time.Now().Add(m.timeout)); err != nil {
			return err
		}
		if cmd != "" {
			if _, err := conn.Write([]byte(cmd)); err != nil {
				return err
			}
		}
		code, err := readReply(r)
		if err != nil {
			return err
		}
		if code != want {
			name, _, _ := strings.Cut(strings.TrimSpace(cmd), " ")
			if name == "" {
				name = "(E)SMTP"
			} else if len(cmd) > 200 {
				name = "BODY"
			}
			return &replyError{name, code}
		}
		return nil
	}
	quit := func(err error) error {
		var re *replyError
		if errors.As(err, &re) {
			// keepalived says QUIT after an unexpected code.
			step("QUIT\r\n", 221)
		}
		return err
	}
	if err := step("", 220); err != nil {
		return quit(err)
	}
	if err := step("HELO "+m.helo+"\r\n", 250); err != nil {
		return quit(err)
	}
	if err := step("MAIL FROM:<"+m.from+">\r\n", 250); err != nil {
		return quit(err)
	}
	for _, to := range m.to {
		if err := step("RCPT TO:<"+to+">\r\n", 250); err != nil {
			return quit(err)
		}
	}
	if err := step("DATA\r\n", 354); err != nil {
		return quit(err)
	}
	if err := step(m.data(msg), 250); err != nil {
		return quit(err)
	}
	return step("QUIT\r\n", 221)
}

// data is the message as keepalived writes it after DATA, ending in the
// lone dot. A body line starting with a dot is doubled (RFC 5321
// 4.5.2); keepalived's own bodies have none.
func (m *Mailer) data(msg Message) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Date: %s\r\nFrom: %s\r\nSubject: %s\r\nX-Mailer: Keepalived\r\nTo: %s\r\n\r\n",
		m.Now().Format("Mon, 02 Jan 2006 15:04:05 -0700"), m.from, msg.Subject, strings.Join(m.to, ", "))
	for i, line := range strings.Split(msg.Body, "\n") {
		if i > 0 {
			b.WriteString("\r\n")
		}
		line = strings.TrimSuffix(line, "\r")
		if strings.HasPrefix(line, ".") {
			b.WriteByte('.')
		}
		b.WriteString(line)
	}
	b.WriteString("\r\n\r\n.\r\n")
	return b.String()
}

type replyError struct {
	cmd  string
	code int
}

func (e *replyError) Error() string {
	return fmt.Sprintf("error processing %s cmd: SMTP status code = %d", e.cmd, e.code)
}

// readReply reads one reply, multi-line or not, and returns its code: the
// last line's, as keepalived.
func readReply(r *bufio.Reader) (int, error) {
	for n := 0; ; n++ {
		line, err := r.ReadString('\n')
		if err != nil {
			return 0, err
		}
		if len(line) > 1024 || n > 100 {
			return 0, errors.New("reply too long")
		}
		line = strings.TrimRight(line, "\r\n")
		if len(line) < 3 {
			return 0, fmt.Errorf("malformed reply %q", line)
		}
		if len(line) > 3 && line[3] == '-' {
			continue
		}
		code := 0
		for _, c := range line[:3] {
			if c < '0' || c > '9' {
				return 0, fmt.Errorf("malformed reply %q", line)
			}
			code = code*10 + int(c-'0')
		}
		return code, nil
	}
}
