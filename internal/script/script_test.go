package script

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/directord/directord/config"
)

func cmd(t *testing.T, line string) *config.Script {
	t.Helper()
	cfg, diags := config.Parse("/k.conf", "vrrp_script s {\n script \""+line+"\"\n}\n", nil, config.Options{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return cfg.Scripts[0].Script
}

func TestRun(t *testing.T) {
	r := Runner{}
	ctx := context.Background()
	if res := r.Run(ctx, cmd(t, "/bin/true"), time.Second); !res.OK() {
		t.Errorf("true: %+v", res)
	}
	if res := r.Run(ctx, cmd(t, "/bin/sh -c 'exit 7'"), time.Second); res.OK() || res.ExitCode != 7 || res.Err != nil {
		t.Errorf("exit 7: %+v", res)
	}
	if res := r.Run(ctx, cmd(t, "/nonexistent/script"), time.Second); res.OK() || res.Err == nil {
		t.Errorf("missing: %+v", res)
	}
	// Extra arguments arrive as separate words, quotes respected.
	out := filepath.Join(t.TempDir(), "args")
	s := &config.Script{Args: []string{"/bin/sh", "-c", `printf '%s\n' "$@" > ` + out, "sh", "a b"}}
	if res := r.Run(ctx, s, time.Second, "INSTANCE", "VI 1", "MASTER", "100"); !res.OK() {
		t.Fatalf("%+v", res)
	}
	b, _ := os.ReadFile(out)
	if got, want := string(b), "a b\nINSTANCE\nVI 1\nMASTER\n100\n"; got != want {
		t.Errorf("arguments:\n%q\nwant\n%q", got, want)
	}
}

// TestTimeoutKillsTheGroup: a script that outlives its timeout is killed
// with its children.
func TestTimeoutKillsTheGroup(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "late")
	s := cmd(t, "/bin/sh -c '(sleep 2; touch "+marker+") & sleep 5'")
	start := time.Now()
	res := Runner{}.Run(context.Background(), s, 200*time.Millisecond)
	if !res.TimedOut || res.OK() {
		t.Fatalf("%+v", res)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v", d)
	}
	// The background child was in the group: it must not touch the file.
	time.Sleep(2500 * time.Millisecond)
	if _, err := os.Stat(marker); err == nil {
		t.Error("a child of the timed-out script survived")
	} else if !strings.Contains(err.Error(), "no such file") {
		t.Error(err)
	}
}

// TestChecksLetScriptsGo: the kept checks do not keep a configuration's
// scripts alive: after a reload the old ones go.
func TestChecksLetScriptsGo(t *testing.T) {
	count := func() int {
		n := 0
		checked.Range(func(k, _ any) bool {
			if k.(progKey).p.User == "leak-test" {
				n++
			}
			return true
		})
		return n
	}
	r := Runner{User: "leak-test"}
	// Held until counted: a collection while the checks are made (each
	// asks for the unknown user leak-test, of getent too) would let the
	// first go before they are counted.
	scripts := make([]*config.Script, 100)
	for i := range scripts {
		scripts[i] = &config.Script{Command: "/bin/true", Args: []string{"/bin/true"}}
		r.Prog(scripts[i])
	}
	if n := count(); n != 100 {
		t.Fatalf("%d checks kept, want 100", n)
	}
	runtime.KeepAlive(scripts) // and not after: they go now
	// Cleanups run after a collection, on the runtime's own goroutine.
	for i := 0; i < 1000 && count() > 0; i++ {
		runtime.GC()
		runtime.Gosched()
	}
	if n := count(); n != 0 {
		t.Errorf("%d checks of unreachable scripts still kept", n)
	}
}

// TestTimeoutTermThenKill: at its timeout a script gets SIGTERM first,
// which it may handle, and SIGKILL KillDelay later if it is still there,
// as keepalived's child timeout does.
//
// The scripts say through a FIFO when their trap is set, and only then is
// the run's context ended: on a busy host a shell may not have read its
// first line by the time a fixed timeout ends, and would die of a SIGTERM
// it never got the chance to handle or ignore.
func TestTimeoutTermThenKill(t *testing.T) {
	dir := t.TempDir()
	// stopWhenReady runs s until its trap is set, then stops it as a
	// timeout does; it returns how long the stop took.
	stopWhenReady := func(s *config.Script, fifo string) (Result, time.Duration) {
		t.Helper()
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		stopped := make(chan time.Time, 1)
		go func() {
			if f, err := os.Open(fifo); err == nil { // until the script opens it
				io.ReadAll(f)
				f.Close()
			}
			stopped <- time.Now()
			cancel()
		}()
		res := Runner{}.Run(ctx, s, 0)
		return res, time.Since(<-stopped)
	}
	out := filepath.Join(dir, "term")
	handles := &config.Script{Args: []string{"/bin/sh", "-c", "trap 'echo term > " + out + "; exit 3' TERM; echo > " + dir + "/h; sleep 30 & wait"}}
	res, _ := stopWhenReady(handles, dir+"/h")
	if res.ExitCode != 3 {
		t.Errorf("the script that handles SIGTERM: %+v, want its exit code 3", res)
	}
	if b, _ := os.ReadFile(out); string(b) != "term\n" {
		t.Errorf("the script's TERM handler did not run: %q", b)
	}
	ignores := &config.Script{Args: []string{"/bin/sh", "-c", "trap '' TERM; echo > " + dir + "/i; sleep 30"}}
	res, took := stopWhenReady(ignores, dir+"/i")
	if res.Err == nil {
		t.Fatalf("%+v", res)
	}
	if took < KillDelay {
		t.Errorf("a script ignoring SIGTERM ended %v after its SIGTERM, before its SIGKILL was due (%v)", took, KillDelay)
	}
	if took > KillDelay+5*time.Second {
		t.Errorf("a script ignoring SIGTERM took %v to be killed", took)
	}
	// The timeout itself ends a run as that stop does, and says so.
	start := time.Now()
	res = Runner{}.Run(context.Background(), &config.Script{Args: []string{"/bin/sleep", "30"}}, 100*time.Millisecond)
	if !res.TimedOut || time.Since(start) < 100*time.Millisecond {
		t.Errorf("a 100 ms timeout: %+v after %v", res, time.Since(start))
	}
}
