package script

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
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
	for range 100 {
		r.Prog(&config.Script{Command: "/bin/true", Args: []string{"/bin/true"}})
	}
	if n := count(); n != 100 {
		t.Fatalf("%d checks kept, want 100", n)
	}
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
func TestTimeoutTermThenKill(t *testing.T) {
	out := filepath.Join(t.TempDir(), "term")
	handles := &config.Script{Args: []string{"/bin/sh", "-c", "trap 'echo term > " + out + "; exit 3' TERM; sleep 30 & wait"}}
	res := Runner{}.Run(context.Background(), handles, 100*time.Millisecond)
	if !res.TimedOut {
		t.Fatalf("%+v", res)
	}
	if b, _ := os.ReadFile(out); string(b) != "term\n" {
		t.Errorf("the script's TERM handler did not run: %q", b)
	}
	ignores := &config.Script{Args: []string{"/bin/sh", "-c", "trap '' TERM; sleep 30"}}
	start := time.Now()
	res = Runner{}.Run(context.Background(), ignores, 100*time.Millisecond)
	took := time.Since(start)
	if !res.TimedOut {
		t.Fatalf("%+v", res)
	}
	if took < 100*time.Millisecond+KillDelay {
		t.Errorf("a script ignoring SIGTERM ended after %v, before its SIGKILL was due", took)
	}
	if took > 100*time.Millisecond+KillDelay+5*time.Second {
		t.Errorf("a script ignoring SIGTERM took %v to be killed", took)
	}
}
