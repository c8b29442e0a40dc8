// Package lvs holds the end-to-end tests of directord's data plane: the
// directord binary programs a real IPVS and traffic goes through it. They
// need the kernel's IPVS, so they skip on our hosts and run in the
// User-Mode Linux guest of make integration, every host of a test (client,
// directors, real server) a network namespace inside the guest.
package lvs

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/directord/directord/internal/ipvstest"
	"github.com/directord/directord/internal/nstest"
	"github.com/directord/directord/ipvs"
)

// binary is the directord that make integration builds before the guest
// boots (the guest must not write to the host's Go cache).
func binary(t testing.TB) string {
	t.Helper()
	ipvstest.Require(t)
	ipvstest.RequireRoot(t)
	ipvstest.RequireCommand(t, "ipvsadm")
	return built(t, "directord")
}

// built is a program make integration builds into bin/uml.
func built(t testing.TB, name string) string {
	t.Helper()
	b, err := filepath.Abs("../../bin/uml/" + name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(b); err != nil {
		t.Fatalf("%v: make integration builds it", err)
	}
	return b
}

var seq atomic.Int32

func name(t testing.TB, role string) string {
	return fmt.Sprintf("%s%d-%d", role, os.Getpid()%10000, seq.Add(1))
}

const vip = "10.1.0.100"

// lan is a client, a real server with the VIP on its lo (arp_ignore and
// arp_announce set, as DR needs) running an echo server, and a switch to
// plug directors into.
type lan struct {
	sw             *nstest.Switch
	client, server *nstest.NS
	healthy        atomic.Bool // what the real server's /healthz on :8080 says
}

func newLAN(t *testing.T) *lan {
	t.Helper()
	l := &lan{sw: nstest.NewSwitch(t, name(t, "sw"))}
	l.client = nstest.New(t, name(t, "cl"))
	l.server = nstest.New(t, name(t, "rs"))
	l.sw.Plug(t, l.client, "eth0", "10.1.0.2/24")
	l.sw.Plug(t, l.server, "eth0", "10.1.0.3/24")
	for _, s := range []string{"net.ipv4.conf.all.arp_ignore=1", "net.ipv4.conf.all.arp_announce=2",
		"net.ipv4.conf.eth0.arp_ignore=1", "net.ipv4.conf.eth0.arp_announce=2"} {
		sh(t, l.server, "sysctl", "-q", "-w", s)
	}
	sh(t, l.server, "ip", "addr", "add", vip+"/32", "dev", "lo")
	var ln net.Listener
	l.server.Do(t, func() {
		var err error
		ln, err = net.Listen("tcp4", ":80")
		if err != nil {
			t.Fatal(err)
		}
	})
	t.Cleanup(func() { ln.Close() })
	l.healthy.Store(true)
	var hl net.Listener
	l.server.Do(t, func() {
		var err error
		hl, err = net.Listen("tcp4", ":8080")
		if err != nil {
			t.Fatal(err)
		}
	})
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" || !l.healthy.Load() {
			http.Error(w, "broken", http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, "ok")
	})}
	go hs.Serve(hl)
	t.Cleanup(func() { hs.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					fmt.Fprintf(c, "echo %s", line)
				}
			}()
		}
	}()
	return l
}

