package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/directord/directord/internal/control"
	"github.com/directord/directord/internal/nstest"
)

var binary string

// TestMain builds the directord binary the tests run.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "directord-integration")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "directord")
	out, err := exec.Command("go", "build", "-o", binary, "../cmd/directord").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build directord: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func startDirectord(t *testing.T, ns *nstest.NS, text string) *nstest.Process {
	t.Helper()
	file := filepath.Join(t.TempDir(), "keepalived.conf")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return nstest.Start(t, ns, binary, "-n", "-l", "-f", file)
}

// TestDirectordBesideKeepalived runs the directord binary as master (150)
// beside keepalived (100), VRRPv3, and ends it two ways. SIGTERM sends a
// priority 0 advert and hands the VIP over at keepalived's Skew_Time,
// leaving none behind; SIGKILL no longer waits for Master_Down_Interval
// either: the guardian speaks for the dead daemon
// (TestGuardianHandsOverOnKill).
//
// By cause and order, with the kernel's receive times, at advert_int 1:
// keepalived announces the VIP at least Skew_Time after the priority 0
// advert (a lower bound a busy host cannot break), and before
// Master_Down_Interval after directord's last live advert (3 s later: only
// a keepalived that did not take the priority 0 advert reaches it).
func TestDirectordBesideKeepalived(t *testing.T) {
	nstest.RequireRoot(t)
	const adv = time.Second
	skew := 156 * adv / 256 // keepalived's, priority 100
	mdi := 3*adv + skew
	const timer = 2 * time.Millisecond // a timer's granularity, either daemon
	for i, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			a := nstest.New(t, fmt.Sprintf("dd-int-a%d", i))
			b := nstest.New(t, fmt.Sprintf("dd-int-b%d", i))
			nstest.Link(t, a, b, "dda", "ddb", "192.0.2.1/24", "192.0.2.2/24")
			arps := nstest.WatchARP(t, a, "dda")
			adverts := nstest.WatchVRRP(t, b, "ddb")
			zeros := nstest.WatchVRRPZero(t, b, "ddb")
			d := startDirectord(t, a, nstest.Instance("dda", 150, 3, "1", "192.0.2.100/24", ""))
			nstest.Keepalived(t, b, nstest.Instance("ddb", 100, 3, "1", "192.0.2.100/24", ""))
			converged := func() bool { return a.HasAddr(t, "dda", "192.0.2.100") && !b.HasAddr(t, "ddb", "192.0.2.100") }
			nstest.WaitFor(t, 10*time.Second, "directord holds the VIP", converged)
			nstest.HoldFor(t, 1500*time.Millisecond, "directord master, keepalived backup", converged)
			start := time.Now()
			d.Signal(sig)
			nstest.WaitFor(t, 2*mdi, "keepalived announces the VIP", func() bool { return arps.Count("192.0.2.100", start) > 0 })
			if !d.Wait(5 * time.Second) {
				t.Fatal("directord did not exit")
			}
			garp := arps.First("192.0.2.100", start)
			zero := zeros.First("192.0.2.1", start)
			if zero.IsZero() {
				t.Fatalf("no priority 0 advert after %v", sig)
			}
			last := adverts.Last("192.0.2.1", zero)
			if d := garp.Sub(zero); d < skew-timer {
				t.Errorf("keepalived took the VIP %v after the priority 0 advert, want Skew_Time %v at least", d, skew)
			}
			if d := garp.Sub(last); d >= mdi-timer {
				t.Errorf("keepalived took the VIP %v after directord's last advert: Master_Down_Interval (%v), not the priority 0 advert", d, mdi)
			}
			t.Logf("%v: priority 0 advert %v after the signal, keepalived's announcement %v after it (Skew_Time %v)",
				sig, zero.Sub(start), garp.Sub(zero), skew)
			if sig == syscall.SIGTERM && a.HasAddr(t, "dda", "192.0.2.100") {
				t.Error("directord left its VIP behind after SIGTERM")
			}
		})
	}
}

