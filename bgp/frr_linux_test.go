package bgp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/directord/directord/internal/frrtest"
	"github.com/directord/directord/internal/nstest"
)

var (
	routerAddr = netip.MustParseAddr("10.0.0.1")
	vip        = netip.MustParsePrefix("10.1.0.100/32")
)

func directorAddr(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 0, 0, byte(11 + i)}) }

// lan is a router and n directors on one bridge (in a switch namespace of
// its own, so that a director's cable can be cut without the router's
// link going down).
type lan struct {
	sw     *nstest.Switch
	router *nstest.NS
	dirs   []*nstest.NS
	ports  []string // the switch's port of each director
	frr    *frrtest.Router
}

func newLAN(t nstest.TB, n int, bfd string) *lan {
	t.Helper()
	return newLANWith(t, n, func(neighbors []netip.Addr) frrtest.Conf {
		return frrtest.Config(65000, routerAddr, 65010, neighbors, bfd)
	})
}

// newLANWith is newLAN with the router's configuration made by conf from
// the directors' addresses.
func newLANWith(t nstest.TB, n int, conf func([]netip.Addr) frrtest.Conf) *lan {
	t.Helper()
	frrtest.Require(t)
	l := &lan{sw: nstest.NewSwitch(t, "bgsw"), router: nstest.New(t, "bgr")}
	l.sw.Plug(t, l.router, "eth0", routerAddr.String()+"/24")
	for i := range n {
		d := nstest.New(t, fmt.Sprintf("bgd%d", i))
		l.ports = append(l.ports, l.sw.Plug(t, d, "eth0", directorAddr(i).String()+"/24"))
		l.dirs = append(l.dirs, d)
	}
	l.frr = frrtest.Start(t, l.router, conf(allDirectors(n)))
	return l
}

// startAll starts a director in each of l's namespaces, on
// writeDirectorConf's file with bgp_withdraw_wait wait, hold time 9 and
// bfd, and returns once each has its session up and the router a route
// through them all.
func (l *lan) startAll(t nstest.TB, wait, bfd string) []*director {
	t.Helper()
	var ds []*director
	for i, ns := range l.dirs {
		ds = append(ds, startDirector(t, ns, writeDirectorConf(t, i, wait, 9, bfd, 1)))
	}
	for _, d := range ds {
		d.waitEstablished()
	}
	l.frr.WaitNextHops(30*time.Second, vip, allDirectors(len(ds))...)
	return ds
}

// cut takes director i's cable out of the switch: its carrier goes, the
// router's does not.
func (l *lan) cut(t nstest.TB, i int) { l.sw.Cut(t, l.ports[i]) }

// director is a helper process running the speaker in a namespace.
type director struct {
	t     nstest.TB
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
	mu    sync.Mutex
	err   strings.Builder
	done  chan struct{}
}

const directorConf = `global_defs {
    bgp_withdraw_wait %s
    bgp {
        local_as 65010
        router_id %s
        neighbor 10.0.0.1 {
            remote_as 65000
            hold_time %d
%s        }
    }
}
virtual_server 10.1.0.100 80 {
    protocol TCP
    announce bgp
    real_server 10.2.0.1 80 {
        weight %d
    }
}
`

func writeDirectorConf(t nstest.TB, i int, wait string, hold int, bfd string, weight int) string {
	t.Helper()
	if bfd != "" {
		bfd = "            bfd " + bfd + "\n"
	}
	return writeDirectorConfWith(t, i, wait, hold, bfd, weight)
}

// writeDirectorConfWith takes the neighbor's extra lines as they are.
func writeDirectorConfWith(t nstest.TB, i int, wait string, hold int, extra string, weight int) string {
	t.Helper()
	return writeConf(t, fmt.Sprintf(directorConf, wait, directorAddr(i), hold, extra, weight))
}

// writeConf writes a director's keepalived.conf in the test's folder.
func writeConf(t nstest.TB, text string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "keepalived.conf")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

