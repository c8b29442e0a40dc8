// Package script runs the operator's scripts (vrrp_script checks, notify
// scripts, MISC_CHECK) as keepalived does: the command line split into words
// and executed directly, without a shell, as the configured user, in a
// process group of its own that is asked to stop (SIGTERM) when the time
// runs out and killed whole (SIGKILL) two seconds later.
//
// Every script is checked once, at load and at each reload (Check,
// CheckConfig): enable_script_security and script_user are applied as
// keepalived applies them, and what runs afterwards is the file that was
// checked (Prog.Path), whatever a link on the way is repointed to.
package script

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"
	"weak"

	"github.com/directord/directord/config"
)

// KillDelay is how long a timed-out script has between SIGTERM and
// SIGKILL, as in keepalived.
const KillDelay = 2 * time.Second

// Runner runs scripts under a configuration's policy.
type Runner struct {
	// User and Group run scripts that name none (global_defs script_user);
	// empty means keepalived_script if that user exists, else the user
	// directord runs as.
	User, Group string
	// Security is enable_script_security.
	Security bool
}

// NewRunner is the runner of a configuration's global_defs.
func NewRunner(g *config.Global) Runner {
	return Runner{User: g.ScriptUser, Group: g.ScriptGroup, Security: g.EnableScriptSecurity}
}

func (r Runner) policy() Policy { return Policy{Security: r.Security, User: r.User, Group: r.Group} }

// Result is how a run ended.
type Result struct {
	ExitCode int // -1 when killed or not started
	TimedOut bool
	Err      error // the script could not be started, or was killed, or is disabled (ErrDisabled)
}

// OK reports whether the script exited 0.
func (r Result) OK() bool { return r.Err == nil && r.ExitCode == 0 }

// checked holds each script's check, made once per script and policy: a
// reload parses new scripts and checks them afresh. Its keys do not keep
// a configuration alive.
var checked sync.Map // progKey -> *Prog

type progKey struct {
	s weak.Pointer[config.Script]
	p Policy
}

// Prog is s as checked under the runner's policy: at the first call, then
// the same answer (the check is of load time, as keepalived's).
func (r Runner) Prog(s *config.Script) *Prog {
	if s == nil {
		return Check(nil, r.policy())
	}
	k := progKey{weak.Make(s), r.policy()}
	v, ok := checked.Load(k)
	if !ok {
		pr := Check(s, k.p)
		pr.Script = nil // the map must not keep the script alive
		var loaded bool
		if v, loaded = checked.LoadOrStore(k, pr); !loaded {
			runtime.AddCleanup(s, func(k progKey) { checked.Delete(k) }, k)
		}
	}
	pr := *v.(*Prog)
	pr.Script = s
	return &pr
}

// Run runs s with extra arguments appended and waits for it, at most
// timeout (0: no limit beyond ctx). A disabled script does not run: its
// Result's Err wraps ErrDisabled.
func (r Runner) Run(ctx context.Context, s *config.Script, timeout time.Duration, extra ...string) Result {
	pr := r.Prog(s)
	if pr.Disabled != nil {
		return Result{ExitCode: -1, Err: pr.Disabled}
	}
	return pr.Run(ctx, timeout, extra...)
}

// Run runs the checked file with the script's arguments and extra.
func (pr *Prog) Run(ctx context.Context, timeout time.Duration, extra ...string) Result {
	if pr.Disabled != nil {
		return Result{ExitCode: -1, Err: pr.Disabled}
	}
	s := pr.Script
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	// The file that was checked, under the name as written (argv[0]): some
	// programs behave by the name they are called by.
	cmd := &exec.Cmd{Path: pr.Path, Args: append(append([]string{s.Args[0]}, s.Args[1:]...), extra...)}
	cmd.Env = []string{"PATH=" + searchPath}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM, Credential: pr.cred}
	if err := cmd.Start(); err != nil {
		return Result{ExitCode: -1, Err: fmt.Errorf("%s: %w", s.Args[0], err)}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	stopped := false
	select {
	case err = <-done:
	case <-ctx.Done():
		stopped = true
		err = terminate(cmd.Process.Pid, done)
	}
	res := Result{ExitCode: cmd.ProcessState.ExitCode()}
	if stopped {
		if ctx.Err() == context.DeadlineExceeded {
			res.TimedOut = true
			res.Err = fmt.Errorf("%s: timed out after %v", s.Args[0], timeout)
		} else {
			res.Err = fmt.Errorf("%s: %w", s.Args[0], ctx.Err())
		}
		return res
	}
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		res.Err = fmt.Errorf("%s: %w", s.Args[0], err)
	}
	return res
}

// terminate stops a script's process group as keepalived does: SIGTERM,
// then SIGKILL KillDelay later if the script has not ended. The rest of
// the group is killed once the script has ended: its children must not
// outlive it.
func terminate(pid int, done <-chan error) error {
	syscall.Kill(-pid, syscall.SIGTERM)
	t := time.NewTimer(KillDelay)
	defer t.Stop()
	var err error
	select {
	case err = <-done:
	case <-t.C:
		syscall.Kill(-pid, syscall.SIGKILL)
		err = <-done
	}
	syscall.Kill(-pid, syscall.SIGKILL)
	return err
}

// User is the uid:gid a checked script runs as, for logs.
func (pr *Prog) User() string {
	if pr.cred == nil {
		return fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid())
	}
	return fmt.Sprintf("%d:%d", pr.Uid, pr.Gid)
}