// guardianOf finds the guardian process of the directord with PID pid.
func guardianOf(t *testing.T, pid int) int {
	t.Helper()
	es, _ := os.ReadDir("/proc")
	for _, e := range es {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			continue
		}
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
		if f[1] == strconv.Itoa(pid) && strings.Contains(string(cmd), "--guardian") {
			return p
		}
	}
	return 0
}

// exited tells whether process pid has ended (a zombie has: the dead
// daemon's guardian is reparented to whoever reaps orphans here).
func exited(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
	return f[0] == "Z" || f[0] == "X"
}

// vipGone is when the VIP left ns's interfaces, as netlink announces it.
func vipGone(t *testing.T, ns *nstest.NS, vip string) func() time.Time {
	t.Helper()
	ch := make(chan netlink.AddrUpdate, 64)
	done := make(chan struct{})
	if err := netlink.AddrSubscribeWithOptions(ch, done, netlink.AddrSubscribeOptions{Namespace: &ns.NS}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { close(done) })
	gone := make(chan time.Time, 1)
	go func() {
		for u := range ch {
			if !u.NewAddr && u.LinkAddress.IP.String() == vip {
				select {
				case gone <- time.Now():
				default:
				}
			}
		}
	}()
	return func() time.Time {
		select {
		case at := <-gone:
			gone <- at
			return at
		case <-time.After(5 * time.Second):
			return time.Time{}
		}
	}
}

