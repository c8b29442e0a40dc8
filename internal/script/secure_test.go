package script

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/directord/directord/config"
)

func TestSecure(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to own files as root")
	}
	// A folder only root can write to: /run is root's and 0755.
	dir, err := os.MkdirTemp("/run", "directord-secure-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, "check.sh")
	if err := os.WriteFile(f, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Secure(f); err != nil {
		t.Errorf("a root script in a root folder: %v", err)
	}
	tests := []struct {
		name  string
		setup func()
		want  string
	}{
		{"world-writable script", func() { os.Chmod(f, 0o757) }, "check.sh is writable by group or others"},
		{"group-writable folder", func() { os.Chmod(f, 0o755); os.Chmod(dir, 0o775) }, dir + " is writable by group or others"},
		{"script of another user", func() { os.Chmod(dir, 0o755); os.Chown(f, 65534, 0) }, "check.sh belongs to uid 65534"},
	}
	for _, tt := range tests {
		tt.setup()
		if err := Secure(f); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
	// A link from a safe folder to a file in an unsafe one: refused.
	os.Chmod(f, 0o755)
	os.Chown(f, 0, 0)
	unsafe := t.TempDir()
	target := filepath.Join(unsafe, "real.sh")
	os.WriteFile(target, []byte("#!/bin/sh\n"), 0o755)
	link := filepath.Join(dir, "link.sh")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := Secure(link); err == nil {
		t.Error("a link to a script under /tmp passes")
	}
	// t.TempDir is under /tmp (sticky, writable by all): refused.
	g := filepath.Join(t.TempDir(), "x.sh")
	os.WriteFile(g, nil, 0o755)
	if err := Secure(g); err == nil {
		t.Error("a script under /tmp passes")
	}
	if err := Secure("relative.sh"); err == nil {
		t.Error("a relative path passes")
	}
}

func TestScriptDropsSupplementaryGroups(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run as another user")
	}
	dir, err := os.MkdirTemp("", "directord-groups-") // nobody must reach it
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o777)
	out := filepath.Join(dir, "groups")
	s := &config.Script{Command: "id", Args: []string{"/bin/sh", "-c", "id -G > " + out}, User: "nobody"}
	if r := (Runner{}).Run(t.Context(), s, 5*time.Second); !r.OK() {
		t.Fatalf("%+v", r)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if f := strings.Fields(string(b)); len(f) != 1 {
		t.Errorf("groups of a script run as nobody: %q, want its own group alone", b)
	}
}
