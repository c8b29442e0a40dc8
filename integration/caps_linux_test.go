package integration

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/directord/directord/internal/nstest"
)

// unitCaps reads the capabilities dist/directord.service bounds directord
// to (every CapabilityBoundingSet= line: systemd takes their union).
func unitCaps(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../dist/directord.service")
	if err != nil {
		t.Fatal(err)
	}
	var caps []string
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "CapabilityBoundingSet="); ok {
			caps = append(caps, strings.Fields(v)...)
		}
	}
	if len(caps) == 0 {
		t.Fatal("dist/directord.service bounds no capability")
	}
	return caps
}

// capBits are the capabilities a test may meet in the unit.
var capBits = map[string]int{
	"CAP_DAC_OVERRIDE": unix.CAP_DAC_OVERRIDE, "CAP_DAC_READ_SEARCH": unix.CAP_DAC_READ_SEARCH,
	"CAP_KILL": unix.CAP_KILL, "CAP_SETGID": unix.CAP_SETGID, "CAP_SETUID": unix.CAP_SETUID,
	"CAP_NET_BIND_SERVICE": unix.CAP_NET_BIND_SERVICE, "CAP_NET_ADMIN": unix.CAP_NET_ADMIN,
	"CAP_NET_RAW": unix.CAP_NET_RAW, "CAP_SYS_NICE": unix.CAP_SYS_NICE, "CAP_SYS_ADMIN": unix.CAP_SYS_ADMIN,
	"CAP_SYS_RESOURCE": unix.CAP_SYS_RESOURCE, "CAP_IPC_LOCK": unix.CAP_IPC_LOCK,
}

// procStatus returns a field of /proc/PID/status.
func procStatus(pid int, field string) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// pidsOf returns the processes whose command line is exactly argv.
func pidsOf(argv ...string) []int {
	want := strings.Join(argv, "\x00") + "\x00"
	var pids []int
	es, _ := os.ReadDir("/proc")
	for _, e := range es {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p)); string(cmd) == want {
			pids = append(pids, p)
		}
	}
	return pids
}

