package vrrp

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/directord/directord/config"
	"github.com/directord/directord/internal/fuzztest"
	"github.com/directord/directord/internal/nstest"
)

// procAck is a PROC_EVENT_NONE the kernel (6.18) sent in answer to
// PROC_CN_MCAST_LISTEN, as the connector's netlink message carries it
// after its header: cn_msg (idx 1, val 1, seq 0, ack 1, len 40) and the
// proc_event (what 0, cpu 0, a timestamp).
var procAck = []byte{
	1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 40, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0xc7, 0x09, 0xe6, 0x86, 0xf2, 0x0a, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
}

// procEventBytes builds a connector message's payload for an event.
func procEventBytes(what uint32, ack uint32, data ...uint32) []byte {
	b := make([]byte, cnMsgLen+procEventHdr, cnMsgLen+procEventHdr+40)
	ne := binary.NativeEndian
	ne.PutUint32(b[0:], cnIdxProc)
	ne.PutUint32(b[4:], cnValProc)
	ne.PutUint32(b[12:], ack)
	ne.PutUint32(b[cnMsgLen:], what)
	for _, d := range data {
		b = ne.AppendUint32(b, d)
	}
	ne.PutUint16(b[16:], uint16(len(b)-cnMsgLen))
	return b
}

type procEventCase struct {
	name string
	b    []byte
	want procEvent
	ok   bool
}

// procEventCases are connector payloads with their decoding.
func procEventCases() []procEventCase {
	comm := procEventBytes(procEventComm, 0, 7, 7)
	comm = append(comm, "worker\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"...)
	return []procEventCase{
		{"the kernel's acknowledgement", procAck, procEvent{what: procEventNone, ack: true}, true},
		{"fork", procEventBytes(procEventFork, 0, 10, 10, 11, 11), procEvent{what: procEventFork, ppid: 10, ptgid: 10, pid: 11, tgid: 11}, true},
		{"a thread", procEventBytes(procEventFork, 0, 10, 10, 12, 10), procEvent{what: procEventFork, ppid: 10, ptgid: 10, pid: 12, tgid: 10}, true},
		{"exec", procEventBytes(procEventExec, 0, 5, 5), procEvent{what: procEventExec, pid: 5, tgid: 5}, true},
		{"exit", procEventBytes(procEventExit, 0, 5, 5, 0, 17), procEvent{what: procEventExit, pid: 5, tgid: 5}, true},
		{"comm", comm, procEvent{what: procEventComm, pid: 7, tgid: 7, comm: "worker"}, true},
		{"an ack that is an event", procEventBytes(procEventExit, 1, 5, 5), procEvent{}, false},
		{"an event that says ack", procEventBytes(procEventNone, 0), procEvent{}, false},
		{"short", procAck[:30], procEvent{}, false},
		{"short fork", procEventBytes(procEventFork, 0, 10, 10), procEvent{}, false},
		{"another connector", append([]byte{2}, procAck[1:]...), procEvent{}, false},
	}
}

