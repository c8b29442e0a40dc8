package notifyfifo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/directord/directord/config"
	"github.com/directord/directord/internal/script"
	"github.com/directord/directord/internal/users"
)

// ScriptGrace is how long a FIFO's script has, after directord closed the
// FIFO, to read the last lines and end on its own before it is stopped
// (SIGTERM, then SIGKILL script.KillDelay later).
const ScriptGrace = 2 * time.Second

// FIFO is one open notify FIFO.
type FIFO struct {
	Path    string
	fd      int
	created bool // directord made it: it removes it at Close
	dropped atomic.Uint64
	log     *slog.Logger

	mu     sync.Mutex
	closed bool
	stop   context.CancelFunc // the script's
	ended  chan struct{}      // closed when the script has ended
}

// Open creates the FIFO of nf if it does not exist (mode 0644, owned by
// nf's user and group, else the default script user), as keepalived's
// fifo_open does, opens it, and starts its script, if any, with the
// FIFO's path as the last argument, for as long as the FIFO is open. An
// existing file that is not a FIFO, or a symbolic link, is refused.
func Open(nf *config.NotifyFIFO, r script.Runner, log *slog.Logger) (*FIFO, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	uid, gid, known := owner(nf, r)
	if nf.User != "" && !known {
		// keepalived's notify_fifo: "Invalid user/group for %s fifo %s -
		// ignoring", with no FIFO at all.
		return nil, fmt.Errorf("invalid user %q or group %q for %s: keepalived ignores the FIFO", nf.User, nf.Group, nf.Path)
	}
	f := &FIFO{Path: nf.Path, fd: -1, log: log}
	err := syscall.Mkfifo(nf.Path, 0o644)
	switch {
	case err == nil:
		f.created = true
		// mkfifo is subject to the umask: set the mode keepalived asks for.
		os.Chmod(nf.Path, 0o644)
		if known && (uid != os.Geteuid() || gid != os.Getegid()) {
			if err := os.Lchown(nf.Path, uid, gid); err != nil {
				log.Warn("notify fifo: cannot set its owner", "fifo", nf.Path, "err", err)
			}
		}
	case errors.Is(err, syscall.EEXIST):
	default:
		return nil, fmt.Errorf("create notify fifo %s: %w", nf.Path, err)
	}
	fd, err := syscall.Open(nf.Path, syscall.O_RDWR|syscall.O_CLOEXEC|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err == nil {
		var st syscall.Stat_t
		if err = syscall.Fstat(fd, &st); err == nil && st.Mode&syscall.S_IFMT != syscall.S_IFIFO {
			err = errors.New("not a FIFO")
		}
		if err != nil {
			syscall.Close(fd)
		}
	}
	if err != nil {
		if f.created {
			os.Remove(nf.Path)
		}
		return nil, fmt.Errorf("open notify fifo %s: %w", nf.Path, err)
	}
	f.fd = fd
	if nf.Script != nil {
		f.startScript(r, nf.Script)
	}
	return f, nil
}

// owner is the uid and gid a created FIFO gets: the keyword's user and
// group, else script_user's, else keepalived_script's if it exists, as
// keepalived's get_default_script_user.
func owner(nf *config.NotifyFIFO, r script.Runner) (int, int, bool) {
	name, group := nf.User, nf.Group
	if name == "" {
		name, group = r.User, r.Group
	}
	if name == "" {
		name = "keepalived_script"
	}
	u, err := users.Lookup(name)
	if err != nil {
		return 0, 0, false
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if group != "" {
		g, err := users.LookupGroup(group)
		if err != nil {
			return 0, 0, false
		}
		gid, _ = strconv.Atoi(g.Gid)
	}
	return uid, gid, true
}

func (f *FIFO) startScript(r script.Runner, s *config.Script) {
	ctx, cancel := context.WithCancel(context.Background())
	f.stop, f.ended = cancel, make(chan struct{})
	go func() {
		defer close(f.ended)
		res := r.Run(ctx, s, 0, f.Path)
		if ctx.Err() == nil {
			f.log.Warn("notify fifo script ended", "fifo", f.Path, "script", s.Command, "exit", res.ExitCode, "err", res.Err)
		}
	}()
}

// Write writes one line, which must end in a newline, without blocking:
// when the pipe is full it is dropped and counted.
func (f *FIFO) Write(line string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return
	}
	for {
		n, err := syscall.Write(f.fd, []byte(line))
		if err == syscall.EINTR {
			continue
		}
		if err != nil || n != len(line) {
			if f.dropped.Add(1) == 1 || !errors.Is(err, syscall.EAGAIN) {
				f.log.Warn("notify fifo full or failing: line dropped", "fifo", f.Path, "err", err, "dropped", f.dropped.Load())
			}
		}
		return
	}
}

// Dropped counts the lines that could not be written.
func (f *FIFO) Dropped() uint64 { return f.dropped.Load() }

// Close removes the FIFO if directord made it, then closes it, as
// keepalived's fifo_close (removed first: a script that reopens it in a
// loop cannot find it again); its script is given ScriptGrace to end.
func (f *FIFO) Close() {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return
	}
	f.closed = true
	if f.created {
		os.Remove(f.Path)
	}
	syscall.Close(f.fd)
	f.mu.Unlock()
	if f.stop == nil {
		return
	}
	t := time.NewTimer(ScriptGrace)
	defer t.Stop()
	select {
	case <-f.ended:
	case <-t.C:
	}
	f.stop()
	<-f.ended
}