func startDirector(t nstest.TB, ns *nstest.NS, conf string) *director {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	d := &director{t: t, lines: make(chan string, 100), done: make(chan struct{})}
	d.cmd = exec.Command("ip", "netns", "exec", ns.Name, exe, "-test.run=^$")
	d.cmd.Env = append(os.Environ(), helperEnv+"="+conf, speakerEnv+"="+speakerHelper(t))
	d.cmd.Stderr = &lockedWriter{mu: &d.mu, b: &d.err}
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if d.in, err = d.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := d.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			d.lines <- sc.Text()
		}
		d.cmd.Wait()
		close(d.done)
	}()
	t.Cleanup(func() {
		syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
		<-d.done
		if t.Failed() {
			d.mu.Lock()
			t.Logf("director in %s:\n%s", ns.Name, d.err.String())
			d.mu.Unlock()
		}
	})
	d.expect("ok")
	return d
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// expect waits for a line starting with prefix, skipping session lines.
func (d *director) expect(prefix string) string {
	d.t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-d.lines:
			if !ok {
				d.t.Fatalf("director ended, waiting for %q", prefix)
			}
			if strings.HasPrefix(l, prefix) {
				return l
			}
			if strings.HasPrefix(l, "error") {
				d.t.Fatalf("director: %s", l)
			}
		case <-timeout:
			d.t.Fatalf("director: no %q within 30s", prefix)
		}
	}
}

// do sends a command and waits for it to be applied.
func (d *director) do(cmd string) {
	d.t.Helper()
	fmt.Fprintln(d.in, cmd)
	d.expect("ok")
}

// send sends a command without waiting.
func (d *director) send(cmd string) { fmt.Fprintln(d.in, cmd) }

type directorStatus struct {
	Neighbors []NeighborStatus
	Addresses []AddressStatus
}

func (d *director) status() directorStatus {
	d.t.Helper()
	fmt.Fprintln(d.in, "status")
	l := d.expect("status ")
	var st directorStatus
	if err := json.Unmarshal([]byte(strings.TrimPrefix(l, "status ")), &st); err != nil {
		d.t.Fatal(err)
	}
	return st
}

// stderr is what the director wrote to its standard error so far.
func (d *director) stderr() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.err.String()
}

func (d *director) waitEstablished() {
	d.t.Helper()
	nstest.WaitFor(d.t, 30*time.Second, "session established", func() bool {
		st := d.status()
		return len(st.Neighbors) == 1 && st.Neighbors[0].State == Established && st.Neighbors[0].Sent == 1
	})
}

func onLo(t nstest.TB, ns *nstest.NS) bool { return ns.HasAddr(t, "lo", vip.Addr().String()) }

func allDirectors(n int) []netip.Addr {
	var out []netip.Addr
	for i := range n {
		out = append(out, directorAddr(i))
	}
	return out
}

// TestFRRLearnsECMP: three directors announce the VIP, and FRR installs
// one route with three next hops; a director losing quorum withdraws
// (two next hops), gaining it announces again (three).
func TestFRRLearnsECMP(t *testing.T) {
	l := newLAN(t, 3, "")
	ds := l.startAll(t, "1", "")
	for i := range ds {
		if !onLo(t, l.dirs[i]) {
			t.Errorf("director %d: %s is not on lo", i, vip)
		}
	}
	st := ds[0].status()
	if n := st.Neighbors[0]; n.Addr != routerAddr || n.RemoteAS != 65000 || n.Since.IsZero() || n.BFD != "" {
		t.Errorf("neighbor status %+v", n)
	}
	if a := st.Addresses; len(a) != 1 || !a[0].Announced || a[0].Reason != "serving" || a[0].Dev != "lo" {
		t.Errorf("address status %+v", a)
	}

	ds[1].do("quorum off")
	l.frr.WaitNextHops(10*time.Second, vip, directorAddr(0), directorAddr(2))
	if !onLo(t, l.dirs[1]) {
		t.Error("quorum lost: the address left lo; it must stay, for what still arrives")
	}
	if a := ds[1].status().Addresses; len(a) != 1 || a[0].Announced || a[0].Reason != "no-quorum" {
		t.Errorf("address status after quorum loss %+v", a)
	}
	ds[1].do("quorum on")
	l.frr.WaitNextHops(10*time.Second, vip, allDirectors(3)...)
}