// TestParseProcEvent: the connector's payloads decoded, and what is not a
// process event left out.
func TestParseProcEvent(t *testing.T) {
	for _, tt := range procEventCases() {
		got, ok := parseProcEvent(tt.b)
		if ok != tt.ok || ok && got != tt.want {
			t.Errorf("%s: parseProcEvent = %+v, %v; want %+v, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

// FuzzProcEvent feeds any payload to the decoder, and what it decodes
// to a tracker, as the reader does; the known cases must decode as
// TestParseProcEvent says.
func FuzzProcEvent(f *testing.F) {
	cases := procEventCases()
	for _, c := range cases {
		f.Add(c.b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzztest.Bound(t)
		ev, ok := parseProcEvent(b)
		for _, c := range cases {
			if bytes.Equal(c.b, b) && (ok != c.ok || ok && ev != c.want) {
				t.Fatalf("known %q: %+v, %v; want %+v, %v", c.name, ev, ok, c.want, c.ok)
			}
		}
		if !ok {
			return
		}
		if len(ev.comm) > 15 {
			t.Fatalf("comm %q longer than the kernel's", ev.comm)
		}
		tr := NewProcTracker([]*config.TrackProcess{{Name: "p", Process: "worker", Quorum: 1}}, nil)
		tr.Scan(map[int]ProcInfo{ev.ptgid: {Comm: "worker"}})
		switch ev.what {
		case procEventFork:
			tr.Fork(ev.ptgid, ev.tgid)
		case procEventExec:
			tr.Exec(ev.tgid, ProcInfo{Comm: "worker"})
		case procEventComm:
			tr.Comm(ev.tgid, ev.comm)
		case procEventExit:
			tr.Exit(ev.tgid)
		}
		if n := tr.Count("p"); n < 0 || n > 2 {
			t.Fatalf("%+v: count %d", ev, n)
		}
		tr.Stop()
	})
}

// trackedCopy copies a program to dir under name, for processes whose
// comm and command line nothing else on the host has.
func trackedCopy(t *testing.T, dir, prog, name string) string {
	t.Helper()
	b, err := os.ReadFile(prog)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// startProc starts a process this test ends.
func startProc(t *testing.T, cmd *exec.Cmd) *exec.Cmd {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

func endProc(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	cmd.Process.Kill()
	cmd.Wait()
}

// TestProcWatchRealProcesses: real processes counted by comm and by
// command line, on a socket with process_monitor_rcv_bufs (forced): one
// running before the watch is found by the scan; an
// exec, a fork (a subshell, which runs no new program) and an exit are
// followed through the kernel's process events; fork_delay holds off
// the gain a fork makes.
func TestProcWatchRealProcesses(t *testing.T) {
	nstest.RequireRoot(t)
	dir := t.TempDir()
	name := fmt.Sprintf("ddtp%d", os.Getpid()%1000000)
	sleep := trackedCopy(t, dir, "/bin/sleep", name)
	shName := fmt.Sprintf("ddsh%d", os.Getpid()%1000000)
	sh := trackedCopy(t, dir, "/bin/bash", shName)
	const forkDelay = 2 * time.Second
	procs := []*config.TrackProcess{
		{Name: "two", Process: name, Quorum: 2},
		{Name: "exact", Process: sleep, Params: []string{"1000"}, ParamMatch: "exact", FullCommand: true, Quorum: 1},
		{Name: "forks", Process: shName, Quorum: 2, ForkDelay: forkDelay},
	}
	first := startProc(t, exec.Command(sleep, "1000"))
	log := slog.New(slog.NewTextHandler(testWriter{t, "procs"}, nil))
	w := newProcWatch(procs, &config.Global{ProcessMonitorRcvBufs: 1 << 20, ProcessMonitorRcvBufsForce: true}, log, func([]ProcChange) {})
	if w.conn == nil {
		t.Fatal("no process events on the host")
	}
	// The kernel reports twice what was set.
	if n, err := rcvBuf(w.conn); err != nil || n != 2<<20 {
		t.Errorf("receive buffer %d (%v), want process_monitor_rcv_bufs 1 MiB", n, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.run(ctx); close(done) }()
	defer func() { cancel(); <-done; w.close() }()

	state := func(n string) string {
		up, _ := w.up(n)
		return fmt.Sprintf("%v/%d", up, w.tr.Count(n))
	}
	want := func(what string, states map[string]string) {
		t.Helper()
		nstest.WaitFor(t, 5*time.Second, what, func() bool {
			for n, s := range states {
				if state(n) != s {
					return false
				}
			}
			return true
		})
	}
	want("the scan", map[string]string{"two": "false/1", "exact": "true/1"})
	second := startProc(t, exec.Command(sleep, "2000"))
	want("a second process", map[string]string{"two": "true/2", "exact": "true/1"})
	endProc(t, first)
	want("the first gone", map[string]string{"two": "false/1", "exact": "false/0"})
	endProc(t, second)
	want("none", map[string]string{"two": "false/0", "exact": "false/0"})

	r, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd := exec.Command(sh, "-c", "( read x <&3 ) & read y <&3")
	cmd.ExtraFiles = []*os.File{r}
	forked := time.Now()
	startProc(t, cmd)
	want("the shell and its subshell", map[string]string{"forks": "true/2"})
	if took := time.Since(forked); took < forkDelay {
		t.Errorf("quorum %v after the fork, before fork_delay %v", took, forkDelay)
	}
	wr.Close() // both read EOF and exit
	want("the shells gone", map[string]string{"forks": "false/0"})
}

// TestProcWatchWithoutEvents: where the kernel's process events cannot
// be had (here, a socket made inside a network namespace), nothing is
// counted, as keepalived counts nothing then: no scan of /proc.
func TestProcWatchWithoutEvents(t *testing.T) {
	nstest.RequireRoot(t)
	ns := nstest.New(t, "dd-tpnone")
	dir := t.TempDir()
	name := fmt.Sprintf("ddtn%d", os.Getpid()%1000000)
	sleep := trackedCopy(t, dir, "/bin/sleep", name)
	startProc(t, exec.Command(sleep, "1000"))
	var err error
	ns.Do(t, func() {
		c, derr := dialProcEventsHere(0, false, nil)
		if err = derr; err == nil {
			c.Close()
		}
	})
	if err == nil {
		t.Fatal("the process events subscribed from inside a namespace")
	}
	t.Logf("inside a namespace: %v", err)
	w := newProcWatchFrom([]*config.TrackProcess{{Name: "p", Process: name, Quorum: 1}}, slog.New(slog.NewTextHandler(testWriter{t, "procs"}, nil)), func([]ProcChange) {}, nil, err)
	defer w.close()
	if up, ok := w.up("p"); up || !ok || w.tr.Count("p") != 0 {
		t.Errorf("up %v (tracked %v) with %d processes, want down with none", up, ok, w.tr.Count("p"))
	}
}

// lockedBuffer collects a log for a test to read.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
	t  *testing.T
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.t.Logf("procs: %s", strings.TrimSpace(string(p)))
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestProcWatchLostEvents: with the smallest receive buffer and no one
// reading, a burst of processes overflows it and the events of the
// tracked process started after the burst are lost; the reader, told
// ENOBUFS, reads /proc again and counts it.
func TestProcWatchLostEvents(t *testing.T) {
	nstest.RequireRoot(t)
	dir := t.TempDir()
	name := fmt.Sprintf("ddtl%d", os.Getpid()%1000000)
	sleep := trackedCopy(t, dir, "/bin/sleep", name)
	logs := &lockedBuffer{t: t}
	w := newProcWatch([]*config.TrackProcess{{Name: "p", Process: name, Quorum: 1}},
		&config.Global{ProcessMonitorRcvBufs: 1, ProcessMonitorRcvBufsForce: true}, slog.New(slog.NewTextHandler(logs, nil)), func([]ProcChange) {})
	if w.conn == nil {
		t.Fatal("no process events on the host")
	}
	defer w.close()
	for range 50 {
		if err := exec.Command("/bin/true").Run(); err != nil {
			t.Fatal(err)
		}
	}
	startProc(t, exec.Command(sleep, "1000"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	nstest.WaitFor(t, 10*time.Second, "the process counted after the rescan", func() bool {
		up, _ := w.up("p")
		return up && w.tr.Count("p") == 1
	})
	if !strings.Contains(logs.String(), "process events lost") {
		t.Error("no warning of lost events")
	}
}
