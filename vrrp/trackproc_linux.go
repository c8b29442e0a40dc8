package vrrp

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/directord/directord/config"
)

// procWatch follows the processes that vrrp_track_process blocks count,
// as keepalived 2.2.7's core/track_process.c does: a NETLINK_CONNECTOR
// socket joined to the kernel's process events (CN_IDX_PROC: fork, exec,
// comm and exit of every process of the host), then one scan of /proc,
// then each event given to the ProcTracker.
//
// # Network namespaces
//
// The kernel's connector exists in the initial network namespace only:
// a socket made in another namespace cannot subscribe (the kernel
// refuses the request, ECONNREFUSED). keepalived opens it before it
// enters its net_namespace for that reason. NewNode's thread is inside
// the instances' namespace (in the tests, a namespace of their own), so
// the socket is made on another goroutine, whose thread is in the
// namespace directord started in. Started inside a namespace (ip netns
// exec), or in a container without the initial namespace, directord
// cannot follow processes, and does as keepalived then does: it counts
// none, never scanning /proc, and says so.
//
// mdlayher/netlink reads the socket: the connector's messages are plain
// netlink messages (type NLMSG_DONE, not multipart) whose payload is a
// cn_msg and a proc_event, decoded here; when the kernel dropped events
// for want of room (ENOBUFS) the socket stays joined, its buffer is
// doubled (SO_RCVBUF, which the kernel's net.core.rmem_max bounds, or
// with process_monitor_rcv_bufs_force SO_RCVBUFFORCE) and /proc is read
// afresh a second later, as keepalived does.
type procWatch struct {
	log  *slog.Logger
	tr   *ProcTracker
	conn *netlink.Conn // nil: the kernel's process events are not available
	// force: set the buffer with SO_RCVBUFFORCE
	// (process_monitor_rcv_bufs_force).
	force bool
	acks  chan struct{} // the kernel answered the subscription
	mu    sync.Mutex
	// rescan is the pending rescan after lost events.
	rescan  *time.Timer
	proc    string // /proc
	closing sync.Once
}

// Kernel constants of linux/connector.h and linux/cn_proc.h.
const (
	cnIdxProc         = 1
	cnValProc         = 1
	procCnMcastListen = 1
	procCnMcastIgnore = 2

	procEventNone = 0
	procEventFork = 0x00000001
	procEventExec = 0x00000002
	procEventComm = 0x00000200
	procEventExit = 0x80000000

	cnMsgLen       = 20 // struct cn_msg: id (idx, val), seq, ack, len, flags
	procEventHdr   = 16 // struct proc_event: what, cpu, timestamp_ns
	commLen        = 15 // TASK_COMM_LEN, its NUL left out
	procRescanWait = time.Second
	procAckWait    = 100 * time.Millisecond
)

// trackedProcesses are the vrrp_track_process blocks some instance or
// sync group tracks, in the configuration's order.
func trackedProcesses(cfg *config.Config) []*config.TrackProcess {
	used := map[string]bool{}
	for _, in := range cfg.Instances {
		for _, u := range in.TrackProcesses {
			used[u.Name] = true
		}
	}
	for _, g := range cfg.SyncGroups {
		for _, u := range g.TrackProcesses {
			used[u.Name] = true
		}
	}
	var out []*config.TrackProcess
	for _, p := range cfg.TrackProcesses {
		if used[p.Name] {
			out = append(out, p)
			used[p.Name] = false // the first of the name
		}
	}
	return out
}

// newProcWatch subscribes to the process events and counts the running
// processes. It returns nil when no block is tracked. That the events are
// not available is no error: the blocks then never count a process.
func newProcWatch(procs []*config.TrackProcess, g *config.Global, log *slog.Logger, changed func([]ProcChange)) *procWatch {
	if len(procs) == 0 {
		return nil
	}
	conn, err := dialProcEvents(int(g.ProcessMonitorRcvBufs), g.ProcessMonitorRcvBufsForce, log)
	w := newProcWatchFrom(procs, log, changed, conn, err)
	w.force = g.ProcessMonitorRcvBufsForce
	return w
}

// newProcWatchFrom is newProcWatch with the connector's socket, or the
// error that kept it from being had.
func newProcWatchFrom(procs []*config.TrackProcess, log *slog.Logger, changed func([]ProcChange), conn *netlink.Conn, err error) *procWatch {
	w := &procWatch{log: log, tr: NewProcTracker(procs, changed), acks: make(chan struct{}, 1), proc: "/proc"}
	if err != nil {
		log.Error("track_process: the kernel's process events are not available: no process is counted, as keepalived does (is directord in the host's network namespace, with CAP_NET_ADMIN?)", "err", err)
		w.tr.Scan(nil)
		return w
	}
	w.conn = conn
	w.tr.Scan(w.readProcs())
	return w
}

