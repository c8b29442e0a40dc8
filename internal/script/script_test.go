package script

import (
	"context"
	"os"
	"path/filepath"
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

// TestTermGrace: with TermGrace (MISC_CHECK's, as keepalived's
// check_misc.c), a script past its time gets SIGTERM, and can end
// cleanly; one that ignores it is killed with SIGKILL TermGrace later;
// its children go with it either way.
func TestTermGrace(t *testing.T) {
	dir := t.TempDir()
	termed, late := filepath.Join(dir, "termed"), filepath.Join(dir, "late")
	r := Runner{TermGrace: 2 * time.Second}

	// Ends at the SIGTERM, writing that it had it; its child, sleeping,
	// must not outlive it.
	s := cmd(t, "/bin/sh -c 'trap \\\"touch "+termed+"; exit 3\\\" TERM; (sleep 3; touch "+late+") & while :; do sleep 0.05; done'")
	start := time.Now()
	res := r.Run(context.Background(), s, 200*time.Millisecond)
	took := time.Since(start)
	if !res.TimedOut || res.OK() {
		t.Fatalf("%+v", res)
	}
	if _, err := os.Stat(termed); err != nil {
		t.Errorf("the script did not get SIGTERM: %v", err)
	}
	if took >= 2*time.Second {
		t.Errorf("took %v: a script that ends at the SIGTERM is not waited for", took)
	}

	// Ignores SIGTERM: killed TermGrace after it.
	s = cmd(t, "/bin/sh -c 'trap \\\"\\\" TERM; while :; do sleep 0.05; done'")
	start = time.Now()
	res = r.Run(context.Background(), s, 200*time.Millisecond)
	took = time.Since(start)
	if !res.TimedOut || res.OK() {
		t.Fatalf("%+v", res)
	}
	if took < 2200*time.Millisecond {
		t.Errorf("killed after %v: before its TermGrace after the SIGTERM", took)
	}
	time.Sleep(3 * time.Second) // the first script's child would have written by now
	if _, err := os.Stat(late); err == nil {
		t.Error("a child of the script outlived it")
	}
}
