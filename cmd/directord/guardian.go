package main

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/directord/directord/vrrp"
)

// The guardian is a small process of directord's own binary
// (directord --guardian) that outlives the daemon: it reads the daemon's
// Testament from a pipe only the daemon can write, and when the pipe ends
// without a goodbye (SIGKILL, the OOM killer, a crash) it sends the master
// instances' priority 0 adverts and removes the addresses directord had
// added, then exits. A pipe's end is the kernel's notice of death: no
// polling, no PID to reuse. It never acts while the daemon lives (the
// daemon holds the pipe open until it exits) nor on a clean stop (the
// daemon says goodbye after its own hand-over), and a restarted daemon
// starts a guardian of its own.

// guardianFD is the pipe's read end in the guardian.
const guardianFD = 3

// guardianMain runs the guardian; the daemon starts it.
func guardianMain(o *options, stderr io.Writer) int {
	log := newLogger(o, stderr).With("process", "guardian")
	h, err := netlink.NewHandle()
	if err != nil {
		log.Error("guardian: netlink", "err", err)
		return exitFailure
	}
	defer h.Close()
	// SIGTERM and SIGINT are the daemon's business (a shell's ^C, a
	// unit's stop): the guardian waits for the pipe either way.
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	err = vrrp.RunGuardian(os.NewFile(guardianFD, "directord"), h, log)
	if err != nil && !errors.Is(err, vrrp.ErrDaemonDied) {
		// RunGuardian logged what it did for a dead daemon (ErrDaemonDied
		// and what failed of it); this is the rest.
		log.Error("guardian: stopped", "err", err)
	}
	if err != nil && err != vrrp.ErrDaemonDied {
		return exitFailure
	}
	return exitOK
}

// guardian is the daemon's side: the guardian process, restarted if it
// dies, and the latest Testament, written to it as it changes.
type guardian struct {
	log  *slog.Logger
	argv []string

	mu      sync.Mutex
	w       *os.File
	cmd     *exec.Cmd
	latest  *vrrp.Testament
	closing bool
	exited  chan struct{}
	update  chan struct{}
	done    chan struct{}
}

// startGuardian starts the guardian process; the node's testaments reach
// it through Bequeath.
func startGuardian(o *options, log *slog.Logger) (*guardian, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	g := &guardian{log: log, argv: []string{self, "--guardian", "--log-format", o.logFormat},
		update: make(chan struct{}, 1), done: make(chan struct{})}
	if err := g.spawn(); err != nil {
		return nil, err
	}
	go g.writer()
	return g, nil
}

// spawn starts a guardian process on a new pipe; g.mu held or not yet
// shared.
func (g *guardian) spawn() error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd := exec.Command(g.argv[0], g.argv[1:]...)
	cmd.ExtraFiles = []*os.File{r} // fd 3
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	// A group of its own: a kill of the daemon's process group does not
	// take the guardian with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return err
	}
	r.Close()
	g.w, g.cmd, g.exited = w, cmd, make(chan struct{})
	go g.watch(cmd, g.exited)
	return nil
}

// watch restarts the guardian if it dies while the daemon lives.
func (g *guardian) watch(cmd *exec.Cmd, exited chan struct{}) {
	err := cmd.Wait()
	close(exited)
	g.mu.Lock()
	closing := g.closing
	g.mu.Unlock()
	if closing {
		return
	}
	g.log.Error("the guardian died: restarting it in 1 s; until then a crash of directord leaves its VIPs", "err", err)
	for wait := time.Second; ; wait = min(2*wait, 30*time.Second) {
		time.Sleep(wait)
		g.mu.Lock()
		if g.closing {
			g.mu.Unlock()
			return
		}
		g.w.Close()
		err := g.spawn()
		if err == nil {
			g.signal() // the new one gets the latest testament
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
		g.log.Error("the guardian cannot start: trying again", "in", min(2*wait, 30*time.Second).String(), "err", err)
	}
}

// Bequeath takes the node's latest Testament; it never blocks.
func (g *guardian) Bequeath(t vrrp.Testament) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.latest = &t
	if !g.closing {
		g.signal()
	}
}

// signal wakes the writer; g.mu held, not closing.
func (g *guardian) signal() {
	select {
	case g.update <- struct{}{}:
	default:
	}
}

// writer writes each new Testament to the guardian, the latest only.
func (g *guardian) writer() {
	defer close(g.done)
	for range g.update {
		g.mu.Lock()
		t, w := g.latest, g.w
		g.mu.Unlock()
		if t == nil {
			continue
		}
		b, _ := json.Marshal(vrrp.GuardianMessage{Testament: t})
		if _, err := w.Write(append(b, '\n')); err != nil {
			g.log.Warn("guardian: writing the testament", "err", err)
		}
	}
}

// Stop says goodbye after a clean stop (VRRP handed over already) and
// waits a little for the guardian to leave.
func (g *guardian) Stop() {
	g.mu.Lock()
	g.closing = true
	close(g.update)
	g.mu.Unlock()
	<-g.done // the last testament written
	g.mu.Lock()
	w, exited := g.w, g.exited
	g.mu.Unlock()
	b, _ := json.Marshal(vrrp.GuardianMessage{Bye: true})
	w.Write(append(b, '\n'))
	w.Close()
	select {
	case <-exited:
	case <-time.After(2 * time.Second):
		g.log.Warn("the guardian did not leave after goodbye")
	}
}