// TestGuardianHandsOverOnKill: the master's directord killed with SIGKILL
// while its host stays up. Its guardian sends the priority 0 advert at
// once, so the peer (directord, and keepalived) takes over Skew_Time after
// it rather than Master_Down_Interval after the master's last advert, and
// the VIP leaves the dead master's interface before the peer takes it;
// killed first, the guardian can do nothing and the peer falls back to
// Master_Down_Interval, the VIP left behind.
//
// The assertions are about causes and order, measured with the kernel's
// receive times: a lower bound (the backup waited Skew_Time), and an upper
// bound that only the failure reaches (Master_Down_Interval, seconds away
// at advert_int 1). A busy host delays a takeover; it cannot make one
// happen early, nor move it past a timer that is 2 s later still.
func TestGuardianHandsOverOnKill(t *testing.T) {
	nstest.RequireRoot(t)
	const adv = time.Second
	// The backup's (priority 100), as RFC 5798 (and keepalived) compute it.
	skew := 156 * adv / 256
	mdi := 3*adv + skew
	const timer = 2 * time.Millisecond // a timer's granularity, either daemon
	for i, c := range []struct {
		peer          string
		guardianFirst bool
	}{{"directord", false}, {"keepalived", false}, {"directord", true}} {
		t.Run(fmt.Sprintf("peer=%s/guardian-killed-first=%v", c.peer, c.guardianFirst), func(t *testing.T) {
			a := nstest.New(t, fmt.Sprintf("dd-gd-a%d", i))
			b := nstest.New(t, fmt.Sprintf("dd-gd-b%d", i))
			nstest.Link(t, a, b, "dda", "ddb", "192.0.2.1/24", "192.0.2.2/24")
			arps := nstest.WatchARP(t, a, "dda")
			adverts := nstest.WatchVRRP(t, b, "ddb")
			zeros := nstest.WatchVRRPZero(t, b, "ddb")
			master := startDirectord(t, a, nstest.Instance("dda", 150, 3, "1", "192.0.2.100/24", ""))
			if c.peer == "directord" {
				startDirectord(t, b, nstest.Instance("ddb", 100, 3, "1", "192.0.2.100/24", ""))
			} else {
				nstest.Keepalived(t, b, nstest.Instance("ddb", 100, 3, "1", "192.0.2.100/24", ""))
			}
			alone := func() bool { return a.HasAddr(t, "dda", "192.0.2.100") && !b.HasAddr(t, "ddb", "192.0.2.100") }
			nstest.WaitFor(t, 10*time.Second, "a holds the VIP", alone)
			nstest.HoldFor(t, 1500*time.Millisecond, "a alone holds the VIP", alone)
			pid := master.Cmd.Process.Pid
			g := guardianOf(t, pid)
			if g == 0 {
				t.Fatal("no guardian beside directord")
			}
			if c.guardianFirst {
				syscall.Kill(g, syscall.SIGKILL)
				nstest.WaitFor(t, time.Second, "the guardian gone", func() bool { return exited(g) })
			}
			gone := vipGone(t, a, "192.0.2.100")
			kill := time.Now()
			syscall.Kill(pid, syscall.SIGKILL) // the daemon alone: its host stays up
			nstest.WaitFor(t, 2*mdi, "b announces the VIP", func() bool { return arps.Count("192.0.2.100", kill) > 0 })
			garp := arps.First("192.0.2.100", kill)
			if c.guardianFirst {
				// Nobody speaks for the dead master: the backup waits
				// Master_Down_Interval from the last advert it heard.
				if n := zeros.Count("192.0.2.1", kill); n != 0 {
					t.Errorf("%d priority 0 adverts with the guardian killed first", n)
				}
				if since := garp.Sub(adverts.Last("192.0.2.1", garp)); since < mdi-timer {
					t.Errorf("b took over %v after a's last advert, want Master_Down_Interval %v", since, mdi)
				}
				if !a.HasAddr(t, "dda", "192.0.2.100") {
					t.Error("the VIP left a's interface with neither daemon nor guardian")
				}
				t.Logf("without the guardian: takeover %v after the kill", garp.Sub(kill))
				return
			}
			zero := zeros.First("192.0.2.1", kill)
			if zero.IsZero() {
				t.Fatal("no priority 0 advert after the kill: the guardian did not hand over")
			}
			// The last advert a sent while alive, before the guardian's.
			last := adverts.Last("192.0.2.1", zero)
			if d := garp.Sub(zero); d < skew-timer {
				t.Errorf("b took the VIP %v after the priority 0 advert, want Skew_Time %v at least", d, skew)
			}
			if d := garp.Sub(last); d >= mdi-timer {
				t.Errorf("b took the VIP %v after a's last advert: Master_Down_Interval (%v), not the priority 0 advert", d, mdi)
			}
			removed := gone()
			if removed.IsZero() {
				t.Fatal("the dead master's VIP stayed on its interface")
			}
			if !removed.Before(garp) {
				t.Errorf("the VIP left a's interface %v after b announced it: both held it", removed.Sub(garp))
			}
			t.Logf("kill to priority 0 advert %v, to the VIP gone %v, to b's takeover %v (Skew_Time %v after the advert: %v)",
				zero.Sub(kill), removed.Sub(kill), garp.Sub(kill), skew, garp.Sub(zero))
			nstest.WaitFor(t, time.Second, "the guardian gone", func() bool { return exited(g) })
		})
	}
}

// TestGuardianLeavesOnCleanStop: SIGTERM hands over as always, and the
// guardian leaves without doing anything (no second advert, no error).
func TestGuardianLeavesOnCleanStop(t *testing.T) {
	nstest.RequireRoot(t)
	a := nstest.New(t, "dd-gs-a")
	b := nstest.New(t, "dd-gs-b")
	nstest.Link(t, a, b, "dda", "ddb", "192.0.2.1/24", "192.0.2.2/24")
	master := startDirectord(t, a, nstest.Instance("dda", 150, 3, "0.1", "192.0.2.100/24", ""))
	startDirectord(t, b, nstest.Instance("ddb", 100, 3, "0.1", "192.0.2.100/24", ""))
	nstest.WaitFor(t, 5*time.Second, "a holds the VIP", func() bool { return a.HasAddr(t, "dda", "192.0.2.100") })
	g := guardianOf(t, master.Cmd.Process.Pid)
	if g == 0 {
		t.Fatal("no guardian beside directord")
	}
	// A guardian that dies is replaced (after 1 s).
	syscall.Kill(g, syscall.SIGKILL)
	nstest.WaitFor(t, 5*time.Second, "a new guardian", func() bool {
		n := guardianOf(t, master.Cmd.Process.Pid)
		if n != 0 && n != g && !exited(n) {
			g = n
			return true
		}
		return false
	})
	if !a.HasAddr(t, "dda", "192.0.2.100") {
		t.Fatal("a lost the VIP when its guardian died")
	}
	master.Signal(syscall.SIGTERM)
	if !master.Wait(5 * time.Second) {
		t.Fatal("directord did not stop")
	}
	nstest.WaitFor(t, time.Second, "the guardian gone", func() bool { return exited(g) })
	nstest.WaitFor(t, 2*time.Second, "b master", func() bool { return b.HasAddr(t, "ddb", "192.0.2.100") })
}