// dialProcEvents opens the connector socket in the namespace directord
// started in (see procWatch) and subscribes.
func dialProcEvents(rcvBuf int, force bool, log *slog.Logger) (*netlink.Conn, error) {
	type result struct {
		c   *netlink.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		// A goroutine of its own, not locked: its thread is not the
		// caller's, which may be in the instances' namespace.
		c, err := dialProcEventsHere(rcvBuf, force, log)
		ch <- result{c, err}
	}()
	r := <-ch
	return r.c, r.err
}

// dialProcEventsHere opens and subscribes on the calling thread's
// namespace, with global_defs' process_monitor_rcv_bufs (0: the
// kernel's default) set first, as keepalived's init_track_processes.
func dialProcEventsHere(rcvBuf int, force bool, log *slog.Logger) (*netlink.Conn, error) {
	c, err := netlink.Dial(unix.NETLINK_CONNECTOR, &netlink.Config{Groups: cnIdxProc})
	if err != nil {
		return nil, fmt.Errorf("open the process events connector: %w", err)
	}
	if rcvBuf > 0 {
		if err := setRcvBuf(c, rcvBuf, force); err != nil {
			// keepalived logs it and goes on.
			log.Warn("track_process: cannot set process_monitor_rcv_bufs", "process_monitor_rcv_bufs", rcvBuf, "force", force, "err", err)
		}
	}
	if err := setProcListen(c, true); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// setProcListen sends PROC_CN_MCAST_LISTEN (or _IGNORE): a cn_msg to the
// process connector carrying the operation.
func setProcListen(c *netlink.Conn, on bool) error {
	op := uint32(procCnMcastIgnore)
	if on {
		op = procCnMcastListen
	}
	b := make([]byte, cnMsgLen+4)
	binary.NativeEndian.PutUint32(b[0:], cnIdxProc)
	binary.NativeEndian.PutUint32(b[4:], cnValProc)
	binary.NativeEndian.PutUint16(b[16:], 4)
	binary.NativeEndian.PutUint32(b[cnMsgLen:], op)
	if _, err := c.Send(netlink.Message{Header: netlink.Header{Type: netlink.Done}, Data: b}); err != nil {
		return fmt.Errorf("subscribe to the process events: %w", err)
	}
	return nil
}

// procEvent is one decoded process event: its kind and the process it
// concerns (the thread group, for a process: pid == tgid), the parent
// for a fork, the new name for a comm change.
type procEvent struct {
	what        uint32
	ack         bool
	pid, tgid   int
	ppid, ptgid int // fork: the parent
	comm        string
}

// parseProcEvent decodes a connector message's payload; ok is false for
// a message that is not a process event.
func parseProcEvent(b []byte) (ev procEvent, ok bool) {
	if len(b) < cnMsgLen+procEventHdr {
		return ev, false
	}
	ne := binary.NativeEndian
	if ne.Uint32(b[0:]) != cnIdxProc || ne.Uint32(b[4:]) != cnValProc {
		return ev, false
	}
	ev.ack = ne.Uint32(b[12:]) != 0
	e := b[cnMsgLen:]
	ev.what = ne.Uint32(e[0:])
	d := e[procEventHdr:]
	u32 := func(i int) int {
		if len(d) < i+4 {
			ok = false
			return 0
		}
		return int(ne.Uint32(d[i:]))
	}
	ok = true
	switch ev.what {
	case procEventFork:
		ev.ppid, ev.ptgid, ev.pid, ev.tgid = u32(0), u32(4), u32(8), u32(12)
	case procEventExec, procEventExit:
		ev.pid, ev.tgid = u32(0), u32(4)
	case procEventComm:
		ev.pid, ev.tgid = u32(0), u32(4)
		if len(d) < 8+16 {
			return ev, false
		}
		// The kernel ends it with a NUL within its 16 bytes; one that
		// does not is cut to the 15 characters a comm has.
		name, _, _ := bytes.Cut(d[8:8+commLen], []byte{0})
		ev.comm = string(name)
	}
	// An acknowledgement is a PROC_EVENT_NONE, and nothing else is.
	if (ev.what == procEventNone) != ev.ack {
		return ev, false
	}
	return ev, ok
}

// run reads the events until ctx ends.
func (w *procWatch) run(ctx context.Context) {
	if w == nil || w.conn == nil {
		return
	}
	stop := context.AfterFunc(ctx, w.closeConn)
	defer stop()
	go func() {
		// keepalived's proc_events_ack_timer_thread: a kernel whose
		// connector has no process events never answers.
		select {
		case <-w.acks:
		case <-time.After(procAckWait):
			w.log.Warn("track_process: the kernel does not answer for process events: the counts stay those of the start, as keepalived's")
		case <-ctx.Done():
		}
	}()
	for {
		msgs, err := w.conn.Receive()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if errors.Is(err, unix.ENOBUFS) {
				w.lost()
				continue
			}
			w.log.Error("track_process: reading the process events failed: processes no longer followed", "err", err)
			return
		}
		for _, m := range msgs {
			if m.Header.Type == netlink.Error || m.Header.Type == netlink.Noop {
				continue
			}
			if ev, ok := parseProcEvent(m.Data); ok {
				w.event(ev)
			}
		}
	}
}

