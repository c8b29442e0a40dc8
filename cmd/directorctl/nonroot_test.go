package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// These tests run the directorctl binary as nobody (uid 65534), which
// needs root, against a control server run by the test as root.

const nobody = 65534

// buildCtl builds directorctl into a directory that nobody can reach and
// returns its path.
func buildCtl(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("runs directorctl as another user, which needs root")
	}
	bin := filepath.Join(reachable(t), "directorctl")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// reachable is a new temporary directory that every user can enter, as
// /run/directord is: then only the socket's own mode keeps others out.
func reachable(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// ctlAs runs bin with args as uid and returns its exit code and output.
func ctlAs(t *testing.T, uid uint32, bin string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &exit):
		return exit.ExitCode(), string(out)
	}
	t.Fatalf("run %s as uid %d: %v", bin, uid, err)
	return 0, ""
}

func TestNotRoot(t *testing.T) {
	bin := buildCtl(t)
	denied := func(path string) string {
		return "permission denied: only root may use directord's control socket " + path
	}

	t.Run("socket mode", func(t *testing.T) {
		path, logs := serve(t, reachable(t), newFake(), nil)
		code, out := ctlAs(t, nobody, bin, "-s", path, "status")
		if want := "directorctl: " + denied(path) + "\n"; code != 1 || out != want {
			t.Errorf("exit %d, output %q; want 1, %q", code, out, want)
		}
		// The kernel refused the connection: the server never saw it.
		if strings.Contains(logs.String(), "refused") {
			t.Errorf("the server saw the connection:\n%s", logs)
		}
	})

	t.Run("peer credentials", func(t *testing.T) {
		f := newFake()
		path, logs := serve(t, reachable(t), f, nil)
		if err := os.Chmod(path, 0o666); err != nil {
			t.Fatal(err)
		}
		code, out := ctlAs(t, nobody, bin, "-s", path, "drain", "10.0.0.2:443")
		if code != 1 || !strings.Contains(out, denied(path)) {
			t.Errorf("exit %d, output %q; want 1, %q", code, out, denied(path))
		}
		if l := logs.String(); !strings.Contains(l, "level=WARN") || !strings.Contains(l, "uid=65534") {
			t.Errorf("the refusal is not logged at WARN with uid=65534:\n%s", l)
		}
		if f.isDrained("10.0.0.2:443") {
			t.Error("a refused client drained a real server")
		}
	})

	t.Run("AllowUID", func(t *testing.T) {
		path, _ := serve(t, reachable(t), newFake(), func(uid uint32) bool { return uid == nobody })
		if err := os.Chmod(path, 0o666); err != nil {
			t.Fatal(err)
		}
		code, out := ctlAs(t, nobody, bin, "-s", path, "status")
		if code != 0 || !strings.Contains(out, "directord 1.2.3, pid 4242") {
			t.Errorf("exit %d, output:\n%s\nwant 0 and the status", code, out)
		}
	})
}