func sh(t *testing.T, ns *nstest.NS, argv ...string) string {
	t.Helper()
	out, err := exec.Command("ip", append([]string{"netns", "exec", ns.Name}, argv...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	return string(out)
}

// conn is a client's TCP connection to the VIP.
type conn struct {
	c net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, ns *nstest.NS) *conn {
	t.Helper()
	var c net.Conn
	ns.Do(t, func() {
		var err error
		c, err = net.DialTimeout("tcp4", vip+":80", 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
	})
	t.Cleanup(func() { c.Close() })
	return &conn{c: c, r: bufio.NewReader(c)}
}

// roundTrip sends a line and waits for its echo; TCP retransmits while a
// director is away, so the deadline is generous.
func (c *conn) roundTrip(msg string) error {
	c.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(c.c, "%s\n", msg); err != nil {
		return err
	}
	got, err := c.r.ReadString('\n')
	if err != nil {
		return err
	}
	if got != "echo "+msg+"\n" {
		return fmt.Errorf("got %q", got)
	}
	return nil
}

func (c *conn) clientPort() int { return c.c.LocalAddr().(*net.TCPAddr).Port }

func directorConf(prio int, extra string) string {
	return fmt.Sprintf(`global_defs {
    router_id lb%d
    %s
}
vrrp_instance VI_1 {
    interface eth0
    virtual_router_id 51
    priority %d
    advert_int 0.1
    version 3
    virtual_ipaddress {
        %s/24
    }
}
virtual_server %s 80 {
    lb_algo rr
    lb_kind DR
    protocol TCP
    real_server 10.1.0.3 80 {
        weight 1
    }
}
`, prio, extra, prio, vip, vip)
}

func start(t *testing.T, bin string, ns *nstest.NS, conf string, args ...string) *nstest.Process {
	t.Helper()
	file := filepath.Join(t.TempDir(), "keepalived.conf")
	if err := os.WriteFile(file, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	return nstest.Start(t, ns, append([]string{bin, "-n", "-l", "-D", "-f", file, "--control-socket", "none"}, args...)...)
}

// waitMaster waits until the director holds the VIP and its service.
func waitMaster(t *testing.T, ns *nstest.NS) {
	t.Helper()
	nstest.WaitFor(t, 10*time.Second, "VIP and service on "+ns.Name, func() bool {
		return ns.HasAddr(t, "eth0", vip) && strings.Contains(ipvsadm(t, ns, "-Sn"), "-a -t "+vip+":80 -r 10.1.0.3:80 -g -w 1")
	})
}

func ipvsadm(t *testing.T, ns *nstest.NS, args ...string) string {
	t.Helper()
	return sh(t, ns, append([]string{"ipvsadm"}, args...)...)
}

// connLine finds the client's connection to the real server through the
// VIP in ipvsadm -Lnc's table.
func connLine(table string, port int) string {
	for _, l := range strings.Split(table, "\n") {
		f := strings.Fields(l)
		if len(f) >= 6 && f[3] == fmt.Sprintf("10.1.0.2:%d", port) && f[4] == vip+":80" && f[5] == "10.1.0.3:80" {
			return l
		}
	}
	return ""
}

// TestRestartKeepsLiveConnections: a TCP connection through a DR service
// lives through a restart of directord, because the restarted daemon
// adopts the kernel's table as it is instead of re-creating it (which
// would orphan the connection: the kernel drops the packets of a
// connection whose destination was deleted).
//
// The stop leaves the table with --dont-release-ipvs (keepalived's -I);
// without it, the stop removes directord's virtual servers, as keepalived.
func TestRestartKeepsLiveConnections(t *testing.T) {
	t.Run("adopted", func(t *testing.T) { restart(t, "", true, syscall.SIGTERM) })
	// A crash leaves the table (the guardian hands over the VIP only):
	// the restarted daemon starts as backup, adopts it and wins back
	// mastership by the election.
	t.Run("crashed", func(t *testing.T) { restart(t, "", true, syscall.SIGKILL) })
	t.Run("released", func(t *testing.T) {
		bin := binary(t)
		l := newLAN(t)
		dir := nstest.New(t, name(t, "lb"))
		l.sw.Plug(t, dir, "eth0", "10.1.0.1/24")
		d := start(t, bin, dir, directorConf(150, ""))
		waitMaster(t, dir)
		d.Signal(syscall.SIGTERM)
		if !d.Wait(10 * time.Second) {
			t.Fatal("directord did not stop")
		}
		if out := ipvsadm(t, dir, "-Sn"); strings.TrimSpace(out) != "" {
			t.Errorf("the stop left the virtual servers:\n%s", out)
		}
	})
	// The control: keepalived's lvs_flush re-creates the table at start,
	// which the service's counters show, so the test can tell the two
	// apart. (The connection itself may live on: the kernel revives a
	// destination re-added soon after its deletion from its trash.)
	t.Run("lvs_flush", func(t *testing.T) { restart(t, "lvs_flush", false, syscall.SIGTERM) })
}

// checkStats compares the 64-bit counters our client reads with what
// ipvsadm prints.
func checkStats(t *testing.T, ns *nstest.NS) {
	t.Helper()
	c, err := ipvs.Dial(&ipvs.Options{NetNS: int(ns.NS)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	k := ipvs.AddrKey(ipvs.TCP, netip.MustParseAddrPort(vip+":80"))
	s, err := c.Service(k)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := c.Destinations(k)
	if err != nil || len(ds) != 1 {
		t.Fatalf("destinations %+v, %v", ds, err)
	}
	var line []string
	for _, l := range strings.Split(ipvsadm(t, ns, "-Ln", "--stats", "--exact", "-t", vip+":80"), "\n") {
		if f := strings.Fields(l); len(f) == 7 && f[0] == "TCP" {
			line = f
		}
	}
	got := fmt.Sprintf("%d %d %d %d %d", s.Stats.Connections, s.Stats.PacketsIn, s.Stats.PacketsOut, s.Stats.BytesIn, s.Stats.BytesOut)
	if want := strings.Join(line[2:], " "); got != want || s.Stats.Connections != 1 || s.Stats.PacketsIn == 0 {
		t.Errorf("service counters %q, ipvsadm says %q", got, want)
	}
	if d := ds[0].Counters; d == nil {
		t.Errorf("destination %s: no counters", ds[0].AddrPort())
	} else if d.Stats.Connections != 1 || d.Stats.PacketsIn != s.Stats.PacketsIn || d.ActiveConns+d.InactiveConns != 1 {
		t.Errorf("destination counters %+v, active %d inactive %d", d.Stats, d.ActiveConns, d.InactiveConns)
	}
}

// scheduled is the service's count of connections scheduled, which
// starts again from 0 when the service is re-created.
func scheduled(t *testing.T, ns *nstest.NS) string {
	t.Helper()
	for _, l := range strings.Split(ipvsadm(t, ns, "-Ln", "--stats", "--exact", "-t", vip+":80"), "\n") {
		if f := strings.Fields(l); len(f) >= 3 && f[0] == "TCP" {
			return f[2]
		}
	}
	t.Fatalf("no service line in ipvsadm -Ln --stats")
	return ""
}

func restart(t *testing.T, global string, adopted bool, sig syscall.Signal) {
	bin := binary(t)
	l := newLAN(t)
	dir := nstest.New(t, name(t, "lb"))
	l.sw.Plug(t, dir, "eth0", "10.1.0.1/24")
	conf := directorConf(150, global)
	d := start(t, bin, dir, conf, "--dont-release-ipvs")
	waitMaster(t, dir)

	c := dial(t, l.client)
	if err := c.roundTrip("before"); err != nil {
		t.Fatal(err)
	}
	if connLine(ipvsadm(t, dir, "-Lnc"), c.clientPort()) == "" {
		t.Fatalf("the connection is not in the director's table:\n%s", ipvsadm(t, dir, "-Lnc"))
	}
	before := ipvsadm(t, dir, "-Sn")
	// The kernel folds its per-CPU counters into what it reports every 2 s.
	nstest.WaitFor(t, 5*time.Second, "1 connection scheduled", func() bool { return scheduled(t, dir) == "1" })
	checkStats(t, dir)

	syscall.Kill(d.Cmd.Process.Pid, sig) // the daemon alone: a crash spares its guardian
	if !d.Wait(10 * time.Second) {
		t.Fatal("directord did not stop")
	}
	if sig == syscall.SIGKILL {
		nstest.WaitFor(t, 2*time.Second, "the guardian removes the VIP", func() bool { return !dir.HasAddr(t, "eth0", vip) })
	}
	if after := ipvsadm(t, dir, "-Sn"); after != before {
		t.Errorf("the table changed at stop:\n%s\nwas:\n%s", after, before)
	}
	start(t, bin, dir, conf)
	waitMaster(t, dir)
	n := scheduled(t, dir)
	if !adopted {
		if n != "0" {
			t.Errorf("lvs_flush: %s connections scheduled, want 0 (a new service)", n)
		}
		return
	}
	if n != "1" {
		t.Errorf("%s connections scheduled, want 1: the service was re-created", n)
	}
	if err := c.roundTrip("after"); err != nil {
		t.Fatalf("the connection did not survive the restart: %v\n%s", err, ipvsadm(t, dir, "-Lnc"))
	}
	if connLine(ipvsadm(t, dir, "-Lnc"), c.clientPort()) == "" {
		t.Errorf("the connection is gone from the table")
	}
}

// TestSyncDaemonCarriesConnectionsToTheBackup: with lvs_sync_daemon, a
// connection made through the master appears in the backup's connection
// table, and after the master hands over, the new master carries it on.
func TestSyncDaemonCarriesConnectionsToTheBackup(t *testing.T) {
	bin := binary(t)
	l := newLAN(t)
	lb1 := nstest.New(t, name(t, "lba"))
	lb2 := nstest.New(t, name(t, "lbb"))
	l.sw.Plug(t, lb1, "eth0", "10.1.0.11/24")
	l.sw.Plug(t, lb2, "eth0", "10.1.0.12/24")
	sync := "lvs_sync_daemon eth0 VI_1"
	d1 := start(t, bin, lb1, directorConf(150, sync))
	waitMaster(t, lb1)
	start(t, bin, lb2, directorConf(100, sync))
	nstest.WaitFor(t, 10*time.Second, "the backup's table", func() bool {
		return strings.Contains(ipvsadm(t, lb2, "-Sn"), "-r 10.1.0.3:80")
	})
	if out := ipvsadm(t, lb1, "-L", "--daemon"); !strings.Contains(out, "master sync daemon (mcast=eth0, syncid=51") {
		t.Errorf("lb1 (master) daemons:\n%s", out)
	}
	if out := ipvsadm(t, lb2, "-L", "--daemon"); !strings.Contains(out, "backup sync daemon (mcast=eth0, syncid=51") {
		t.Errorf("lb2 (backup) daemons:\n%s", out)
	}

	c := dial(t, l.client)
	if err := c.roundTrip("through lb1"); err != nil {
		t.Fatal(err)
	}
	nstest.WaitFor(t, 10*time.Second, "the connection in the backup's table", func() bool {
		return connLine(ipvsadm(t, lb2, "-Lnc"), c.clientPort()) != ""
	})

	// lb1 hands over; lb2 already knows the connection and carries it.
	d1.Signal(syscall.SIGTERM)
	if !d1.Wait(10 * time.Second) {
		t.Fatal("lb1 did not stop")
	}
	waitMaster(t, lb2)
	if err := c.roundTrip("through lb2"); err != nil {
		t.Fatalf("the connection did not survive the failover: %v\nlb2:\n%s", err, ipvsadm(t, lb2, "-Lnc"))
	}
	if out := ipvsadm(t, lb2, "-L", "--daemon"); !strings.Contains(out, "master sync daemon") {
		t.Errorf("lb2 (now master) daemons:\n%s", out)
	}
}

// TestHealthCheckMovesTheRealServer: an HTTP_GET check on the real
// server's /healthz takes it out of the table when it answers 500 (or to
// weight 0 with inhibit_on_failure), puts it back when it answers 200
// again, and runs notify_down and notify_up.
func TestHealthCheckMovesTheRealServer(t *testing.T) {
	for _, inhibit := range []bool{false, true} {
		t.Run(fmt.Sprintf("inhibit_on_failure=%v", inhibit), func(t *testing.T) {
			bin := binary(t)
			l := newLAN(t)
			dir := nstest.New(t, name(t, "lb"))
			l.sw.Plug(t, dir, "eth0", "10.1.0.1/24")
			notes := filepath.Join(t.TempDir(), "notes")
			extra := ""
			if inhibit {
				extra = "inhibit_on_failure"
			}
			conf := strings.Replace(directorConf(150, ""), "        weight 1\n", fmt.Sprintf(`        weight 1
        %s
        notify_up "/bin/sh -c 'echo up >> %s'"
        notify_down "/bin/sh -c 'echo down >> %s'"
        HTTP_GET {
            url {
                path /healthz
            }
            connect_port 8080
            connect_timeout 1
            retry 1
            delay_before_retry 1
            delay_loop 1
        }
`, extra, notes, notes), 1)
			start(t, bin, dir, conf)
			waitMaster(t, dir)
			c := dial(t, l.client)
			if err := c.roundTrip("healthy"); err != nil {
				t.Fatal(err)
			}

			l.healthy.Store(false)
			// Bound: delay_loop + (retry+1) x connect_timeout + retry x
			// delay_before_retry = 1 + 2 + 1 = 4 s; 2 s of slack for
			// starting programs in the guest.
			gone := "-a -t " + vip + ":80 -r 10.1.0.3:80 -g -w 1"
			nstest.WaitFor(t, 6*time.Second, "the real server out", func() bool {
				out := ipvsadm(t, dir, "-Sn")
				if inhibit {
					return strings.Contains(out, "-a -t "+vip+":80 -r 10.1.0.3:80 -g -w 0")
				}
				return !strings.Contains(out, "-r 10.1.0.3:80")
			})
			l.healthy.Store(true)
			nstest.WaitFor(t, 3*time.Second, "the real server back", func() bool {
				return strings.Contains(ipvsadm(t, dir, "-Sn"), gone)
			})
			nstest.WaitFor(t, 3*time.Second, "notify_down and notify_up", func() bool {
				b, _ := os.ReadFile(notes)
				return string(b) == "down\nup\n"
			})
		})
	}
}
