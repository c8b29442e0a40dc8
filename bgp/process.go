package bgp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/directord/directord/config"
)

// HelperName is the speaker's helper program, installed beside directord.
const HelperName = "directord-bgp"

// Backoff bounds of Process's restarts.
const (
	DefaultMinBackoff = time.Second
	DefaultMaxBackoff = 30 * time.Second
)

// Process is a Speaker run in the helper process directord-bgp (see
// proto.go). It starts the helper at Start, in directord's network
// namespace and in a process group of its own (a ^C on directord's
// terminal goes to directord, which withdraws first), relays the
// helper's log records into Log, and, if the helper dies, starts it
// again after a backoff (1 s, doubling up to 30 s) and replays what it
// had been told: Start with the latest Configure's block, then every
// route announced, so that the routes come back. Stop stops the speaker
// and waits for the helper to exit. If directord itself dies, even by
// SIGKILL, the helper reads the end of its standard input, closes every
// session with a Cease and exits: no speaker is left announcing.
type Process struct {
	// Path is the helper; empty, directord-bgp in the folder of
	// os.Executable().
	Path string
	// Log receives the helper's records and the restarts.
	Log *slog.Logger
	// OnSession, if set before Start, sees every session change; it must
	// not block. When the helper dies, each neighbor not idle is reported
	// idle, "the speaker's process exited".
	OnSession func(SessionEvent)
	// MinBackoff and MaxBackoff bound the wait before a restart (0: the
	// defaults).
	MinBackoff, MaxBackoff time.Duration

	// launch starts a helper (tests: an in-process Server).
	launch func(ctx context.Context) (*helper, error)

	mu      sync.Mutex
	cur     *link // nil while the helper is down
	cfg     *config.BGP
	routes  map[netip.Prefix]bool
	states  map[netip.Addr]SessionState
	cancel  context.CancelFunc // ends the supervisor; nil when not running
	superOK chan struct{}      // closed when the supervisor returned
}

// helper is one running helper process: its standard input, output and
// error, and how to wait for it and kill it.
type helper struct {
	stdin  io.WriteCloser
	stdout io.Reader
	stderr io.Reader // nil: nothing to relay
	wait   func() error
	kill   func()
	pid    int
}

// NewProcess makes a Process logging to log; it runs nothing before
// Start.
func NewProcess(log *slog.Logger) *Process {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Process{Log: log}
}

// HelperPath is where the helper is: path if set, else beside the running
// executable. The error names the path when nothing is there.
func HelperPath(path string) (string, error) {
	if path == "" {
		exe, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("bgp: find %s: %w", HelperName, err)
		}
		path = filepath.Join(filepath.Dir(exe), HelperName)
	}
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("bgp: the BGP speaker's program %s is missing (it is installed beside directord): %w", path, err)
	}
	return path, nil
}

// execHelper starts the helper program.
func (p *Process) execHelper(ctx context.Context) (*helper, error) {
	path, err := HelperPath(p.Path)
	if err != nil {
		return nil, err
	}
	var args []string
	if p.Log.Enabled(ctx, slog.LevelDebug) {
		args = append(args, "-D")
	}
	// The helper's descriptor 3 is directord's own standard error (the
	// journal, under systemd): where it writes its last records if
	// directord dies, when nobody reads its pipe any more. Not if that
	// is closed: the helper starts without it.
	var extra []*os.File
	if _, err := os.Stderr.Stat(); err == nil {
		extra = []*os.File{os.Stderr}
		args = append(args, "-last-words", "3")
	}
	cmd := exec.Command(path, args...)
	cmd.ExtraFiles = extra
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	errOut, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("bgp: start %s: %w", path, err)
	}
	return &helper{stdin: in, stdout: out, stderr: errOut, wait: cmd.Wait, pid: cmd.Process.Pid,
		kill: func() { _ = cmd.Process.Kill() }}, nil
}

// start starts a helper and reads it; the link's done is closed once it
// has exited.
func (p *Process) start(ctx context.Context) (*link, *helper, error) {
	launch := p.launch
	if launch == nil {
		launch = p.execHelper
	}
	h, err := launch(ctx)
	if err != nil {
		return nil, nil, err
	}
	l := newLink(h.stdin)
	relayed := make(chan struct{})
	go func() {
		defer close(relayed)
		if h.stderr != nil {
			relayLog(p.Log, h.stderr)
		}
	}()
	go func() {
		err := l.read(h.stdout, p.event, func(err error) { p.Log.Error("bgp: speaker's process", "err", err) })
		<-relayed
		if werr := h.wait(); werr != nil {
			err = werr
		}
		l.err = err
		close(l.done)
	}()
	return l, h, nil
}