// TestFRRDrainDirector: drain-director withdraws while the address stays
// on lo; the route goes first; undrain announces again.
func TestFRRDrainDirector(t *testing.T) {
	l := newLAN(t, 2, "")
	d0 := l.startAll(t, "1", "")[0]
	d0.do("drain")
	l.frr.WaitNextHops(10*time.Second, vip, directorAddr(1))
	if !onLo(t, l.dirs[0]) {
		t.Fatal("drained: the address left lo")
	}
	if a := d0.status().Addresses; len(a) != 1 || a[0].Reason != "drained" || a[0].Announced {
		t.Errorf("status %+v", a)
	}
	d0.do("undrain")
	l.frr.WaitNextHops(10*time.Second, vip, allDirectors(2)...)
}

// TestFRRStopWithdrawsFirst: directord's SIGTERM path withdraws, and the
// router has removed the route while the address is still on lo; the
// address goes after bgp_withdraw_wait.
func TestFRRStopWithdrawsFirst(t *testing.T) {
	l := newLAN(t, 2, "")
	d0 := l.startAll(t, "2", "")[0]
	start := time.Now()
	d0.send("stop")
	gone := l.frr.WaitNextHops(10*time.Second, vip, directorAddr(1))
	if !onLo(t, l.dirs[0]) {
		t.Fatal("the address left lo before the router removed the route through it")
	}
	nstest.WaitFor(t, 10*time.Second, "the address off lo", func() bool { return !onLo(t, l.dirs[0]) })
	removed := time.Now()
	d0.expect("ok")
	t.Logf("stop: route gone at the router after %s, address off lo after %s", gone.Sub(start).Round(time.Millisecond), removed.Sub(start).Round(time.Millisecond))
}

// TestFRRKill: a director killed with SIGKILL: its kernel closes the
// session, and the router removes the route through it at once, well
// before the hold time (9 s) could expire.
func TestFRRKill(t *testing.T) {
	l := newLAN(t, 2, "")
	d0 := l.startAll(t, "1", "")[0]
	sp := speakerPID(t, d0.cmd.Process.Pid)
	start := time.Now()
	syscall.Kill(-d0.cmd.Process.Pid, syscall.SIGKILL)
	gone := l.frr.WaitNextHops(10*time.Second, vip, directorAddr(1))
	took := gone.Sub(start)
	n := l.neighbor(t, directorAddr(0))
	t.Logf("kill -9: route gone at the router after %s (%q)", took.Round(time.Millisecond), n.LastNotification)
	// The hold time is 9 s and keepalives go every 3 s: a removal by the
	// hold timer comes 6 s after the kill at the earliest.
	if took >= 6*time.Second {
		t.Errorf("route gone after %s: the hold timer's doing, not the session's close", took)
	}
	// The speaker, in a process group of its own, was not killed: it read
	// the end of its input, closed the session with a Cease, and exited.
	if !strings.Contains(n.LastNotification, "Cease") {
		t.Errorf("the router's last notification %q, want the speaker's Cease", n.LastNotification)
	}
	nstest.WaitFor(t, 10*time.Second, "the speaker's process gone", func() bool { return !alive(sp) })
	// Its last records went to directord's own standard error (-last-words).
	nstest.WaitFor(t, 10*time.Second, "the speaker's last records in directord's standard error", func() bool {
		s := d0.stderr()
		return strings.Contains(s, "its input ended with the speaker running") && strings.Contains(s, "every session closed; exiting")
	})
}

// TestFRRSpeakerKilled: the speaker's process killed alone (SIGKILL): the
// kernel closes its session and the router drops the route; the director
// starts the speaker again after the backoff (1 s) and replays its route:
// the router has both next hops again, through a new process.
func TestFRRSpeakerKilled(t *testing.T) {
	l := newLAN(t, 2, "")
	d0 := l.startAll(t, "1", "")[0]
	sp := speakerPID(t, d0.cmd.Process.Pid)
	start := time.Now()
	syscall.Kill(sp, syscall.SIGKILL)
	gone := l.frr.WaitNextHops(10*time.Second, vip, directorAddr(1))
	back := l.frr.WaitNextHops(30*time.Second, vip, allDirectors(2)...)
	t.Logf("speaker killed: route gone at the router after %s, back after %s",
		gone.Sub(start).Round(time.Millisecond), back.Sub(start).Round(time.Millisecond))
	if back.Sub(start) < DefaultMinBackoff {
		t.Errorf("route back after %s, before the restart's backoff", back.Sub(start))
	}
	if again := speakerPID(t, d0.cmd.Process.Pid); again == sp {
		t.Errorf("the speaker's process is still %d", sp)
	}
	d0.waitEstablished()
}

