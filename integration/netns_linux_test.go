package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/directord/directord/internal/control"
	"github.com/directord/directord/internal/nstest"
)

// startInHost runs the directord binary from the test's own (the host's)
// namespace, as systemd would, with the configuration text; it is
// stopped (SIGTERM, then SIGKILL) when the test ends.
//
// Its output goes to a file, not a pipe: the guardian, which outlives a
// killed daemon for a moment, would hold a pipe open.
func startInHost(t *testing.T, text string, args ...string) (cmd *exec.Cmd, output func() string, done chan struct{}) {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "keepalived.conf")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(filepath.Join(dir, "output"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	output = func() string { b, _ := os.ReadFile(out.Name()); return string(b) }
	cmd = exec.Command(binary, append([]string{"-n", "-l", "-f", file}, args...)...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done = make(chan struct{}) // closed once cmd.Wait has returned
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-done
			}
		}
		if t.Failed() || testing.Verbose() {
			t.Logf("directord:\n%s", output())
		}
	})
	return cmd, output, done
}

// netnsOf is the namespace of process pid, as readlink shows it
// ("net:[INODE]").
func netnsOf(t *testing.T, pid int) string {
	t.Helper()
	s, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestNetNamespace runs directord from the host's namespace on a file
// that says net_namespace: the daemon (same PID), its threads and its
// guardian run in that namespace, VRRP works there beside keepalived,
// directorctl's socket is the namespace's own, and SIGTERM hands the VIP
// over as anywhere else.
func TestNetNamespace(t *testing.T) {
	nstest.RequireRoot(t)
	a := nstest.New(t, "dd-ns-a")
	b := nstest.New(t, "dd-ns-b")
	nstest.Link(t, a, b, "dna", "dnb", "192.0.2.1/24", "192.0.2.2/24")
	conf := "net_namespace " + a.Name + "\n" + nstest.Instance("dna", 150, 3, "0.1", "192.0.2.100/24", "")
	cmd, _, done := startInHost(t, conf)
	nstest.Keepalived(t, b, nstest.Instance("dnb", 100, 3, "0.1", "192.0.2.100/24", ""))
	converged := func() bool { return a.HasAddr(t, "dna", "192.0.2.100") && !b.HasAddr(t, "dnb", "192.0.2.100") }
	nstest.WaitFor(t, 5*time.Second, "directord, in its namespace, holds the VIP", converged)

	want := netnsOf(t, os.Getpid())
	a.Do(t, func() { want = netnsOf(t, syscall.Gettid()) })
	pid := cmd.Process.Pid
	if got := netnsOf(t, pid); got != want {
		t.Errorf("directord (PID %d) runs in %s, want %s (%s)", pid, got, want, a.Name)
	}
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, task := range tasks {
		s, err := os.Readlink(fmt.Sprintf("/proc/%d/task/%s/ns/net", pid, task.Name()))
		if err == nil && s != want {
			t.Errorf("directord's thread %s runs in %s, want %s", task.Name(), s, want)
		}
	}
	g := 0
	nstest.WaitFor(t, 5*time.Second, "the guardian", func() bool { g = guardianOf(t, pid); return g != 0 })
	if got := netnsOf(t, g); got != want {
		t.Errorf("the guardian (PID %d) runs in %s, want %s", g, got, want)
	}
	if env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", g)); strings.Contains(string(env), "DIRECTORD_NET_NAMESPACE=") {
		t.Error("the exec's mark reached the guardian's environment")
	}
	if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); strings.TrimSpace(string(comm)) != "directord" {
		t.Errorf("after the exec the daemon is named %q, want directord", strings.TrimSpace(string(comm)))
	}

	st, err := control.Dial(control.NamespaceSocket(a.Name)).Status(context.Background())
	if err != nil {
		t.Fatalf("status over the namespace's socket %s: %v", control.NamespaceSocket(a.Name), err)
	}
	if st.PID != pid || len(st.Instances) != 1 || st.Instances[0].State != "MASTER" {
		t.Errorf("status: PID %d, instances %+v; want PID %d, one MASTER", st.PID, st.Instances, pid)
	}

	cmd.Process.Signal(syscall.SIGTERM)
	nstest.WaitFor(t, 3*time.Second, "keepalived takes the VIP", func() bool { return b.HasAddr(t, "dnb", "192.0.2.100") })
	select {
	case <-done:
		if !cmd.ProcessState.Success() {
			t.Errorf("directord ended with %v after SIGTERM", cmd.ProcessState)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("directord did not exit")
	}
	if a.HasAddr(t, "dna", "192.0.2.100") {
		t.Error("directord left its VIP behind after SIGTERM")
	}
}

// TestNetNamespaceAbsent: a net_namespace that does not exist stops
// directord at once, as keepalived, with the file:line and what to do;
// exit status 1 (keepalived's is 0).
func TestNetNamespaceAbsent(t *testing.T) {
	nstest.RequireRoot(t)
	name := fmt.Sprintf("dd-absent-%d", os.Getpid())
	cmd, output, done := startInHost(t, "net_namespace "+name+"\n"+nstest.Instance("eth0", 150, 3, "1", "192.0.2.100/24", ""))
	select {
	case <-done:
		if code := cmd.ProcessState.ExitCode(); code != 1 {
			t.Errorf("directord ended with %v, want exit status 1", cmd.ProcessState)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("directord did not stop")
	}
	for _, want := range []string{"keepalived.conf:1: net_namespace " + name, "/run/netns/" + name, "ip netns add " + name} {
		if out := output(); !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
