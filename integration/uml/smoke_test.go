//go:build linux

// The smoke test of the real-kernel harness: run in the User-Mode Linux
// guest by make integration, it checks what the IPVS tests rely on there.
// On a host without IPVS every test skips.
package uml_test

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netns"

	"github.com/directord/directord/internal/ipvstest"
)

// setup skips or fails as ipvstest decides, and returns ipvsadm's path.
func setup(t *testing.T) string {
	t.Helper()
	ipvstest.Require(t)
	ipvstest.RequireRoot(t)
	ipvstest.RequireCommand(t, "ip")
	return ipvstest.RequireCommand(t, "ipvsadm")
}

// run runs a program and returns its standard output; the test fails if
// the program does.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

var nsCount atomic.Int32

// newNS makes a network namespace with `ip netns add`, deleted when the
// test ends, and brings its lo up.
func newNS(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("umlsmoke-%d-%d", os.Getpid(), nsCount.Add(1))
	run(t, "ip", "netns", "add", name)
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v\n%s", name, err, out)
		}
	})
	run(t, "ip", "-n", name, "link", "set", "lo", "up")
	return name
}

// inNS runs f on a thread inside the named namespace.
func inNS(t *testing.T, name string, f func()) {
	t.Helper()
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		t.Fatal(err)
	}
	defer orig.Close()
	ns, err := netns.GetFromName(name)
	if err != nil {
		runtime.UnlockOSThread()
		t.Fatal(err)
	}
	defer ns.Close()
	if err := netns.Set(ns); err != nil {
		runtime.UnlockOSThread()
		t.Fatal(err)
	}
	defer func() {
		// A thread that cannot go back stays locked, and the runtime
		// ends it with this goroutine.
		if err := netns.Set(orig); err != nil {
			t.Errorf("back to the first namespace: %v", err)
			return
		}
		runtime.UnlockOSThread()
	}()
	f()
}

// TestGuest checks the guest's clock and its temporary folders.
func TestGuest(t *testing.T) {
	setup(t)

	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "x" {
		t.Fatalf("read back %q, %v", b, err)
	}
	if ipvstest.Required() {
		// In the guest, temporary files stay in its memory.
		const tmpfsMagic = 0x01021994
		var st syscall.Statfs_t
		if err := syscall.Statfs(dir, &st); err != nil {
			t.Fatal(err)
		}
		if st.Type != tmpfsMagic {
			t.Errorf("t.TempDir() %s is on a file system of type %#x, not tmpfs: the guest would write to the host", dir, st.Type)
		}
	}

	// The wall clock: not before this test binary was built (on the host,
	// just before make integration booted the guest).
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(exe)
	if err != nil {
		t.Fatal(err)
	}
	if now := time.Now(); now.Before(fi.ModTime().Add(-2 * time.Second)) {
		t.Errorf("the clock says %v, before %s was written (%v)", now, exe, fi.ModTime())
	}
	// The clock runs: a sleep lasts about as long by the wall clock as by
	// the monotonic one.
	wall0, mono0 := time.Now().Round(0), time.Now()
	time.Sleep(200 * time.Millisecond)
	wall, mono := time.Now().Round(0).Sub(wall0), time.Since(mono0)
	if mono < 200*time.Millisecond || wall < 150*time.Millisecond || wall > mono+time.Second {
		t.Errorf("a 200ms sleep took %v by the monotonic clock and %v by the wall clock", mono, wall)
	}
}

// TestIPVSAdm adds a service and a destination in a namespace of its own
// and reads the table back.
func TestIPVSAdm(t *testing.T) {
	ipvsadm := setup(t)
	ns := newNS(t)
	run(t, "ip", "netns", "exec", ns, ipvsadm, "-A", "-t", "10.0.0.1:80", "-s", "rr")
	run(t, "ip", "netns", "exec", ns, ipvsadm, "-a", "-t", "10.0.0.1:80", "-r", "10.0.0.2:80", "-g", "-w", "3")
	got := run(t, "ip", "netns", "exec", ns, ipvsadm, "-Sn")
	want := "-A -t 10.0.0.1:80 -s rr\n" +
		"-a -t 10.0.0.1:80 -r 10.0.0.2:80 -g -w 3\n"
	if got != want {
		t.Errorf("ipvsadm -Sn:\n%s\nwant:\n%s", got, want)
	}
	// Each namespace has a table of its own.
	if got := run(t, "ip", "netns", "exec", newNS(t), ipvsadm, "-Sn"); got != "" {
		t.Errorf("ipvsadm -Sn in a new namespace:\n%s\nwant nothing", got)
	}
}

