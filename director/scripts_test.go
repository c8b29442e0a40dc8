package director

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/directord/directord/internal/script"
)

// TestLVSScriptsShareTheDropPolicy: the data plane's quorum scripts go
// through the shared script queue and its one drop policy: with
// quorum_up running and the lane full, the oldest waiting script
// (quorum_down) is dropped and counted as kind lvs; the newest runs.
func TestLVSScriptsShareTheDropPolicy(t *testing.T) {
	dir := t.TempDir()
	hold, mark, out := filepath.Join(dir, "hold"), filepath.Join(dir, "mark"), filepath.Join(dir, "out")
	if err := syscall.Mkfifo(hold, 0o600); err != nil {
		t.Fatal(err)
	}
	up, down := filepath.Join(dir, "up"), filepath.Join(dir, "down")
	// The first quorum_up holds until the test writes to the FIFO.
	write := func(p, body string) {
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(up, fmt.Sprintf("echo up >> %s\nif [ ! -e %s ]; then : > %s; read x < %s; fi\n", out, mark, mark, hold))
	write(down, fmt.Sprintf("echo down >> %s\n", out))
	cfg := parse(t, fmt.Sprintf(`
virtual_server 192.0.2.1 80 {
    lb_algo rr
    lb_kind DR
    protocol TCP
    quorum 2
    quorum_up %s
    quorum_down %s
    real_server 10.0.0.1 80 {
        TCP_CHECK { }
    }
    real_server 10.0.0.2 80 {
        TCP_CHECK { }
    }
}
`, up, down))
	l := newLVS(t, cfg, newFakeKernel())
	q := script.NewQueue(nil)
	q.Limit = 1
	dropped := make(chan script.Job, 4)
	q.OnDrop = func(j script.Job) { dropped <- j }
	l.ShareScripts(q)
	ctx, stop := running(t, l)
	// Open returns once the starting quorum_up has the FIFO open.
	w, err := os.OpenFile(hold, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	l.Report(ctx, 0, 0, RealState{Alive: false, Weight: 1}) // lost: quorum_down waits
	l.Report(ctx, 0, 0, RealState{Alive: true, Weight: 1})  // won: quorum_up waits, quorum_down dropped
	select {
	case j := <-dropped:
		if j.Kind != script.KindLVS || j.Script.Command != down {
			t.Errorf("dropped %s %q, want lvs %q", j.Kind, j.Script.Command, down)
		}
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	w.WriteString("go\n")
	w.Close()
	if err := q.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(out); string(got) != "up\nup\n" {
		t.Errorf("ran %q, want quorum_up twice, quorum_down dropped", got)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}
