package vrrp

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/directord/directord/config"
)

// TestFileWatchFollowsTheFile: the watch sees the file written, replaced
// by a rename, removed (0) and given a bad number (kept), as keepalived's
// inotify handling does; a file not yet there starts at 0.
func TestFileWatchFollowsTheFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "prio")
	cfg := &config.Config{TrackFiles: []*config.TrackFile{{Name: "tf", Path: path, Weight: 1}}}
	w, err := newFileWatch(cfg, map[string]bool{"tf": true}, slog.New(slog.DiscardHandler))
	if err != nil || w == nil {
		t.Fatalf("newFileWatch: %v %v", w, err)
	}
	if v, ok := w.value("tf"); !ok || v != 0 {
		t.Fatalf("a missing file: %d %v, want 0", v, ok)
	}
	if _, ok := w.value("other"); ok {
		t.Error("an untracked name has a value")
	}
	changed := make(chan struct{}, 16)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.run(ctx, func() { changed <- struct{}{} }) }()
	defer func() { cancel(); <-done }()
	wait := func(what string, want int64) {
		t.Helper()
		select {
		case <-changed:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: no change seen", what)
		}
		if v, _ := w.value("tf"); v != want {
			t.Fatalf("%s: value %d, want %d", what, v, want)
		}
	}
	if err := os.WriteFile(path, []byte("12\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wait("written", 12)
	tmp := filepath.Join(dir, "prio.tmp")
	if err := os.WriteFile(tmp, []byte("-0x10"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	wait("renamed into place", -16)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	wait("removed", 0)
	// A bad number is ignored; the next good one counts.
	if err := os.WriteFile(path, []byte("99999999999"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("3"), 0o644); err != nil {
		t.Fatal(err)
	}
	wait("a bad number, then 3", 3)
}

// TestFileWatchMissingFolder: a file whose folder does not exist is not
// tracked, as keepalived removes it.
func TestFileWatchMissingFolder(t *testing.T) {
	cfg := &config.Config{TrackFiles: []*config.TrackFile{{Name: "tf", Path: filepath.Join(t.TempDir(), "no", "prio"), Weight: 1}}}
	w, err := newFileWatch(cfg, map[string]bool{"tf": true}, slog.New(slog.DiscardHandler))
	if err != nil || w != nil {
		t.Fatalf("got %v, %v; want nothing watched and no error", w, err)
	}
}

// TestInitTrackFiles: init_file writes a missing file; overwrite rewrites
// an existing one, but not on a reload.
func TestInitTrackFiles(t *testing.T) {
	dir := t.TempDir()
	missing, kept, over := filepath.Join(dir, "missing"), filepath.Join(dir, "kept"), filepath.Join(dir, "over")
	for _, p := range []string{kept, over} {
		if err := os.WriteFile(p, []byte("9\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := &config.Config{TrackFiles: []*config.TrackFile{
		{Name: "m", Path: missing, Init: true, InitValue: -5},
		{Name: "k", Path: kept, Init: true, InitValue: 1},
		{Name: "o", Path: over, Init: true, InitValue: 2, InitOverwrite: true},
	}}
	log := slog.New(slog.DiscardHandler)
	InitTrackFiles(cfg, true, log) // a reload: only the missing one
	check := func(p, want string) {
		t.Helper()
		if b, _ := os.ReadFile(p); string(b) != want {
			t.Errorf("%s = %q, want %q", filepath.Base(p), b, want)
		}
	}
	check(missing, "-5\n")
	check(kept, "9\n")
	check(over, "9\n")
	InitTrackFiles(cfg, false, log)
	check(kept, "9\n")
	check(over, "2\n")
}
