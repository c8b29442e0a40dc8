// Package scripttest makes the folders that tests of enable_script_security
// need: one only root can write to, and one anyone can.
package scripttest

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// RootDir is a new folder under /run (root's, 0755) that only root can
// write to, removed when the test ends. It skips a test not run as root,
// which cannot own files as root.
func RootDir(t testing.TB, prefix string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to own files as root")
	}
	dir, err := os.MkdirTemp("/run", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// WorldWritable is a folder named name in dir that anyone can write to
// (0777, past the umask).
func WorldWritable(t testing.TB, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.Mkdir(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Chmod(p, 0o777); err != nil {
		t.Fatal(err)
	}
	return p
}