// TestSchedulers makes a service with each scheduler.
func TestSchedulers(t *testing.T) {
	ipvsadm := setup(t)
	schedulers := []string{"rr", "wrr", "lc", "wlc", "lblc", "lblcr", "dh", "sh", "sed", "nq", "fo", "ovf", "mh"}
	if _, err := os.Stat("/sys/module/ip_vs_twos"); err == nil {
		schedulers = append(schedulers, "twos") // Linux 6.2 and later
	}
	ns := newNS(t)
	var want strings.Builder
	for i, s := range schedulers {
		vip := fmt.Sprintf("10.0.0.%d:80", i+1)
		fmt.Fprintf(&want, "-A -t %s -s %s\n", vip, s)
		t.Run(s, func(t *testing.T) {
			out, err := exec.Command("ip", "netns", "exec", ns, ipvsadm, "-A", "-t", vip, "-s", s).CombinedOutput()
			if err != nil {
				_, loaded := os.Stat("/sys/module/ip_vs_" + s)
				t.Errorf("ipvsadm -A -t %s -s %s: %v\n%s(module ip_vs_%s loaded: %v)", vip, s, err, out, s, loaded == nil)
			}
		})
	}
	if got := run(t, "ip", "netns", "exec", ns, ipvsadm, "-Sn"); got != want.String() {
		t.Errorf("ipvsadm -Sn:\n%s\nwant:\n%s", got, want.String())
	}
}

// TestVeth joins two namespaces with a veth pair and sends traffic across.
func TestVeth(t *testing.T) {
	setup(t)
	a, b := newNS(t), newNS(t)
	run(t, "ip", "-n", a, "link", "add", "name", "va", "type", "veth", "peer", "name", "vb", "netns", b)
	run(t, "ip", "-n", a, "addr", "add", "192.0.2.1/24", "dev", "va")
	run(t, "ip", "-n", b, "addr", "add", "192.0.2.2/24", "dev", "vb")
	run(t, "ip", "-n", a, "link", "set", "va", "up")
	run(t, "ip", "-n", b, "link", "set", "vb", "up")

	reach(t, a, b, "192.0.2.1", "192.0.2.2")
}

// TestBridge joins two namespaces through a bridge in a third.
func TestBridge(t *testing.T) {
	setup(t)
	hub, a, b := newNS(t), newNS(t), newNS(t)
	run(t, "ip", "-n", hub, "link", "add", "name", "br0", "type", "bridge")
	run(t, "ip", "-n", hub, "link", "set", "br0", "up")
	for i, ns := range []string{a, b} {
		port := fmt.Sprintf("p%d", i)
		run(t, "ip", "-n", hub, "link", "add", "name", port, "type", "veth", "peer", "name", "eth0", "netns", ns)
		run(t, "ip", "-n", hub, "link", "set", port, "master", "br0", "up")
		run(t, "ip", "-n", ns, "addr", "add", fmt.Sprintf("192.0.2.%d/24", i+1), "dev", "eth0")
		run(t, "ip", "-n", ns, "link", "set", "eth0", "up")
	}
	reach(t, a, b, "192.0.2.1", "192.0.2.2")
}

// reach checks that namespace a, at address from, can reach namespace b
// at address to: a ping if Debian's iputils-ping is installed, and a TCP
// connection.
func reach(t *testing.T, a, b, from, to string) {
	t.Helper()
	if ping, err := exec.LookPath("ping"); err == nil {
		run(t, "ip", "netns", "exec", a, ping, "-c", "1", "-W", "5", to)
	} else {
		t.Log("no ping (Debian's iputils-ping): TCP only")
	}

	var ln net.Listener
	inNS(t, b, func() {
		var err error
		ln, err = net.Listen("tcp", net.JoinHostPort(to, "0"))
		if err != nil {
			t.Fatal(err)
		}
	})
	defer ln.Close()
	accepted := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			_, err = c.Write([]byte("hello"))
			c.Close()
		}
		accepted <- err
	}()
	var conn net.Conn
	inNS(t, a, func() {
		var err error
		conn, err = net.DialTimeout("tcp", ln.Addr().String(), 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
	})
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 16)
	n, err := conn.Read(buf)
	if err != nil || string(buf[:n]) != "hello" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	if err := <-accepted; err != nil {
		t.Fatal(err)
	}
	if l := conn.LocalAddr().(*net.TCPAddr); !l.IP.Equal(net.ParseIP(from)) {
		t.Errorf("local address %v, want %s", l, from)
	}
}
