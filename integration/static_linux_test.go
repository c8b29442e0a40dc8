package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/directord/directord/internal/nstest"
)

// TestBinaryStaticEntries runs the directord binary on a file with static
// entries and no vrrp_instance (keepalived runs its VRRP process for them
// alone): they are added at start, changed by a reload (SIGHUP) and
// removed by SIGTERM.
func TestBinaryStaticEntries(t *testing.T) {
	nstest.RequireRoot(t)
	a := nstest.New(t, "dd-ist-a")
	b := nstest.New(t, "dd-ist-b")
	nstest.Link(t, a, b, "dda", "ddb", "192.0.2.1/24", "192.0.2.2/24")
	state := func() string {
		var s strings.Builder
		for _, args := range [][]string{{"rule"}, {"route", "show", "table", "all"}, {"addr", "show", "dev", "dda"}} {
			out, err := exec.Command("ip", append([]string{"-n", a.Name}, args...)...).CombinedOutput()
			if err != nil {
				t.Fatalf("ip %s: %v: %s", args, err, out)
			}
			s.Write(out)
		}
		return s.String()
	}
	before := state()
	conf := func(n string) string {
		return "static_ipaddress {\n 192.0.2." + n + "/32 dev dda\n}\n" +
			"static_routes {\n 198.51.100." + n + "/32 via 192.0.2.254 dev dda\n}\n" +
			"static_rules {\n from 192.0.2." + n + " table 100 priority 2" + n + "\n}\n"
	}
	file := filepath.Join(t.TempDir(), "keepalived.conf")
	if err := os.WriteFile(file, []byte(conf("10")), 0o644); err != nil {
		t.Fatal(err)
	}
	d := nstest.Start(t, a, binary, "-n", "-l", "-f", file)
	has := func(n string) bool {
		s := state()
		return strings.Contains(s, "inet 192.0.2."+n+"/32") && strings.Contains(s, "198.51.100."+n+" via 192.0.2.254") &&
			strings.Contains(s, "2"+n+":\tfrom 192.0.2."+n+" lookup 100 proto keepalived")
	}
	nstest.WaitFor(t, 5*time.Second, "the static entries", func() bool { return has("10") })
	if err := os.WriteFile(file, []byte(conf("11")), 0o644); err != nil {
		t.Fatal(err)
	}
	d.Cmd.Process.Signal(syscall.SIGHUP)
	nstest.WaitFor(t, 5*time.Second, "the reloaded static entries", func() bool {
		s := state()
		return has("11") && !strings.Contains(s, "192.0.2.10") && !strings.Contains(s, "198.51.100.10")
	})
	d.Signal(syscall.SIGTERM)
	if !d.Wait(10 * time.Second) {
		t.Fatal("directord did not exit")
	}
	if got := state(); got != before {
		t.Errorf("directord left at stop:\n%s\nwant:\n%s", got, before)
	}
}

// TestBinaryRefusesMissingInterface: a static entry on an interface this
// host lacks stops directord at start, as it stops keepalived
// ("Non-existent interface specified in configuration"), having added
// nothing.
func TestBinaryRefusesMissingInterface(t *testing.T) {
	nstest.RequireRoot(t)
	a := nstest.New(t, "dd-ism-a")
	b := nstest.New(t, "dd-ism-b")
	nstest.Link(t, a, b, "dda", "ddb", "192.0.2.1/24", "192.0.2.2/24")
	file := filepath.Join(t.TempDir(), "keepalived.conf")
	conf := "static_ipaddress {\n 192.0.2.10/32 dev dda\n 192.0.2.11/32 dev nosuch0\n}\n"
	if err := os.WriteFile(file, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	d := nstest.Start(t, a, binary, "-n", "-l", "-f", file)
	if !d.Wait(10 * time.Second) {
		t.Fatal("directord did not stop")
	}
	if code := d.Cmd.ProcessState.ExitCode(); code == 0 {
		t.Errorf("exit code 0")
	}
	if !strings.Contains(d.Output(), "interface nosuch0 does not exist") {
		t.Errorf("output does not name the interface:\n%s", d.Output())
	}
	if a.HasAddr(t, "dda", "192.0.2.10") {
		t.Error("192.0.2.10 was added")
	}
}
