package vrrp

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/directord/directord/config"
	"github.com/directord/directord/internal/nstest"
)

// TestTrackProcessCountsAsKeepalived runs keepalived 2.2.7 and
// directord's process watch on one configuration and one set of real
// processes, and compares the count of each vrrp_track_process: by comm,
// by argv[0] (given as the program's path, or as a bare name), with
// exact, partial and initial parameters, and names longer than the
// kernel's comm; first from the scan, then after process events (an
// exit, an exec, a shell renaming itself through /proc/self/comm and
// forking a subshell). keepalived must run in the host's namespace to follow
// processes (Debian's build has no net_namespace, with which it would
// open its socket before entering one): its instance is on the host's
// end of a veth pair made for the test, left down and without address,
// so it stays in FAULT and sends nothing. Its counts come from its data
// dump (SIGUSR1, written to $TMPDIR).
func TestTrackProcessCountsAsKeepalived(t *testing.T) {
	nstest.RequireRoot(t)
	if _, err := exec.LookPath("keepalived"); err != nil {
		t.Fatal("keepalived is not installed: make test installs it (apt-get install keepalived)")
	}
	a := nstest.New(t, "dd-tpc-a")
	id := os.Getpid() % 1000000
	ifn := fmt.Sprintf("ddk%dh", id)
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: ifn}, PeerName: "ddkpeer", PeerNamespace: netlink.NsFd(a.NS)}
	if err := netlink.LinkAdd(veth); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { netlink.LinkDel(veth) })
	dir := t.TempDir()
	short := fmt.Sprintf("ddtc%d", id)
	long := fmt.Sprintf("ddtrackedlong%d", id) // more than 15 characters
	prog := trackedCopy(t, dir, "/bin/sleep", short)
	longProg := trackedCopy(t, dir, "/bin/sleep", long)
	run := func(path string, argv0 string, args ...string) {
		cmd := exec.Command(path, args...)
		if argv0 != "" {
			cmd.Args[0] = argv0
		}
		startProc(t, cmd)
	}
	run(prog, "", "1000")
	twoArgs := exec.Command(prog, "1000", "2000")
	startProc(t, twoArgs)
	run(prog, "", "100")
	run(prog, short, "3000") // argv[0] a bare name
	run(longProg, "", "1000")
	shName := fmt.Sprintf("ddts%d", id)
	newName := fmt.Sprintf("ddtn%d", id)
	sh := trackedCopy(t, dir, "/bin/bash", shName)
	blocks := map[string]string{
		"shell":        "process " + shName,
		"renamed":      "process " + newName,
		"comm":         "process " + short,
		"path_as_comm": "process " + prog,
		"argv0_path":   "process " + prog + "\n    full_command",
		"argv0_bare":   "process " + short + "\n    full_command",
		"exact":        "process " + prog + " 1000",
		"exact2":       "process " + prog + " 1000 2000",
		"partial":      "process " + prog + " 1000\n    param_match partial",
		"initial":      "process " + prog + " 10\n    param_match initial",
		"no_args":      "process " + prog + "\n    param_match",
		"long_comm":    "process " + long,
		"long_cut":     "process " + long[:15],
		"long_full":    "process " + longProg + "\n    full_command",
	}
	var conf, track strings.Builder
	for name, body := range blocks {
		fmt.Fprintf(&conf, "vrrp_track_process %s {\n    %s\n}\n", name, body)
		fmt.Fprintf(&track, "        %s weight 1\n", name)
	}
	inst := strings.Replace(nstest.Instance(ifn, 100, 2, "1", "192.0.2.100/24", "track_process {\n"+track.String()+"    }"), "virtual_router_id 51", "virtual_router_id 213", 1)
	kconf := conf.String() + inst
	file := filepath.Join(dir, "keepalived.conf")
	if err := os.WriteFile(file, []byte(kconf), 0o644); err != nil {
		t.Fatal(err)
	}
	kdir := t.TempDir()
	ka := exec.Command("keepalived", "-P", "-n", "-l", "-D", "-f", file,
		"-p", filepath.Join(kdir, "k.pid"), "-r", filepath.Join(kdir, "v.pid"))
	ka.Env = append(os.Environ(), "TMPDIR="+kdir)
	var out strings.Builder
	ka.Stdout, ka.Stderr = &out, &out
	ka.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := ka.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		syscall.Kill(-ka.Process.Pid, syscall.SIGTERM)
		ka.Wait()
		if t.Failed() {
			t.Logf("keepalived:\n%s", out.String())
		}
	}()

	// keepalived's counts, from a fresh dump.
	dump := filepath.Join(kdir, "keepalived.data")
	keepalivedCounts := func() map[string]int {
		if _, err := os.Stat(filepath.Join(kdir, "v.pid")); err != nil {
			return nil
		}
		os.Remove(dump)
		syscall.Kill(ka.Process.Pid, syscall.SIGUSR1)
		for range 40 {
			if b, err := os.ReadFile(dump); err == nil && strings.Contains(string(b), "VRRP Topology") {
				return keepalivedProcessCounts(string(b))
			}
			time.Sleep(50 * time.Millisecond) // polling for the file keepalived writes
		}
		return nil
	}
	cfg, diags := config.Parse("/k.conf", conf.String()+inst, nil, config.Options{Hostname: "h"})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	var w *procWatch
	// compare waits for keepalived's counts to be ready (its events
	// handled) and directord's to agree with them.
	compare := func(what string, ready func(map[string]int) bool) {
		t.Helper()
		var last map[string]int
		agree := func() bool {
			last = keepalivedCounts()
			if len(last) != len(blocks) || !ready(last) {
				return false
			}
			if w == nil {
				w = newProcWatch(trackedProcesses(cfg), &cfg.Global, slog.New(slog.NewTextHandler(testWriter{t, "procs"}, nil)), func([]ProcChange) {})
			}
			for name := range blocks {
				if w.tr.Count(name) != last[name] {
					return false
				}
			}
			return true
		}
		deadline := time.Now().Add(15 * time.Second)
		for !agree() && time.Now().Before(deadline) {
		}
		for name := range blocks {
			if w == nil || w.tr.Count(name) != last[name] {
				got := -1
				if w != nil {
					got = w.tr.Count(name)
				}
				t.Errorf("%s: %s (%s): directord counts %d, keepalived %d", what, name, strings.ReplaceAll(blocks[name], "\n    ", "; "), got, last[name])
			}
		}
		t.Logf("%s: keepalived's counts: %v", what, last)
	}
	compare("the scan", func(map[string]int) bool { return true })
	if w == nil {
		return
	}
	defer w.close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	// Events: an exit, an exec, a rename, and a fork of the renamed.
	endProc(t, twoArgs)
	run(prog, "", "1000")
	r, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer wr.Close()
	cmd := exec.Command(sh, "-c", "printf %s "+newName+" > /proc/$$/comm; ( read y <&3 ) & read x <&3")
	cmd.ExtraFiles = []*os.File{r}
	startProc(t, cmd)
	compare("after the events", func(k map[string]int) bool { return k["exact2"] == 0 && k["exact"] == 2 && k["renamed"] == 2 })
}

var (
	dumpTrackProcess = regexp.MustCompile(`^\s*VRRP Track process = (\S+)`)
	dumpCurrent      = regexp.MustCompile(`^\s*Current processes = (\d+)`)
)

// keepalivedProcessCounts reads "Current processes" per block from
// keepalived's data dump.
func keepalivedProcessCounts(dump string) map[string]int {
	out := map[string]int{}
	cur := ""
	for _, line := range strings.Split(dump, "\n") {
		if m := dumpTrackProcess.FindStringSubmatch(line); m != nil {
			cur = m[1]
		} else if m := dumpCurrent.FindStringSubmatch(line); m != nil && cur != "" {
			out[cur], _ = strconv.Atoi(m[1])
			cur = ""
		}
	}
	return out
}