// event passes a session event on, and keeps each neighbor's state.
func (p *Process) event(ev SessionEvent) {
	p.mu.Lock()
	if p.states == nil {
		p.states = map[netip.Addr]SessionState{}
	}
	p.states[ev.Neighbor] = ev.State
	p.mu.Unlock()
	if p.OnSession != nil {
		p.OnSession(ev)
	}
}

// lost reports every neighbor not idle as idle: the helper is gone.
func (p *Process) lost() {
	p.mu.Lock()
	var evs []SessionEvent
	for a, st := range p.states {
		if st != Idle {
			evs = append(evs, SessionEvent{Neighbor: a, State: Idle, Reason: "the speaker's process exited"})
			p.states[a] = Idle
		}
	}
	p.mu.Unlock()
	for _, ev := range evs {
		if p.OnSession != nil {
			p.OnSession(ev)
		}
	}
}

// Start starts the helper and its speaker with cfg.
func (p *Process) Start(ctx context.Context, cfg *config.BGP) error {
	p.mu.Lock()
	running := p.cancel != nil
	p.mu.Unlock()
	if running {
		return errors.New("bgp: the speaker is already running")
	}
	l, h, err := p.start(ctx)
	if err != nil {
		return err
	}
	if _, err := l.call(ctx, request{Op: opStart, BGP: cfg}); err != nil {
		p.end(l, h)
		return err
	}
	sctx, cancel := context.WithCancel(context.Background())
	p.mu.Lock()
	p.cur, p.cfg, p.routes, p.cancel = l, cfg, map[netip.Prefix]bool{}, cancel
	p.superOK = make(chan struct{})
	p.mu.Unlock()
	go p.supervise(sctx, l)
	return nil
}

// end closes a helper's standard input, which stops it, and waits for it
// (killed if it does not exit within 15 s).
func (p *Process) end(l *link, h *helper) {
	h.stdin.Close()
	t := time.NewTimer(15 * time.Second)
	defer t.Stop()
	select {
	case <-l.done:
	case <-t.C:
		h.kill()
		<-l.done
	}
}

// supervise starts the helper again each time it dies, until ctx ends.
func (p *Process) supervise(ctx context.Context, l *link) {
	defer close(p.superOK)
	lo, hi := p.MinBackoff, p.MaxBackoff
	if lo <= 0 {
		lo = DefaultMinBackoff
	}
	if hi <= 0 {
		hi = DefaultMaxBackoff
	}
	backoff := lo
	for {
		since := time.Now()
		select {
		case <-l.done:
		case <-ctx.Done():
			return
		}
		p.mu.Lock()
		if p.cur == l {
			p.cur = nil
		}
		p.mu.Unlock()
		p.lost()
		if time.Since(since) >= hi {
			backoff = lo // it had run well
		}
		err := l.err
		for {
			p.Log.Error("bgp: the speaker's process exited; starting it again", "in", backoff.String(), "err", err)
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
			backoff = min(2*backoff, hi)
			var nl *link
			if nl, err = p.replay(ctx); err == nil {
				l = nl
				break
			}
		}
	}
}

// replay starts a helper and gives it the running block and routes, then
// makes it the current one.
func (p *Process) replay(ctx context.Context) (*link, error) {
	l, h, err := p.start(ctx)
	if err != nil {
		return nil, err
	}
	var sentCfg *config.BGP
	sent := map[netip.Prefix]bool{}
	for {
		p.mu.Lock()
		if ctx.Err() != nil {
			p.mu.Unlock()
			p.end(l, h)
			return nil, ctx.Err()
		}
		cfg := p.cfg
		var add, del []netip.Prefix
		for r := range p.routes {
			if !sent[r] {
				add = append(add, r)
			}
		}
		for r := range sent {
			if !p.routes[r] {
				del = append(del, r)
			}
		}
		if cfg == sentCfg && len(add) == 0 && len(del) == 0 {
			p.cur = l
			p.mu.Unlock()
			p.Log.Info("bgp: the speaker's process runs again", "pid", h.pid, "routes", len(sent))
			return l, nil
		}
		p.mu.Unlock()
		op := opStart
		if sentCfg != nil {
			op = opConfigure
		}
		if cfg != sentCfg {
			if _, err := l.call(ctx, request{Op: op, BGP: cfg}); err != nil {
				p.end(l, h)
				return nil, err
			}
			sentCfg = cfg
		}
		for _, r := range add {
			if _, err := l.call(ctx, request{Op: opAnnounce, Prefix: r}); err != nil {
				if errors.Is(err, ErrSpeakerDown) {
					p.end(l, h)
					return nil, err
				}
				p.Log.Error("bgp: announce again", "prefix", r.String(), "err", err)
			}
			sent[r] = true
		}
		for _, r := range del {
			if _, err := l.call(ctx, request{Op: opWithdraw, Prefix: r}); err != nil && errors.Is(err, ErrSpeakerDown) {
				p.end(l, h)
				return nil, err
			}
			delete(sent, r)
		}
	}
}