// speakerPID is the pid of the directord-bgp that the director of pid
// runs, once it runs.
func speakerPID(t nstest.TB, pid int) int {
	t.Helper()
	found := 0
	nstest.WaitFor(t, 10*time.Second, "the speaker's process", func() bool {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
		for _, f := range tasks {
			b, _ := os.ReadFile(f)
			for _, c := range strings.Fields(string(b)) {
				comm, _ := os.ReadFile("/proc/" + c + "/comm")
				if strings.TrimSpace(string(comm)) == HelperName {
					fmt.Sscan(c, &found)
					return true
				}
			}
		}
		return false
	})
	return found
}

// alive says whether pid runs (a zombie does not).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(f) > 0 && f[0] != "Z"
}

func (l *lan) neighbor(t nstest.TB, a netip.Addr) frrtest.Neighbor { return l.frr.Neighbor(a) }

// TestFRRBFD: with BFD (100 ms x 3 on both sides), each director's BGP
// session comes up once, BFD with it: FRR 8.4 remakes its BFD session
// when the BGP session is Established (bgp/gobgp's bfdFollow), and a
// BFD session that was Up before it took the new BGP session down,
// Cease/BFD Down from the router or "BFD is down" from the director,
// at every start. Then a director's cable cut takes its route away
// within BFD's detection time, not the hold time's: the router's BFD
// session went down and reset the BGP session before a hold timer
// could have expired.
func TestFRRBFD(t *testing.T) {
	l := newLAN(t, 2, " receive-interval 100\n transmit-interval 100\n detect-multiplier 3")
	ds := l.startAll(t, "1", "100 3")
	for i, d := range ds {
		nstest.WaitFor(t, 10*time.Second, fmt.Sprintf("director %d: BFD up on both sides", i), func() bool {
			st := d.status()
			return st.Neighbors[0].BFD == "up" && l.neighbor(t, directorAddr(i)).BFD.Status == "Up"
		})
		// The flap came as the session was Established (the router's
		// reset) or a detection time later (the director's): by the time
		// both sides' BFD is Up, a flapped session has been up twice.
		if n := l.neighbor(t, directorAddr(i)); n.Established != 1 || n.Dropped != 0 {
			t.Errorf("director %d: the router's session was established %d times and dropped %d (last %q); want once and never",
				i, n.Established, n.Dropped, n.LastNotification)
		}
	}
	start := time.Now()
	l.cut(t, 0)
	gone := l.frr.WaitNextHops(10*time.Second, vip, directorAddr(1))
	took := gone.Sub(start)
	n := l.neighbor(t, directorAddr(0))
	t.Logf("cable cut with BFD 100 ms x 3: route gone at the router after %s (%q)", took.Round(time.Millisecond), n.LastNotification)
	if !strings.Contains(n.LastNotification, "BFD Down") {
		t.Errorf("the router ended the session for %q, not BFD", n.LastNotification)
	}
	// Keepalives every 3 s, hold time 9 s: a hold timer cannot expire
	// sooner than 6 s after the cut.
	if took >= 6*time.Second {
		t.Errorf("route gone after %s: not BFD's doing", took)
	}
}

// TestFRRHoldTime: without BFD, a cut cable takes the route away when the
// router's hold timer expires, within the hold time.
func TestFRRHoldTime(t *testing.T) {
	l := newLAN(t, 2, "")
	l.startAll(t, "1", "")
	start := time.Now()
	l.cut(t, 0)
	gone := l.frr.WaitNextHops(15*time.Second, vip, directorAddr(1))
	took := gone.Sub(start)
	n := l.neighbor(t, directorAddr(0))
	t.Logf("cable cut without BFD, hold time 9 s: route gone at the router after %s (%q)", took.Round(time.Millisecond), n.LastNotification)
	// The hold timer runs from the last keepalive before the cut; a second
	// for the router to act and for this test's polling.
	if took > 9*time.Second+time.Second {
		t.Errorf("route gone after %s, beyond the 9 s hold time", took)
	}
	if !strings.Contains(n.LastNotification, "Hold Timer Expired") {
		t.Errorf("the router ended the session for %q, not its hold timer", n.LastNotification)
	}
}

