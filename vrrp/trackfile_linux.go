package vrrp

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"unsafe"

	"github.com/directord/directord/config"
)

// fileWatch follows the tracked files' values through inotify, as
// keepalived does: a watch on each file's folder for IN_CLOSE_WRITE,
// IN_MOVED_TO (the file read again), IN_DELETE and IN_MOVED_FROM (the
// file gone: its value is 0). The inotify descriptor is read through Go's
// poller, so Close ends run.
type fileWatch struct {
	log   *slog.Logger
	f     *os.File
	mu    sync.Mutex
	files map[string]*watchedFile // by track_file name
	wds   map[int32][]*watchedFile
}

type watchedFile struct {
	name, path, base string
	value            int64
}

const fileWatchMask = syscall.IN_CLOSE_WRITE | syscall.IN_DELETE | syscall.IN_MOVED_FROM | syscall.IN_MOVED_TO

// newFileWatch watches the track_files of cfg named in used. A file whose
// folder does not exist is not tracked (keepalived: "Track file directory
// for NAME does not exist - removing"): the instances tracking it go on
// as if it were not named. It returns nil when there is nothing to watch.
func newFileWatch(cfg *config.Config, used map[string]bool, log *slog.Logger) (*fileWatch, error) {
	if len(used) == 0 {
		return nil, nil
	}
	w := &fileWatch{log: log, files: map[string]*watchedFile{}, wds: map[int32][]*watchedFile{}}
	for _, tf := range cfg.TrackFiles {
		if !used[tf.Name] || w.files[tf.Name] != nil {
			continue
		}
		path, err := resolveTrackPath(tf.Path)
		if err != nil {
			log.Error("track_file not tracked", "track_file", tf.Name, "file", tf.Path, "at", tf.Pos.String(), "err", err)
			continue
		}
		w.files[tf.Name] = &watchedFile{name: tf.Name, path: path, base: filepath.Base(path)}
	}
	if len(w.files) == 0 {
		return nil, nil
	}
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("track_file: inotify: %w", err)
	}
	w.f = os.NewFile(uintptr(fd), "inotify")
	for _, wf := range w.files {
		wd, err := syscall.InotifyAddWatch(fd, filepath.Dir(wf.path), fileWatchMask)
		if err != nil {
			w.f.Close()
			return nil, fmt.Errorf("track_file %s: watch %s: %w", wf.name, filepath.Dir(wf.path), err)
		}
		w.wds[int32(wd)] = append(w.wds[int32(wd)], wf)
		w.read(wf) // after the watch: a change in between is not lost
	}
	return w, nil
}

// resolveTrackPath is keepalived's: the file's real path, or, when it
// does not exist yet, its folder's real path and its name.
func resolveTrackPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return "", fmt.Errorf("its folder does not exist: %w", err)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return "", fmt.Errorf("%s is not a folder", dir)
	}
	return filepath.Join(dir, filepath.Base(abs)), nil
}

// read reads wf's value: a missing or empty file is 0; a number out of
// range keeps the previous value, as keepalived.
func (w *fileWatch) read(wf *watchedFile) {
	var v int64
	f, err := os.OpenFile(wf.path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err == nil {
		buf := make([]byte, 127)
		n, _ := f.Read(buf)
		f.Close()
		var ok bool
		if v, ok = ParseFileValue(buf[:n]); !ok {
			w.log.Warn("track_file: invalid number: ignored", "track_file", wf.name, "file", wf.path)
			return
		}
	}
	w.set(wf, v)
}

func (w *fileWatch) set(wf *watchedFile, v int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	changed := wf.value != v
	wf.value = v
	return changed
}

// value is a tracked file's value; ok is false for a file not tracked.
func (w *fileWatch) value(name string) (int64, bool) {
	if w == nil {
		return 0, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	wf := w.files[name]
	if wf == nil {
		return 0, false
	}
	return wf.value, true
}

// run reads inotify events until ctx ends, calling changed after each
// value that changed.
func (w *fileWatch) run(ctx context.Context, changed func()) {
	stop := context.AfterFunc(ctx, func() { w.f.Close() })
	defer stop()
	buf := make([]byte, 64*(syscall.SizeofInotifyEvent+syscall.NAME_MAX+1))
	for {
		n, err := w.f.Read(buf)
		if err != nil {
			if ctx.Err() == nil {
				w.log.Error("track_file: inotify read failed: track files no longer followed", "err", err)
			}
			return
		}
		if w.events(buf[:n]) {
			changed()
		}
	}
}

// events handles a read's events and reports whether a value changed.
func (w *fileWatch) events(b []byte) bool {
	changed := false
	for len(b) >= syscall.SizeofInotifyEvent {
		ev := (*syscall.InotifyEvent)(unsafe.Pointer(&b[0]))
		end := syscall.SizeofInotifyEvent + int(ev.Len)
		if end > len(b) {
			break
		}
		name := string(b[syscall.SizeofInotifyEvent:end])
		for len(name) > 0 && name[len(name)-1] == 0 {
			name = name[:len(name)-1]
		}
		b = b[end:]
		switch {
		case ev.Mask&syscall.IN_Q_OVERFLOW != 0:
			// Events were lost: read every file afresh.
			w.log.Warn("track_file: inotify events lost: reading every file again")
			for _, wf := range w.files {
				old, _ := w.value(wf.name)
				w.read(wf)
				if v, _ := w.value(wf.name); v != old {
					changed = true
				}
			}
			continue
		case ev.Mask&syscall.IN_ISDIR != 0:
			continue
		}
		for _, wf := range w.wds[ev.Wd] {
			if wf.base != name {
				continue
			}
			old, _ := w.value(wf.name)
			if ev.Mask&(syscall.IN_DELETE|syscall.IN_MOVED_FROM) != 0 {
				w.set(wf, 0)
			} else {
				w.read(wf)
			}
			if v, _ := w.value(wf.name); v != old {
				w.log.Info("track_file", "track_file", wf.name, "value", v)
				changed = true
			}
		}
	}
	return changed
}

// InitTrackFiles writes the init_file value of cfg's track files, as
// keepalived does when it reads its configuration: to a file that does
// not exist, or with overwrite to a regular file that does, but not on a
// reload.
func InitTrackFiles(cfg *config.Config, reload bool, log *slog.Logger) {
	for _, tf := range cfg.TrackFiles {
		if !tf.Init {
			continue
		}
		st, err := os.Stat(tf.Path)
		if err == nil {
			if !tf.InitOverwrite || reload {
				continue
			}
			if !st.Mode().IsRegular() {
				log.Error("track_file: cannot initialise it: not a regular file", "track_file", tf.Name, "file", tf.Path)
				continue
			}
		}
		f, err := os.OpenFile(tf.Path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o644)
		if err == nil {
			_, err = f.WriteString(strconv.Itoa(tf.InitValue) + "\n")
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			log.Error("track_file: cannot initialise it", "track_file", tf.Name, "file", tf.Path, "err", err)
		}
	}
}

func (w *fileWatch) close() {
	if w != nil {
		w.f.Close()
	}
}

// trackedFiles names the track_files some instance or sync group tracks.
func trackedFiles(cfg *config.Config) map[string]bool {
	used := map[string]bool{}
	for _, in := range cfg.Instances {
		for _, u := range in.TrackFiles {
			used[u.Name] = true
		}
	}
	for _, g := range cfg.SyncGroups {
		for _, u := range g.TrackFiles {
			used[u.Name] = true
		}
	}
	return used
}