// current is the helper to call, or an error saying why there is none.
func (p *Process) current(what string) (*link, error) {
	if p.cancel == nil {
		return nil, errors.New("bgp: the speaker is not running")
	}
	if p.cur == nil {
		return nil, fmt.Errorf("bgp: %s: %w", what, ErrSpeakerDown)
	}
	return p.cur, nil
}

// Configure moves the speaker to cfg (kept for a restart).
func (p *Process) Configure(ctx context.Context, cfg *config.BGP) error {
	p.mu.Lock()
	l, err := p.current("configure")
	if p.cancel != nil {
		p.cfg = cfg
	}
	p.mu.Unlock()
	if err != nil {
		return err
	}
	_, err = l.call(ctx, request{Op: opConfigure, BGP: cfg})
	return err
}

// Announce announces pr (kept for a restart).
func (p *Process) Announce(ctx context.Context, pr netip.Prefix) error {
	p.mu.Lock()
	l, err := p.current("announce " + pr.String())
	if p.cancel != nil {
		p.routes[pr] = true
	}
	p.mu.Unlock()
	if err != nil {
		return err
	}
	_, err = l.call(ctx, request{Op: opAnnounce, Prefix: pr})
	return err
}

// Withdraw withdraws pr.
func (p *Process) Withdraw(ctx context.Context, pr netip.Prefix) error {
	p.mu.Lock()
	if p.cancel == nil {
		p.mu.Unlock()
		return nil
	}
	delete(p.routes, pr)
	l, err := p.current("withdraw " + pr.String())
	p.mu.Unlock()
	if err != nil {
		return err
	}
	_, err = l.call(ctx, request{Op: opWithdraw, Prefix: pr})
	return err
}

// Neighbors is the helper's word on its neighbors.
func (p *Process) Neighbors(ctx context.Context) ([]NeighborStatus, error) {
	p.mu.Lock()
	if p.cancel == nil {
		p.mu.Unlock()
		return nil, nil
	}
	l, err := p.current("neighbors")
	p.mu.Unlock()
	if err != nil {
		return nil, err
	}
	m, err := l.call(ctx, request{Op: opNeighbors})
	return m.Neighbors, err
}

// Stop closes every session, then ends the helper and waits for it.
func (p *Process) Stop(ctx context.Context) error {
	p.mu.Lock()
	cancel, l, superOK := p.cancel, p.cur, p.superOK
	p.cancel, p.cur, p.routes = nil, nil, nil
	p.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	<-superOK
	if l == nil {
		return nil
	}
	_, err := l.call(ctx, request{Op: opStop})
	l.in.Close()
	select {
	case <-l.done:
	case <-ctx.Done():
		err = errors.Join(err, fmt.Errorf("bgp: the speaker's process did not exit: %w", ctx.Err()))
	}
	return err
}

// relayLog logs each of the helper's slog JSON lines into log with its
// level, message and attributes; a line that is not one (a panic's
// trace) is logged as an error, whole.
func relayLog(log *slog.Logger, r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	ctx := context.Background()
	for sc.Scan() {
		lvl, msg, attrs, ok := parseRecord(sc.Bytes())
		if !ok {
			log.Error("bgp: speaker's process", "output", sc.Text())
			continue
		}
		log.LogAttrs(ctx, lvl, msg, attrs...)
	}
}

// parseRecord reads one record of slog's JSON handler, its attributes in
// their order.
func parseRecord(b []byte) (slog.Level, string, []slog.Attr, bool) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return 0, "", nil, false
	}
	lvl, msg := slog.LevelInfo, ""
	var attrs []slog.Attr
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return 0, "", nil, false
		}
		k, _ := t.(string)
		var v any
		if err := d.Decode(&v); err != nil {
			return 0, "", nil, false
		}
		switch k {
		case slog.TimeKey:
		case slog.LevelKey:
			s, _ := v.(string)
			if lvl.UnmarshalText([]byte(s)) != nil {
				lvl = slog.LevelInfo
			}
		case slog.MessageKey:
			msg, _ = v.(string)
		default:
			// The helper's own key, relayed as it is (its log calls
			// are this project's, and use the documented keys).
			attrs = append(attrs, slog.Attr{Key: k, Value: slog.AnyValue(v)})
		}
	}
	return lvl, msg, attrs, true
}