// TestFRRReloadWeightOnly: a reload that changes only a real server's
// weight touches neither the session nor the route.
func TestFRRReloadWeightOnly(t *testing.T) {
	l := newLAN(t, 1, "")
	d0 := startDirector(t, l.dirs[0], writeDirectorConf(t, 0, "1", 9, "", 1))
	d0.waitEstablished()
	l.frr.WaitNextHops(30*time.Second, vip, directorAddr(0))
	before := l.neighbor(t, directorAddr(0))
	st := d0.status()
	d0.do("reload " + writeDirectorConf(t, 0, "1", 9, "", 7))
	after := l.neighbor(t, directorAddr(0))
	st2 := d0.status()
	if after.State != "Established" || after.Established != before.Established || after.Dropped != before.Dropped {
		t.Errorf("the session flapped: before %+v, after %+v", before, after)
	}
	if !st2.Neighbors[0].Since.Equal(st.Neighbors[0].Since) {
		t.Errorf("session up since %s, then %s", st.Neighbors[0].Since, st2.Neighbors[0].Since)
	}
	if !st2.Addresses[0].Since.Equal(st.Addresses[0].Since) || !st2.Addresses[0].Announced {
		t.Errorf("the route was withdrawn and announced again: %+v then %+v", st.Addresses[0], st2.Addresses[0])
	}
	l.frr.WaitNextHops(0, vip, directorAddr(0))
}

// TestFRRAttributes: a neighbor's communities and med reach the router
// with the route (GoBGP's export policy, matched on the neighbor), and
// the session runs with a TCP MD5 password (without it on directord's
// side, the session does not come up: checked when this test was
// written).
func TestFRRAttributes(t *testing.T) {
	l := newLAN(t, 1, "")
	out, err := l.frr.VTY("configure terminal\nrouter bgp 65000\nneighbor " + directorAddr(0).String() + " password s3cret")
	if err != nil {
		t.Fatalf("vtysh: %v: %s", err, out)
	}
	d := startDirector(t, l.dirs[0], writeDirectorConfWith(t, 0, "1", 9,
		"            communities 65010:100 no-export\n            med 7\n            password s3cret\n", 1))
	d.waitEstablished()
	l.frr.WaitNextHops(30*time.Second, vip, directorAddr(0))
	out, err = l.frr.VTY("show bgp ipv4 unicast " + vip.String() + " json")
	if err != nil {
		t.Fatalf("vtysh: %v: %s", err, out)
	}
	var route struct {
		Paths []struct {
			MED       int `json:"metric"`
			Community struct {
				String string `json:"string"`
			} `json:"community"`
		} `json:"paths"`
	}
	if err := json.Unmarshal([]byte(out), &route); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(route.Paths) != 1 || route.Paths[0].MED != 7 || route.Paths[0].Community.String != "65010:100 no-export" {
		t.Errorf("the router has %+v:\n%s", route.Paths, out)
	}
}

// TestFRRIPv6: an IPv6 virtual server is announced as a /128 to an IPv6
// neighbor, and FRR installs it through the director's address.
func TestFRRIPv6(t *testing.T) {
	frrtest.Require(t)
	sw, rtr, dns := nstest.NewSwitch(t, "bg6sw"), nstest.New(t, "bg6r"), nstest.New(t, "bg6d")
	r6, d6 := netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8::11")
	sw.Plug(t, rtr, "eth0", r6.String()+"/64")
	sw.Plug(t, dns, "eth0", d6.String()+"/64")
	frr := frrtest.Start(t, rtr, frrtest.Config(65000, routerAddr, 65010, []netip.Addr{d6}, ""))
	file := writeConf(t, `global_defs {
    bgp {
        local_as 65010
        router_id 10.0.0.11
        neighbor 2001:db8::1 {
            remote_as 65000
            hold_time 9
        }
    }
}
virtual_server 2001:db8:1::100 80 {
    protocol TCP
    announce bgp
    real_server 2001:db8::20 80 {
    }
}
`)
	d := startDirector(t, dns, file)
	d.waitEstablished()
	p := netip.MustParsePrefix("2001:db8:1::100/128")
	frr.WaitNextHops(30*time.Second, p, d6)
	if !dns.HasAddr(t, "lo", p.Addr().String()) {
		t.Errorf("%s is not on the director's lo", p.Addr())
	}
	d.do("quorum off")
	frr.WaitNextHops(10*time.Second, p)
}
