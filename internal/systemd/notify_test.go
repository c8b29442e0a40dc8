package systemd

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"golang.org/x/sys/unix"
)

// fakeSystemd is a NOTIFY_SOCKET: a unixgram socket in the test's
// temporary folder.
type fakeSystemd struct {
	t    *testing.T
	conn *net.UnixConn
}

func newFakeSystemd(t *testing.T) *fakeSystemd {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	t.Setenv("NOTIFY_SOCKET", path)
	return &fakeSystemd{t: t, conn: conn}
}

// next returns the message waiting in the socket, if any, without waiting:
// a unixgram write puts the datagram in the receiver's queue before it
// returns, so whatever a call sent is there when the call is over.
func (f *fakeSystemd) next() (string, bool) {
	f.t.Helper()
	rc, err := f.conn.SyscallConn()
	if err != nil {
		f.t.Fatal(err)
	}
	buf := make([]byte, 4096)
	var n int
	var rerr error
	if err := rc.Control(func(fd uintptr) {
		n, _, rerr = unix.Recvfrom(int(fd), buf, unix.MSG_DONTWAIT)
	}); err != nil {
		f.t.Fatal(err)
	}
	if errors.Is(rerr, unix.EAGAIN) {
		return "", false
	}
	if rerr != nil {
		f.t.Fatal(rerr)
	}
	return string(buf[:n]), true
}

// want asserts that the next message is msg.
func (f *fakeSystemd) want(msg string) {
	f.t.Helper()
	got, ok := f.next()
	if !ok {
		f.t.Fatalf("no message, want %q", msg)
	}
	if got != msg {
		f.t.Fatalf("message %q, want %q", got, msg)
	}
}

// none asserts that no message is waiting.
func (f *fakeSystemd) none() {
	f.t.Helper()
	if got, ok := f.next(); ok {
		f.t.Fatalf("message %q, want none", got)
	}
}

func TestNotify(t *testing.T) {
	tests := []struct {
		name string
		send func() error
		want string
	}{
		{"ready", Ready, "READY=1"},
		{"stopping", Stopping, "STOPPING=1"},
		{"status", func() error { return Status("2 instances MASTER, 1 pool without quorum") },
			"STATUS=2 instances MASTER, 1 pool without quorum"},
		{"status with newlines", func() error { return Status("reload refused:\nk.conf:3: error\r\n") },
			"STATUS=reload refused: k.conf:3: error "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sd := newFakeSystemd(t)
			if err := tt.send(); err != nil {
				t.Fatal(err)
			}
			sd.want(tt.want)
			sd.none()
		})
	}
}

// TestReload is a reload as the daemon reports it: RELOADING=1 with the
// time on CLOCK_MONOTONIC in one message, then READY=1.
func TestReload(t *testing.T) {
	sd := newFakeSystemd(t)
	before := monotonicUsec(t)
	if err := Reloading(); err != nil {
		t.Fatal(err)
	}
	after := monotonicUsec(t)
	if err := Ready(); err != nil {
		t.Fatal(err)
	}

	got, ok := sd.next()
	if !ok {
		t.Fatal("no message after Reloading")
	}
	lines := strings.Split(got, "\n")
	if len(lines) != 2 || lines[0] != "RELOADING=1" || !strings.HasPrefix(lines[1], "MONOTONIC_USEC=") {
		t.Fatalf("message %q, want RELOADING=1 and MONOTONIC_USEC=N on two lines", got)
	}
	usec, err := strconv.ParseInt(strings.TrimPrefix(lines[1], "MONOTONIC_USEC="), 10, 64)
	if err != nil {
		t.Fatalf("message %q: %v", got, err)
	}
	if usec < before || usec > after {
		t.Errorf("MONOTONIC_USEC=%d, want within [%d, %d]", usec, before, after)
	}
	sd.want("READY=1")
	sd.none()
}

func monotonicUsec(t *testing.T) int64 {
	t.Helper()
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		t.Fatal(err)
	}
	return ts.Sec*1_000_000 + ts.Nsec/1_000
}

// TestNoSocket: without NOTIFY_SOCKET everything is a no-op, and so is
// the watchdog without WATCHDOG_USEC.
func TestNoSocket(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	t.Setenv("WATCHDOG_USEC", "")
	for name, f := range map[string]func() error{
		"Ready": Ready, "Reloading": Reloading, "Stopping": Stopping,
		"Status": func() error { return Status("x") },
		"Watchdog": func() error {
			return Watchdog(context.Background(), func() bool { t.Error("healthy called"); return true })
		},
	} {
		if err := f(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestSocketGone(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", filepath.Join(t.TempDir(), "missing"))
	err := Ready()
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Ready to a missing socket: %v, want an error wrapping ErrNotExist", err)
	}
}

// TestWatchdog: with WatchdogSec=10s the pings come every 5 s while the
// daemon is healthy, none while it is not, and none after ctx ends.
func TestWatchdog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sd := newFakeSystemd(t)
		t.Setenv("WATCHDOG_USEC", "10000000")
		t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))
		var healthy atomic.Bool
		healthy.Store(true)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- Watchdog(ctx, healthy.Load) }()

		// Just before the first tick, nothing; at each tick, one ping.
		time.Sleep(5*time.Second - time.Millisecond)
		synctest.Wait()
		sd.none()
		for range 3 {
			time.Sleep(5 * time.Second)
			synctest.Wait()
			sd.want("WATCHDOG=1")
			sd.none()
		}

		// A stuck main loop: no pings, however long, so systemd's
		// watchdog fires.
		healthy.Store(false)
		time.Sleep(time.Minute)
		synctest.Wait()
		sd.none()

		// The loop turns again: pings resume at the next tick.
		healthy.Store(true)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		sd.want("WATCHDOG=1")
		sd.none()

		cancel()
		if err := <-done; err != nil {
			t.Errorf("Watchdog: %v", err)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		sd.none()
	})
}

// TestWatchdogSettings: the watchdog of another process (a parent's
// WATCHDOG_PID inherited) is not ours, and bad settings are an error.
func TestWatchdogSettings(t *testing.T) {
	tests := []struct {
		name    string
		usec    string
		pid     string
		wantErr bool
	}{
		{"another process's", "10000000", strconv.Itoa(os.Getpid() + 1), false},
		{"no watchdog", "", "", false},
		{"not a number", "ten", "", true},
		{"zero", "0", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			newFakeSystemd(t)
			t.Setenv("WATCHDOG_USEC", tt.usec)
			t.Setenv("WATCHDOG_PID", tt.pid)
			// Were the watchdog taken as ours, Watchdog would wait for a
			// context that never ends.
			err := Watchdog(context.Background(), func() bool { return true })
			if (err != nil) != tt.wantErr {
				t.Errorf("Watchdog: %v, want error: %v", err, tt.wantErr)
			}
		})
	}
}