// TestHandover: directorctl handover makes the master give up: the peer
// (directord, and keepalived) takes over after Skew_Time and this director
// stays backup though its priority is higher, across a reload that
// restarts VRRP, and status says so; resume makes it preempt again.
//
// The hand-over's timing by cause and order, with the kernel's receive
// times at advert_int 1: the peer's first advert as master comes at least
// Skew_Time after a's priority 0 advert, and before Master_Down_Interval
// after a's last live advert (3 s later: only a peer that ignored the
// priority 0 advert reaches it); directorctl's reported time is no less
// than Skew_Time (it waited for the peer).
func TestHandover(t *testing.T) {
	nstest.RequireRoot(t)
	const adv = time.Second
	skew := 156 * adv / 256 // the peer's, priority 100
	mdi := 3*adv + skew
	const timer = 2 * time.Millisecond
	for i, peer := range []string{"directord", "keepalived"} {
		t.Run("peer="+peer, func(t *testing.T) {
			a := nstest.New(t, fmt.Sprintf("dd-ho-a%d", i))
			b := nstest.New(t, fmt.Sprintf("dd-ho-b%d", i))
			nstest.Link(t, a, b, "dda", "ddb", "192.0.2.1/24", "192.0.2.2/24")
			fromA := nstest.WatchVRRP(t, b, "ddb")
			zeros := nstest.WatchVRRPZero(t, b, "ddb")
			fromB := nstest.WatchVRRP(t, a, "dda")
			dir := t.TempDir()
			file, sock := filepath.Join(dir, "keepalived.conf"), filepath.Join(dir, "d.sock")
			conf := nstest.Instance("dda", 150, 3, "1", "192.0.2.100/24", "")
			if err := os.WriteFile(file, []byte(conf), 0o644); err != nil {
				t.Fatal(err)
			}
			d := nstest.Start(t, a, binary, "-n", "-l", "-f", file, "--control-socket", sock)
			if peer == "directord" {
				startDirectord(t, b, nstest.Instance("ddb", 100, 3, "1", "192.0.2.100/24", ""))
			} else {
				nstest.Keepalived(t, b, nstest.Instance("ddb", 100, 3, "1", "192.0.2.100/24", ""))
			}
			aMaster := func() bool { return a.HasAddr(t, "dda", "192.0.2.100") && !b.HasAddr(t, "ddb", "192.0.2.100") }
			bMaster := func() bool { return b.HasAddr(t, "ddb", "192.0.2.100") && !a.HasAddr(t, "dda", "192.0.2.100") }
			nstest.WaitFor(t, 10*time.Second, "a master", aMaster)
			nstest.HoldFor(t, 1500*time.Millisecond, "a master", aMaster)

			c := control.Dial(sock)
			asked := time.Now()
			res, err := c.Handover(context.Background(), "")
			if err != nil || len(res.Instances) != 1 || !res.Instances[0].OK || res.Instances[0].Master != "192.0.2.2" {
				t.Fatalf("handover: %+v, %v", res, err)
			}
			// The peer's first advert as master ends directorctl's wait.
			if took := res.Instances[0].Took; took < skew-timer {
				t.Errorf("the hand-over took %v, less than the peer's Skew_Time %v", took, skew)
			}
			zero := zeros.First("192.0.2.1", asked)
			if zero.IsZero() {
				t.Fatal("no priority 0 advert from the hand-over")
			}
			// directord's socket heard it; the test's own capture may
			// read it a moment later (its receive time is the kernel's).
			var first time.Time
			nstest.WaitFor(t, 2*time.Second, "the test's capture of the peer's first advert as master", func() bool {
				first = fromB.First("192.0.2.2", zero)
				return !first.IsZero()
			})
			if d := first.Sub(zero); d < skew-timer {
				t.Errorf("the peer advertised %v after the priority 0 advert, want Skew_Time %v at least", d, skew)
			}
			if d := first.Sub(fromA.Last("192.0.2.1", zero)); d >= mdi-timer {
				t.Errorf("the peer advertised %v after a's last advert: Master_Down_Interval (%v), not the priority 0 advert", d, mdi)
			}
			nstest.WaitFor(t, 2*time.Second, "b master", bMaster)
			nstest.HoldFor(t, time.Second, "b master while a yields", bMaster)

			// A reload that restarts VRRP keeps the hand-over.
			changed := strings.Replace(conf, "advert_int 1", "advert_int 1\n    garp_master_delay 1", 1)
			if changed == conf {
				t.Fatal("the test's change did not apply")
			}
			if err := os.WriteFile(file, []byte(changed), 0o644); err != nil {
				t.Fatal(err)
			}
			d.Signal(syscall.SIGHUP)
			var st control.Status
			nstest.WaitFor(t, 5*time.Second, "the reload", func() bool {
				st, err = c.Status(context.Background())
				return err == nil && st.ReloadsOK+st.ReloadsFailed == 1 && len(st.Instances) == 1
			})
			if st.ReloadsOK != 1 {
				t.Fatalf("the reload failed: %+v", st.LastReload)
			}
			if !st.Instances[0].HandedOver {
				t.Errorf("status after the reload: %+v, want handed_over", st.Instances[0])
			}
			nstest.HoldFor(t, time.Second, "b master after a's reload", bMaster)

			if err := c.Resume(context.Background(), ""); err != nil {
				t.Fatal(err)
			}
			// a preempts when the peer's adverts, of a lower priority, stop
			// resetting its timer: Master_Down_Interval.
			nstest.WaitFor(t, 2*mdi, "a master again (preempt)", aMaster)
			t.Logf("hand-over to %s in %v (Skew_Time %v)", peer, res.Instances[0].Took, skew)
		})
	}
}

