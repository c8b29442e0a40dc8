package lab

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// agreeWithin bounds how long the directors take to report equal digests
// once they hold the same table: a reload's operations, or a check's
// verdict, applied and acknowledged by the kernel, then read from the
// control socket. Generous: only a failure reaches it (the resync that
// would repair a table behind directord's back is 30 s).
const agreeWithin = 30 * time.Second

// reversed returns a copy of as, last first.
func reversed(as []netip.Addr) []netip.Addr {
	r := slices.Clone(as)
	slices.Reverse(r)
	return r
}

// withWeight returns the active lab's configuration with real server a
// at weight w instead of 1.
func withWeight(t *testing.T, text string, a netip.Addr, w int) string {
	t.Helper()
	old := fmt.Sprintf("real_server %s %d {\n        weight 1\n", a, ServicePort)
	if !strings.Contains(text, old) {
		t.Fatalf("no %q in the active lab's configuration", old)
	}
	return strings.Replace(text, old, fmt.Sprintf("real_server %s %d {\n        weight %d\n", a, ServicePort, w), 1)
}

// TestDigests: the three active directors' digests of the service's
// IPVS table (directorctl status) are equal, and equal to the one they
// started with, after each history that could make their Maglev tables
// differ (issue 22's proof of agreement):
//
//   - restart: lb1's directord stopped (SIGTERM, which deletes its
//     service) and started again, so that it adds every real server anew;
//   - reload: lb2 reloaded on a file that lists the real servers in the
//     reverse order, then on one with rs2 at weight 2 (its digest must
//     differ while the others' stay), then back at weight 1;
//   - flap: rs3 fails lb3's checks only (rs3 drops what it sends to lb3)
//     and comes back: lb3 holds it at weight 0 (mh-fallback), its digest
//     differs meanwhile, and is the others' again after.
//
// Each wait polls until the digests agree; on failure it prints each
// director's digest and ipvsadm -Ln.
func TestDigests(t *testing.T) {
	start := time.Now()
	l := newActiveLab(t)
	l.Up()
	lb1, lb2, lb3 := l.Directors[0], l.Directors[1], l.Directors[2]
	first, took := l.WaitDigestsEqual(agreeWithin)
	t.Logf("up in %v; digests equal after %v: %s", time.Since(start).Round(time.Millisecond), took.Round(time.Millisecond), first)
	same := func(step string) {
		t.Helper()
		got, took := l.WaitDigestsEqual(agreeWithin)
		if got != first {
			t.Errorf("after %s, the directors agree on %s, not on the table they started with (%s):\n%s", step, got, first, l.Tables())
		}
		t.Logf("%s: digests equal after %v", step, took.Round(time.Millisecond))
	}
	// differs waits until d's digest is known and not first while every
	// other director's is first.
	differs := func(d *Director, why string) {
		t.Helper()
		waitEvery(t, agreeWithin, askEvery, d.Name+"'s digest alone differs ("+why+")", func() bool {
			for i, s := range l.Digests() {
				if (l.Directors[i] == d) == (s == first) || s == "" {
					return false
				}
			}
			return true
		})
	}

	// restart
	lb1.Signal(syscall.SIGTERM)
	if !lb1.Stopped(30 * time.Second) {
		t.Fatal("directord on lb1 did not end after SIGTERM")
	}
	lb1.Start()
	l.WaitAnnounced(l.Directors, converge)
	same("lb1's restart")

	// reload
	lb2.WriteConfig(reversed(RealAddrs))
	lb2.Reload()
	same("lb2's reload of a file listing the real servers last first")
	rs2 := l.Reals[1]
	lb2.WriteConfigText(withWeight(t, ActiveConfig(RealAddrs), rs2.Addr, 2), RealAddrs)
	lb2.Reload()
	differs(lb2, "rs2 at weight 2")
	if w := lb2.Weights()[rs2.Addr]; w != 2 {
		t.Errorf("lb2 has rs2 at weight %d, want 2", w)
	}
	lb2.WriteConfig(RealAddrs)
	lb2.Reload()
	same("lb2's reload with rs2's weight changed and back")

	// flap
	rs3 := l.Reals[2]
	undo := rs3.DropRepliesTo(lb3.Addr)
	differs(lb3, "its checks of rs3 fail")
	if w, ok := lb3.Weights()[rs3.Addr]; !ok || w != 0 {
		t.Errorf("lb3 has rs3 at weight %d (in its table: %v), want it held at 0 (mh-fallback)", w, ok)
	}
	undo()
	same("rs3's flap on lb3")

	// As an operator reads it.
	for _, d := range l.Directors {
		got, err := d.CtlDigest()
		if err != nil {
			t.Fatal(err)
		}
		if got != first {
			t.Errorf("%s: directorctl status --json says digest %q, want %q", d.Name, got, first)
		}
	}
	t.Logf("the whole test took %v in the guest", time.Since(start).Round(time.Millisecond))
}
