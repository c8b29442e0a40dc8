package healthcheck

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/directord/directord/config"
	"github.com/directord/directord/internal/script"
)

// Misc is MISC_CHECK: a script that exits 0 when the real server works.
// With misc_dynamic, 1 is a failure and 2 to 255 a success that sets the
// weight to the code less 2, as keepalived does.
type Misc struct {
	clocked
	Script  *config.Script
	Timeout time.Duration
	Dynamic bool
	Runner  script.Runner
}

// NewMisc makes the prober of a MISC_CHECK. A script disabled at load
// (enable_script_security refuses it, it cannot be found or run: see
// internal/script) is an error wrapping script.ErrDisabled.
func NewMisc(c *config.Checker, g *config.Global) (*Misc, error) {
	m := c.Misc
	if m == nil || m.Script == nil || len(m.Script.Args) == 0 {
		return nil, errors.New("MISC_CHECK without misc_path")
	}
	runner := script.NewRunner(g)
	if p := runner.Prog(m.Script); p.Disabled != nil {
		return nil, p.Disabled
	}
	t := m.Timeout
	if t <= 0 {
		t = c.DelayLoop
	}
	return &Misc{Script: m.Script, Timeout: t, Dynamic: m.Dynamic,
		Runner: runner}, nil
}

// Probe runs the script.
func (p *Misc) Probe(ctx context.Context) Result {
	start := p.clock.Now()
	r := p.Runner.Run(ctx, p.Script, p.Timeout)
	res := p.clock.done(Result{Weight: -1}, start)
	switch {
	case r.TimedOut:
		res.Outcome, res.Reason = Down, fmt.Sprintf("timed out after %s", p.Timeout)
	case r.Err != nil:
		// The script could not start: a missing or unexecutable script is
		// the operator's to fix and fails the check; anything else (no
		// memory, no process, no such script user just now) is this
		// director's trouble and proves nothing of the real server.
		res.Outcome, res.Reason = Unknown, r.Err.Error()
		if errors.Is(r.Err, syscall.ENOENT) || errors.Is(r.Err, syscall.EACCES) || errors.Is(r.Err, syscall.ENOEXEC) {
			res.Outcome = Down
		}
	case r.ExitCode == 0:
		res.Outcome, res.Reason = Up, "exit 0"
	case p.Dynamic && r.ExitCode >= 2:
		res.Outcome, res.Reason, res.Weight = Up, fmt.Sprintf("exit %d: weight %d", r.ExitCode, r.ExitCode-2), r.ExitCode-2
	default:
		res.Outcome, res.Reason = Down, fmt.Sprintf("exit %d", r.ExitCode)
	}
	return res
}