// TestHandoverWithoutPeer: with nobody to take over, directorctl handover
// says so (and fails), and the director holds the VIP again after
// Master_Down_Interval at priority 1: a hand-over never leaves the VIP
// without a holder.
func TestHandoverWithoutPeer(t *testing.T) {
	nstest.RequireRoot(t)
	a := nstest.New(t, "dd-ho-alone")
	b := nstest.New(t, "dd-ho-nobody")
	nstest.Link(t, a, b, "dda", "ddb", "192.0.2.1/24", "192.0.2.2/24")
	dir := t.TempDir()
	file, sock := filepath.Join(dir, "keepalived.conf"), filepath.Join(dir, "d.sock")
	if err := os.WriteFile(file, []byte(nstest.Instance("dda", 150, 3, "0.1", "192.0.2.100/24", "")), 0o644); err != nil {
		t.Fatal(err)
	}
	nstest.Start(t, a, binary, "-n", "-l", "-f", file, "--control-socket", sock)
	nstest.WaitFor(t, 5*time.Second, "a master", func() bool { return a.HasAddr(t, "dda", "192.0.2.100") })
	res, err := control.Dial(sock).Handover(context.Background(), "VI_1")
	if err == nil || len(res.Instances) != 1 || res.Instances[0].OK || !strings.Contains(res.Instances[0].Error, "no peer took over") {
		t.Fatalf("a hand-over with no peer: %+v, %v", res, err)
	}
	if !strings.Contains(res.Instances[0].Error, "MASTER at priority 1") {
		t.Errorf("want it master again at priority 1: %s", res.Instances[0].Error)
	}
	if !a.HasAddr(t, "dda", "192.0.2.100") {
		t.Error("the VIP has no holder")
	}
}
