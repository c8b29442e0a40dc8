package notifyfifo

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/directord/directord/config"
	"github.com/directord/directord/internal/script"
)

// TestFIFOCreatedReadRemoved: a missing FIFO is made with keepalived's
// mode, its lines read whole by a reader, and removed at Close.
func TestFIFOCreatedReadRemoved(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notify.fifo")
	f, err := Open(&config.NotifyFIFO{Path: path}, script.Runner{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode()&os.ModeNamedPipe == 0 || st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want a named pipe with 0644", st.Mode())
	}
	// The directord side holds it open: this open does not wait.
	r, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	f.Write(InstanceLine("VI_1", "MASTER", 100))
	f.Write(GroupLine("G", "MASTER"))
	br := bufio.NewReader(r)
	for _, want := range []string{"INSTANCE \"VI_1\" MASTER 100\n", "GROUP \"G\" MASTER 0\n"} {
		got, err := br.ReadString('\n')
		if err != nil || got != want {
			t.Fatalf("read %q (%v), want %q", got, err, want)
		}
	}
	f.Close()
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the FIFO directord made is still there after Close: %v", err)
	}
}

// TestFIFONoReaderNeverBlocks: with no reader the pipe fills; every write
// still returns at once, the lines that do not fit are counted, and a
// reader that comes later reads whole lines only.
func TestFIFONoReaderNeverBlocks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notify.fifo")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Open(&config.NotifyFIFO{Path: path}, script.Runner{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	line := InstanceLine(strings.Repeat("x", 100), "BACKUP", 50) // 123 bytes
	const n = 2000                                               // 246 kB: far past a 64 KiB pipe
	for range n {
		f.Write(line)
	}
	if f.Dropped() == 0 || f.Dropped() >= n {
		t.Fatalf("dropped %d of %d lines: want some, not all", f.Dropped(), n)
	}
	r, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	f.Close() // the writer goes: the reader reads what is buffered, then EOF
	if _, err := os.Lstat(path); err != nil {
		t.Errorf("an existing FIFO must be left in place: %v", err)
	}
	b, err := readAll(r)
	if err != nil {
		t.Fatal(err)
	}
	got := uint64(strings.Count(string(b), "\n"))
	if len(b)%len(line) != 0 || got+f.Dropped() != n {
		t.Errorf("read %d bytes, %d lines, dropped %d: want whole lines adding up to %d", len(b), got, f.Dropped(), n)
	}
}

// readAll reads a non-blocking FIFO until EOF; EAGAIN cannot happen once
// the writer has closed.
func readAll(r *os.File) ([]byte, error) {
	var out []byte
	buf := make([]byte, 65536)
	for {
		n, err := syscall.Read(int(r.Fd()), buf)
		if n > 0 {
			out = append(out, buf[:n]...)
			continue
		}
		if err == syscall.EINTR {
			continue
		}
		return out, err
	}
}

// TestFIFOScriptGetsPath: the _script runs with the FIFO's path as its
// last argument and reads the lines written.
func TestFIFOScriptGetsPath(t *testing.T) {
	dir := t.TempDir()
	path, result := filepath.Join(dir, "notify.fifo"), filepath.Join(dir, "result")
	if err := syscall.Mkfifo(result, 0o666); err != nil {
		t.Fatal(err)
	}
	// sh -c CMD ARG: the FIFO's path is $0.
	s := &config.Script{Command: "sh", Args: []string{"/bin/sh", "-c", `{ echo "$0"; head -n 2 "$0"; } > ` + result}}
	f, err := Open(&config.NotifyFIFO{Path: path, Script: s}, script.Runner{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Write(InstanceLine("VI_1", "BACKUP", 100))
	f.Write(InstanceLine("VI_1", "MASTER", 100))
	r, err := os.Open(result) // waits for the script to open it
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, err := readAllBlocking(r)
	if err != nil {
		t.Fatal(err)
	}
	want := path + "\nINSTANCE \"VI_1\" BACKUP 100\nINSTANCE \"VI_1\" MASTER 100\n"
	if string(b) != want {
		t.Errorf("the script read %q, want %q", b, want)
	}
}

func readAllBlocking(r *os.File) ([]byte, error) {
	var sb strings.Builder
	_, err := bufio.NewReader(r).WriteTo(&sb)
	return []byte(sb.String()), err
}

// TestFIFORefusesOtherFiles: a regular file or a symbolic link where the
// FIFO should be is not written to.
func TestFIFORefusesOtherFiles(t *testing.T) {
	dir := t.TempDir()
	reg := filepath.Join(dir, "regular")
	if err := os.WriteFile(reg, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(fifo, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{reg, link} {
		if f, err := Open(&config.NotifyFIFO{Path: p}, script.Runner{}, nil); err == nil {
			f.Close()
			t.Errorf("%s: opened, want an error", p)
		}
	}
	if _, err := Open(&config.NotifyFIFO{Path: filepath.Join(dir, "no", "such")}, script.Runner{}, nil); err == nil {
		t.Error("a FIFO in a missing folder: opened, want an error")
	}
}

// TestFIFOUnknownUserIgnored: a FIFO whose keyword names a user that
// does not exist is not made at all, as keepalived ignores it ("Invalid
// user/group for fifo - ignoring"), rather than made root's.
func TestFIFOUnknownUserIgnored(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notify.fifo")
	f, err := Open(&config.NotifyFIFO{Path: path, User: "nosuchuser-dd"}, script.Runner{}, nil)
	if err == nil {
		f.Close()
		t.Fatal("a FIFO of an unknown user was opened")
	}
	if !strings.Contains(err.Error(), "keepalived ignores the FIFO") {
		t.Errorf("error %q", err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the FIFO was made: %v", err)
	}
}