func (w *procWatch) event(ev procEvent) {
	switch ev.what {
	case procEventNone:
		select {
		case w.acks <- struct{}{}:
		default:
		}
	case procEventFork:
		// A new thread's pid is not its tgid: only processes count.
		if ev.pid == ev.tgid {
			w.tr.Fork(ev.ptgid, ev.tgid)
		}
	case procEventExec:
		if ev.pid == ev.tgid {
			if info, ok := w.readProc(strconv.Itoa(ev.tgid), false); ok {
				w.tr.Exec(ev.tgid, info)
			}
		}
	case procEventComm:
		if ev.pid == ev.tgid {
			w.tr.Comm(ev.tgid, ev.comm)
		}
	case procEventExit:
		if ev.pid == ev.tgid {
			w.tr.Exit(ev.tgid)
		}
	}
}

// lost: the kernel dropped events. keepalived doubles the socket's
// buffer and reads /proc again a second later, letting things settle.
func (w *procWatch) lost() {
	// keepalived doubles what the kernel reports (twice what was set),
	// with SO_RCVBUFFORCE when process_monitor_rcv_bufs_force, and
	// advises the size for the configuration.
	n, err := rcvBuf(w.conn)
	if err == nil {
		err = setRcvBuf(w.conn, 2*n, w.force)
	}
	w.log.Warn("track_process: process events lost: reading /proc again in a second", "wait", procRescanWait.String(),
		"process_monitor_rcv_bufs", 2*n, "err", err)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.rescan != nil {
		w.rescan.Stop()
	}
	w.rescan = time.AfterFunc(procRescanWait, func() { w.tr.Rescan(w.readProcs()) })
}

func rcvBuf(c *netlink.Conn) (int, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int
	var serr error
	if err := rc.Control(func(fd uintptr) { n, serr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF) }); err != nil {
		return 0, err
	}
	return n, serr
}

func setRcvBuf(c *netlink.Conn, n int, force bool) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	opt := unix.SO_RCVBUF
	if force {
		opt = unix.SO_RCVBUFFORCE
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, opt, n) }); err != nil {
		return err
	}
	return serr
}

// readProcs reads every process of /proc as keepalived's read_procs.
func (w *procWatch) readProcs() map[int]ProcInfo {
	d, err := os.Open(w.proc)
	if err != nil {
		w.log.Error("track_process: cannot read /proc", "err", err)
		return nil
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		w.log.Error("track_process: cannot read /proc", "err", err)
	}
	out := map[int]ProcInfo{}
	for _, n := range names {
		if n == "" || n[0] <= '0' || n[0] > '9' {
			continue
		}
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		if info, ok := w.readProc(n, true); ok {
			out[pid] = info
		}
	}
	return out
}

// readProc reads what the blocks match of one process: its command line
// (no more than matching needs) and its comm, from stat in the scan
// (which also tells a zombie, left out) or from comm after an exec. ok is
// false when the process is gone.
func (w *procWatch) readProc(pid string, scan bool) (ProcInfo, bool) {
	var info ProcInfo
	if w.tr.UseCmdline {
		b, err := readAtMost(w.proc+"/"+pid+"/cmdline", w.tr.CmdlineLimit)
		if err != nil {
			return info, false
		}
		info.Cmdline = b
	}
	if !w.tr.UseComm {
		return info, true
	}
	if !scan {
		b, err := readAtMost(w.proc+"/"+pid+"/comm", 16)
		if err != nil {
			return info, false
		}
		info.Comm = string(bytes.TrimSuffix(b, []byte("\n")))
		return info, true
	}
	b, err := readAtMost(w.proc+"/"+pid+"/stat", 512)
	if err != nil {
		return info, false
	}
	// "PID (COMM) S ...": the comm may itself hold ")", the last one ends it.
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open || len(b) < end+3 {
		return info, false
	}
	if b[end+2] == 'Z' {
		return info, false
	}
	info.Comm = string(b[open+1 : end])
	return info, true
}

func readAtMost(path string, n int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, n)
	m, err := io.ReadFull(f, b)
	if err == io.ErrUnexpectedEOF || err == io.EOF {
		err = nil
	}
	return b[:m], err
}

// up says whether the block name has quorum; ok is false for one not
// tracked.
func (w *procWatch) up(name string) (bool, bool) {
	if w == nil {
		return false, false
	}
	return w.tr.Up(name)
}

// close unsubscribes and stops the delays; it may be called more than
// once.
func (w *procWatch) close() {
	if w == nil {
		return
	}
	w.tr.Stop()
	w.mu.Lock()
	if w.rescan != nil {
		w.rescan.Stop()
	}
	w.mu.Unlock()
	w.closeConn()
}

// closeConn unsubscribes, as keepalived's end_process_monitor, and
// closes the socket, ending run's read.
func (w *procWatch) closeConn() {
	w.closing.Do(func() {
		if w.conn != nil {
			setProcListen(w.conn, false)
			w.conn.Close()
		}
	})
}
