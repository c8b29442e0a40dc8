package script

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSecure(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to own files as root")
	}
	// A folder only root can write to: /run is root's and 0755.
	dir, err := os.MkdirTemp("/run", "directord-secure-")
	if err != nil {
		t.Skip(err)
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
