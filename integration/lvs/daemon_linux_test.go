package lvs

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/directord/directord/internal/control"
	"github.com/directord/directord/internal/nstest"
)

// ctl is the directorctl that make integration builds beside directord.
func ctl(t *testing.T) string { return built(t, "directorctl") }

// vipRemovals counts the removals of the VIP from ns's interfaces, as
// netlink announces them, until the test ends.
func vipRemovals(t *testing.T, ns *nstest.NS) func() int {
	t.Helper()
	ch := make(chan netlink.AddrUpdate, 64)
	done := make(chan struct{})
	if err := netlink.AddrSubscribeWithOptions(ch, done, netlink.AddrSubscribeOptions{Namespace: &ns.NS}); err != nil {
		t.Fatal(err)
	}
	removed := make(chan int, 1)
	removed <- 0
	go func() {
		for u := range ch {
			if !u.NewAddr && u.LinkAddress.IP.String() == vip {
				removed <- <-removed + 1
			}
		}
	}()
	t.Cleanup(func() { close(done) })
	return func() int { n := <-removed; removed <- n; return n }
}

// TestReloadDisturbsNothing: ten reloads of an unchanged file (its lines
// moved) leave the master master, its VIP in place and the kernel's
// table untouched; a changed real server set costs its difference alone;
// a bad file is refused with its file:line and the old configuration goes
// on. directorctl shows it all, drains and undrains (seen by ipvsadm),
// and refuses a user who is not root; the metrics say the same.
func TestReloadDisturbsNothing(t *testing.T) {
	bin := binary(t)
	ctlBin := ctl(t)
	l := newLAN(t)
	lb := nstest.New(t, name(t, "lb"))
	l.sw.Plug(t, lb, "eth0", "10.1.0.1/24")
	dir := t.TempDir()
	file := filepath.Join(dir, "keepalived.conf")
	sock := filepath.Join(dir, "directord.sock")
	conf := strings.Replace(directorConf(150, ""), "        weight 1\n", `        weight 1
        TCP_CHECK {
            connect_timeout 1
            delay_loop 1
        }
`, 1)
	write := func(s string) {
		if err := os.WriteFile(file, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(conf)
	notes := notifySocket(t, filepath.Join(dir, "notify.sock"))
	t.Setenv("WATCHDOG_USEC", "1000000")
	p := nstest.Start(t, lb, bin, "-n", "-l", "-f", file, "--control-socket", sock, "--metrics-address", "127.0.0.1:9650")
	waitMaster(t, lb)
	removals := vipRemovals(t, lb)
	c := control.Dial(sock)
	status := func() control.Status {
		t.Helper()
		st, err := c.Status(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	// Every real server checked once: its health state is known.
	nstest.WaitFor(t, 10*time.Second, "the first check", func() bool {
		st := status()
		return len(st.VirtualServers) == 1 && len(st.VirtualServers[0].Reals[0].Checks) == 1 && st.VirtualServers[0].Reals[0].Checks[0].Result == "up"
	})
	before := status()
	if len(before.Instances) != 1 || before.Instances[0].State != "MASTER" {
		t.Fatalf("instances %+v", before.Instances)
	}
	reload := func(want uint64, what string) control.Status {
		t.Helper()
		p.Signal(syscall.SIGHUP)
		var st control.Status
		nstest.WaitFor(t, 10*time.Second, what, func() bool {
			st = status()
			return st.ReloadsOK+st.ReloadsFailed == want
		})
		return st
	}
	for i := range 10 {
		write(strings.Repeat("\n", i+1) + conf)
		reload(uint64(i+1), fmt.Sprintf("reload %d", i+1))
	}
	after := status()
	switch {
	case after.ReloadsOK != 10:
		t.Errorf("%d reloads taken of 10: %+v", after.ReloadsOK, after.LastReload)
	case after.Instances[0].State != "MASTER" || after.Instances[0].Transitions != before.Instances[0].Transitions:
		t.Errorf("VRRP moved: %+v, before %+v", after.Instances[0], before.Instances[0])
	case after.IPVS.Operations != before.IPVS.Operations:
		t.Errorf("%d IPVS operations for unchanged reloads", after.IPVS.Operations-before.IPVS.Operations)
	case after.VirtualServers[0].Reals[0].Checks[0].Result != "up":
		t.Errorf("the real server's health state was lost: %+v", after.VirtualServers[0].Reals[0])
	}
	if n := removals(); n != 0 {
		t.Errorf("the VIP was removed %d times", n)
	}

	// A real server more: one operation.
	changed := strings.Replace(conf, "    real_server 10.1.0.3 80 {", "    real_server 10.1.0.4 80 {\n    }\n    real_server 10.1.0.3 80 {", 1)
	write(changed)
	st := reload(11, "the changed file")
	if !strings.Contains(ipvsadm(t, lb, "-Sn"), "-r 10.1.0.4:80") || st.IPVS.Operations != after.IPVS.Operations+1 {
		t.Errorf("a new real server took %d operations (want 1):\n%s", st.IPVS.Operations-after.IPVS.Operations, ipvsadm(t, lb, "-Sn"))
	}
	// A bad file: refused, naming its line; the table and the VIP stay.
	table := ipvsadm(t, lb, "-Sn")
	write(strings.Replace(changed, "    lb_algo rr\n", "    lb_algo rr\n    sideways {\n    }\n", 1))
	st = reload(12, "the bad file")
	if st.ReloadsFailed != 1 || st.LastReload == nil || st.LastReload.OK || !strings.Contains(st.LastReload.Error, "keepalived.conf:") {
		t.Errorf("the bad file: %+v", st.LastReload)
	}
	if got := ipvsadm(t, lb, "-Sn"); got != table || !lb.HasAddr(t, "eth0", vip) || st.Instances[0].State != "MASTER" {
		t.Errorf("after a refused reload: master %v, VIP %v, table\n%s\nwas\n%s", st.Instances[0].State, lb.HasAddr(t, "eth0", vip), got, table)
	}

	// systemd heard READY, a RELOADING and READY per reload, and the
	// watchdog's pings.
	nstest.WaitFor(t, 5*time.Second, "systemd's notifications", func() bool {
		n := notes()
		return n["READY=1"] == 13 && n["RELOADING=1"] == 12 && n["WATCHDOG=1"] > 0
	})

	// directorctl: the table, JSON, drain and undrain, a user not root.
	run := func(cred *syscall.Credential, args ...string) (string, error) {
		cmd := exec.Command(ctlBin, append([]string{"--socket", sock}, args...)...)
		if cred != nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run(nil, "status"); err != nil || !strings.Contains(out, "VI_1") || !strings.Contains(out, "MASTER") || !strings.Contains(out, "10.1.0.3:80") {
		t.Errorf("directorctl status: %v\n%s", err, out)
	}
	if out, err := run(nil, "--json", "status"); err != nil || !strings.Contains(out, `"state": "MASTER"`) {
		t.Errorf("directorctl --json status: %v\n%s", err, out)
	}
	if out, err := run(nil, "drain", "10.1.0.3:80"); err != nil {
		t.Fatalf("drain: %v\n%s", err, out)
	}
	nstest.WaitFor(t, 5*time.Second, "the drained real server at weight 0", func() bool {
		return strings.Contains(ipvsadm(t, lb, "-Sn"), "-a -t "+vip+":80 -r 10.1.0.3:80 -g -w 0")
	})
	if out, err := run(nil, "undrain", "10.1.0.3:80"); err != nil {
		t.Fatalf("undrain: %v\n%s", err, out)
	}
	nstest.WaitFor(t, 5*time.Second, "the real server back at weight 1", func() bool {
		return strings.Contains(ipvsadm(t, lb, "-Sn"), "-a -t "+vip+":80 -r 10.1.0.3:80 -g -w 1")
	})
	if out, err := run(&syscall.Credential{Uid: 65534, Gid: 65534}, "status"); err == nil || !strings.Contains(out, "only root") {
		t.Errorf("directorctl as nobody: %v\n%s", err, out)
	}

	// The metrics, scraped inside the director's namespace.
	var body string
	lb.Do(t, func() {
		// Dialled here: a Transport would dial from another goroutine,
		// outside the namespace.
		c, err := net.DialTimeout("tcp", "127.0.0.1:9650", 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprint(c, "GET /metrics HTTP/1.0\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
	})
	for _, want := range []string{
		`directord_vrrp_state{interface="eth0",state="MASTER",vrid="51",vrrp_instance="VI_1"} 1`,
		`directord_reloads_total{result="ok"} 11`,
		`directord_reloads_total{result="failed"} 1`,
		`directord_real_server_up{real_server="10.1.0.3:80",virtual_server="` + vip + ` 80"} 1`,
		`directord_checks_total{result="up",type="TCP_CHECK"}`,
		`directord_ipvs_operations_total`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if t.Failed() {
		t.Logf("metrics:\n%s", body)
	}
}

// notifySocket is a systemd notification socket at path, given to the
// processes the test starts; the returned function counts each line
// received so far.
func notifySocket(t *testing.T, path string) func() map[string]int {
	t.Helper()
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	t.Setenv("NOTIFY_SOCKET", path)
	counts := make(chan map[string]int, 1)
	counts <- map[string]int{}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := c.Read(buf)
			if err != nil {
				return
			}
			m := <-counts
			for _, l := range strings.Split(string(buf[:n]), "\n") {
				if k, _, _ := strings.Cut(l, "="); k != "MONOTONIC_USEC" && l != "" {
					m[l]++
				}
			}
			counts <- m
		}
	}()
	return func() map[string]int {
		m := <-counts
		c := make(map[string]int, len(m))
		for k, v := range m {
			c[k] = v
		}
		counts <- m
		return c
	}
}

// TestStopHandsOverWithinSkewTime: SIGTERM makes a master send its
// priority 0 advert, so the backup takes over after Skew_Time (0.6 s at
// advert_int 1 and priority 100), well before Master_Down_Interval (3.6 s)
// would have passed had it only gone silent.
func TestStopHandsOverWithinSkewTime(t *testing.T) {
	bin := binary(t)
	l := newLAN(t)
	lb1 := nstest.New(t, name(t, "lba"))
	lb2 := nstest.New(t, name(t, "lbb"))
	l.sw.Plug(t, lb1, "eth0", "10.1.0.11/24")
	l.sw.Plug(t, lb2, "eth0", "10.1.0.12/24")
	slow := func(prio int) string {
		return strings.Replace(directorConf(prio, ""), "advert_int 0.1", "advert_int 1", 1)
	}
	d1 := start(t, bin, lb1, slow(150))
	waitMaster(t, lb1)
	start(t, bin, lb2, slow(100))
	nstest.WaitFor(t, 10*time.Second, "the backup's table", func() bool {
		return strings.Contains(ipvsadm(t, lb2, "-Sn"), "-r 10.1.0.3:80")
	})
	began := time.Now()
	d1.Signal(syscall.SIGTERM)
	took := nstest.WaitFor(t, 10*time.Second, "lb2 holds the VIP", func() bool { return lb2.HasAddr(t, "eth0", vip) })
	if took > 2*time.Second {
		t.Errorf("takeover %v after SIGTERM: the priority 0 advert was not taken (Skew_Time 0.61 s, Master_Down_Interval 3.61 s)", took)
	}
	if !d1.Wait(10 * time.Second) {
		t.Fatal("lb1 did not stop")
	}
	if lb1.HasAddr(t, "eth0", vip) {
		t.Error("lb1 left its VIP behind")
	}
	t.Logf("takeover %v after SIGTERM", time.Since(began).Round(time.Millisecond))
}