// TestUnitCapabilities runs the directord binary as systemd runs the unit
// in dist/: as root bounded to its CapabilityBoundingSet and no more (with
// no inheritable capability, which systemd does not give a root service
// either), beside keepalived. It must do everything it does with all of
// them: start (link tracking subscribed, no setns and so no
// CAP_SYS_ADMIN), run at nice -15, serve metrics on a port below 1024,
// elect itself, add its VIPs and announce them (IPv4 and IPv6), run a
// notify script as script_user, kill that user's vrrp_script at its
// timeout, follow a tracked interface into FAULT (keepalived takes over)
// and back. IPVS is not on the host's kernel: the data plane's use of
// CAP_NET_ADMIN is not exercised here.
func TestUnitCapabilities(t *testing.T) {
	nstest.RequireRoot(t)
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("setpriv (util-linux) is not installed")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skip("no user nobody for script_user")
	}
	caps := unitCaps(t)
	var want uint64
	bounding := []string{"-all"}
	for _, c := range caps {
		bit, ok := capBits[c]
		if !ok {
			t.Fatalf("the unit names %s: add it to capBits", c)
		}
		want |= 1 << bit
		bounding = append(bounding, "+"+strings.ToLower(strings.TrimPrefix(c, "CAP_")))
	}
	if want&(1<<unix.CAP_SYS_ADMIN) != 0 {
		t.Error("the unit still grants CAP_SYS_ADMIN")
	}

	// Scripts as nobody: a folder nobody can reach, a result it can write.
	dir, err := os.MkdirTemp("", "directord-caps")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	out := filepath.Join(dir, "out")
	for _, d := range []struct {
		path string
		mode os.FileMode
	}{{dir, 0o755}, {out, 0o777}} {
		if err := os.MkdirAll(d.path, d.mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(d.path, d.mode)
	}
	notify := filepath.Join(dir, "notify.sh")
	if err := os.WriteFile(notify, []byte("#!/bin/sh\nid -u > "+out+"/$3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A script that outlives its timeout, with an argument to find it by.
	hang := fmt.Sprintf("%d.5", 7000+os.Getpid()%1000)

	a := nstest.New(t, "dd-cap-a")
	b := nstest.New(t, "dd-cap-b")
	nstest.Link(t, a, b, "dda", "ddb", "192.0.2.1/24 2001:db8::1/64", "192.0.2.2/24 2001:db8::2/64")
	nstest.Link(t, a, b, "trk", "trk-peer", "", "")
	arps := nstest.WatchARP(t, b, "ddb")
	nas := nstest.WatchNA(t, b, "ddb")
	conf := fmt.Sprintf(`global_defs {
    script_user nobody
}
vrrp_script hang {
    script "/bin/sleep %s"
    interval 1
    timeout 1
    weight -1
}
`, hang) + nstest.Instance("dda", 150, 3, "0.1", "192.0.2.100/24", fmt.Sprintf(`notify %s
    track_script {
        hang
    }
    track_interface {
        trk
    }
    virtual_ipaddress_excluded {
        2001:db8::100/64
    }`, notify))
	file := filepath.Join(dir, "keepalived.conf")
	if err := os.WriteFile(file, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	d := nstest.Start(t, a, append([]string{"setpriv", "--bounding-set", strings.Join(bounding, ","),
		"--inh-caps", "-all", "--ambient-caps", "-all", "--"}, binary, "-n", "-l", "-f", file, "--metrics-address", "127.0.0.1:99")...)
	nstest.Keepalived(t, b, nstest.Instance("ddb", 100, 3, "0.1", "192.0.2.100/24", "virtual_ipaddress_excluded {\n        2001:db8::100/64\n    }"))

	holds := func(ns *nstest.NS, ifn string) func() bool {
		return func() bool { return ns.HasAddr(t, ifn, "192.0.2.100") && ns.HasAddr(t, ifn, "2001:db8::100") }
	}
	nstest.WaitFor(t, 15*time.Second, "directord holds the VIPs", holds(a, "dda"))
	nstest.WaitFor(t, 10*time.Second, "keepalived backup", func() bool { return !b.HasAddr(t, "ddb", "192.0.2.100") })

	// The daemon (ip netns exec and setpriv exec'd into it) has exactly
	// the unit's capabilities.
	pid := d.Cmd.Process.Pid
	eff, err := strconv.ParseUint(procStatus(pid, "CapEff"), 16, 64)
	if err != nil || !strings.HasSuffix(procStatus(pid, "Name"), "directord") {
		t.Fatalf("process %d: %q, CapEff %q", pid, procStatus(pid, "Name"), procStatus(pid, "CapEff"))
	}
	if eff != want {
		t.Errorf("directord's effective capabilities %#x, the unit's %#x", eff, want)
	}
	if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
		if f[16] != "-15" {
			t.Errorf("directord runs at nice %s, want -15 (vrrp_priority's default)", f[16])
		}
	}

	// A metrics port below 1024 (CAP_NET_BIND_SERVICE).
	nstest.WaitFor(t, 10*time.Second, "metrics on port 99", func() bool {
		var got string
		a.Do(t, func() {
			c, err := net.DialTimeout("tcp", "127.0.0.1:99", time.Second)
			if err != nil {
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(time.Second))
			fmt.Fprintf(c, "GET /metrics HTTP/1.0\r\n\r\n")
			b, _ := io.ReadAll(c)
			got = string(b)
		})
		return strings.HasPrefix(got, "HTTP/1.0 200") || strings.HasPrefix(got, "HTTP/1.1 200")
	})
	nstest.WaitFor(t, 10*time.Second, "announcements of both VIPs", func() bool {
		return arps.Count("192.0.2.100", start) > 0 && nas.Count("2001:db8::100", start) > 0
	})
	nstest.WaitFor(t, 3*time.Second, "notify MASTER run as nobody", func() bool {
		got, err := os.ReadFile(filepath.Join(out, "MASTER"))
		return err == nil && strings.TrimSpace(string(got)) == nobody.Uid
	})
	var hung []int
	nstest.WaitFor(t, 3*time.Second, "the vrrp_script running", func() bool {
		hung = pidsOf("/bin/sleep", hang)
		return len(hung) > 0
	})
	if owner := procStatus(hung[0], "Uid"); owner != "" && strings.Fields(owner)[0] != nobody.Uid {
		t.Errorf("the vrrp_script runs as uid %s, want nobody's %s", strings.Fields(owner)[0], nobody.Uid)
	}
	nstest.WaitFor(t, 5*time.Second, "the vrrp_script killed at its timeout", func() bool {
		_, err := os.Stat(fmt.Sprintf("/proc/%d", hung[0]))
		return err != nil || exited(hung[0])
	})

	// Interface tracking: a tracked interface going down is a fault.
	l, err := a.NL.LinkByName("trk")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.NL.LinkSetDown(l); err != nil {
		t.Fatal(err)
	}
	nstest.WaitFor(t, 3*time.Second, "notify FAULT", func() bool {
		_, err := os.Stat(filepath.Join(out, "FAULT"))
		return err == nil
	})
	nstest.WaitFor(t, 3*time.Second, "keepalived takes over", holds(b, "ddb"))
	if err := a.NL.LinkSetUp(l); err != nil {
		t.Fatal(err)
	}
	nstest.WaitFor(t, 5*time.Second, "directord preempts again", func() bool {
		return holds(a, "dda")() && !b.HasAddr(t, "ddb", "192.0.2.100")
	})
}
