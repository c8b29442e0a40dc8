// Package script runs the operator's scripts (vrrp_script checks, notify
// scripts, MISC_CHECK) as keepalived does: the command line split into words
// and executed directly, without a shell, as the configured user, in a
// process group of its own that is killed whole when the time runs out.
package script

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/directord/directord/config"
)

// Runner runs scripts with default credentials.
type Runner struct {
	// User and Group run scripts that name none (global_defs script_user);
	// empty means keepalived_script if that user exists, else the user
	// directord runs as.
	User, Group string
	// TermGrace, if set, stops a script that outlives its time as
	// keepalived stops a MISC_CHECK (check_misc.c): SIGTERM to its
	// process group, SIGKILL to the group TermGrace later if it is still
	// there, and SIGKILL to the group once the script ended by the
	// SIGTERM, for its children. Zero kills the group at once.
	TermGrace time.Duration
}

// Result is how a run ended.
type Result struct {
	ExitCode int // -1 when killed or not started
	TimedOut bool
	Err      error // the script could not be started, or was killed
}

// OK reports whether the script exited 0.
func (r Result) OK() bool { return r.Err == nil && r.ExitCode == 0 }

// Run runs s with extra arguments appended and waits for it, at most
// timeout (0: no limit beyond ctx).
func (r Runner) Run(ctx context.Context, s *config.Script, timeout time.Duration, extra ...string) Result {
	if s == nil || len(s.Args) == 0 {
		return Result{ExitCode: -1, Err: errors.New("no command")}
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	args := append(append([]string{}, s.Args[1:]...), extra...)
	cmd := exec.CommandContext(ctx, s.Args[0], args...)
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	cred, err := r.credential(s)
	if err != nil {
		return Result{ExitCode: -1, Err: err}
	}
	cmd.SysProcAttr.Credential = cred
	cmd.Cancel = func() error {
		// The whole group: a script's children must not outlive it.
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = time.Second
	var kill atomic.Pointer[time.Timer] // set by Cancel, in exec's goroutine
	if g := r.TermGrace; g > 0 {
		cmd.Cancel = func() error {
			pid := cmd.Process.Pid
			kill.Store(time.AfterFunc(g, func() { syscall.Kill(-pid, syscall.SIGKILL) }))
			return syscall.Kill(-pid, syscall.SIGTERM)
		}
		// Go's own kill of the script comes after ours.
		cmd.WaitDelay = g + time.Second
	}
	err = cmd.Run()
	if k := kill.Load(); k != nil {
		k.Stop()
		if cmd.Process != nil {
			// Its children, if the script went at the SIGTERM.
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}
	res := Result{ExitCode: cmd.ProcessState.ExitCode()}
	if ctx.Err() == context.DeadlineExceeded {
		res.TimedOut = true
		res.Err = fmt.Errorf("%s: timed out after %v", s.Args[0], timeout)
		return res
	}
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		res.Err = fmt.Errorf("%s: %w", s.Args[0], err)
	}
	return res
}

// credential resolves the user and group a script runs as; nil keeps
// directord's own.
func (r Runner) credential(s *config.Script) (*syscall.Credential, error) {
	name, group := s.User, s.Group
	if name == "" {
		name, group = r.User, r.Group
	}
	if name == "" {
		if _, err := user.Lookup("keepalived_script"); err != nil {
			return nil, nil
		}
		name = "keepalived_script"
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("script user %s: %w", name, err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	if group != "" {
		g, err := user.LookupGroup(group)
		if err != nil {
			return nil, fmt.Errorf("script group %s: %w", group, err)
		}
		gid, _ = strconv.ParseUint(g.Gid, 10, 32)
	}
	if int(uid) == os.Getuid() && int(gid) == os.Getgid() {
		return nil, nil
	}
	// Only the script's own group: directord's supplementary groups (root,
	// disk...) must not go with it.
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{uint32(gid)}}, nil
}
