package lab

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/directord/directord/ipvs"
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

// The probe flows of TestRealServerAdded: new connections from the
// client's ports probeBase to probeBase+probes-1, below the kernel's
// ephemeral range (32768 to 60999), so that no other connection of the
// client takes one of them.
const (
	probeBase = 20000
	probes    = 300
)

// probe sends one request from each of ports, each on a new connection,
// 8 at a time, and returns the real server that answered each, or why it
// failed.
func probe(l *Lab, ports []uint16) ([]string, []error) {
	servers := make([]string, len(ports))
	errs := make([]error, len(ports))
	var wg sync.WaitGroup
	slots := make(chan struct{}, 8)
	for i, p := range ports {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			r := l.GetFrom(p)
			servers[i], errs[i] = r.Server, r.Err
		})
	}
	wg.Wait()
	return servers, errs
}

// waitProbesForgotten waits until no director's connection table holds
// a flow from one of ports: a new connection from a port whose entry lives on goes
// to that entry's real server (in direct routing the entry stays in
// FIN_WAIT, which the kernel does not reschedule by default:
// conn_reuse_mode), not where the table would send it.
func waitProbesForgotten(t *testing.T, l *Lab, ports []uint16) time.Duration {
	t.Helper()
	probed := map[uint16]bool{}
	for _, p := range ports {
		probed[p] = true
	}
	return WaitFor(t, 60*time.Second, "no director's table holds a probe flow", func() bool {
		for _, d := range l.Directors {
			cs, err := d.Conns()
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range cs {
				if c.Client.Addr() == ClientAddr && probed[c.Client.Port()] {
					return false
				}
			}
		}
		return true
	})
}

// rs4Addr is the real server TestRealServerAdded adds: the highest
// address, so that it goes at the head of the Maglev list (one addition
// on each director, docs/ipvs.md).
var rs4Addr = netip.MustParseAddr("10.1.0.24")

// TestRealServerAdded: a 4th real server added to the three active
// directors' files and reloaded one after the other, as an operator
// would, while the long-lived connections chatter (a request every
// 100 ms each). Every one of them goes on, answered by its first real
// server; the directors' digests are equal after the add (and not the
// one before); and of probes new flows, each from its own client port
// (which mh-port hashes), sent before the add and again after it, the
// fraction that a different real server answers is measured: the ideal
// is 1/4 (only those that go to the new server), a full reshuffle would
// move 3/4. It must be above 0 and under a half; every probe after the
// add is answered.
func TestRealServerAdded(t *testing.T) {
	start := time.Now()
	l := newActiveLab(t)
	l.Up()
	first, _ := l.WaitDigestsEqual(agreeWithin)
	// The probes' entries expire 1 s after their close (FIN_WAIT),
	// not after the kernel's 2 minutes, so that the same ports can be
	// probed again after the add (waitProbesForgotten).
	for _, d := range l.Directors {
		if err := d.ipvs.SetTimeouts(ipvs.Timeouts{TCPFin: time.Second}); err != nil {
			t.Fatalf("%s: %v", d.Name, err)
		}
	}
	// The client may close a probe first (it does not wait for the real
	// server's FIN), and a port in TIME_WAIT takes a new connection to
	// the same address only with tcp_tw_reuse.
	l.sysctl(l.Client, "net/ipv4/tcp_tw_reuse", "1")
	// rs4's host and process first, while the guest is quiet (a program
	// started in a busy guest took it more than 30 s to listen); no
	// director knows of it until the reloads.
	rs4 := l.AddRealServer("rs4", rs4Addr)
	conns := dialActive(t, l, activeConns)

	// Before the add, a port whose probe fails is left out of the
	// measurement: where its flow goes before is the premise, not what is
	// measured, and in a starved guest a handshake may time out. It is
	// not tried again: the client's socket of the failed try may hold the
	// port for a while (a connect from it then fails at once, "cannot
	// assign requested address"). More than a tenth failing is no
	// premise.
	var ports []uint16
	for p := range uint16(probes) {
		ports = append(ports, probeBase+p)
	}
	probed := time.Now()
	servers, errs := probe(l, ports)
	var kept []uint16
	var before []string
	var firstErr error
	for i, err := range errs {
		if err != nil {
			firstErr = cmp.Or(firstErr, err)
			continue
		}
		kept = append(kept, ports[i])
		before = append(before, servers[i])
	}
	if 10*len(kept) < 9*probes {
		t.Fatalf("%d of %d probes before the add failed; the first: %v%s", probes-len(kept), probes, firstErr, machine(l, probed, time.Time{}, margin))
	}
	t.Logf("%d probes before the add in %v: %d answered, measured (the first failure: %v)", probes, time.Since(probed).Round(time.Millisecond), len(kept), firstErr)

	// The chatter runs through the add, not through the probes, whose 600
	// TLS handshakes are the guest's heaviest work.
	ch := chat(conns)
	t.Cleanup(ch.end)
	reals := append(slices.Clone(RealAddrs), rs4.Addr)
	added := time.Now()
	for _, d := range l.Directors {
		d.WriteConfig(reals)
		d.Reload()
	}
	took := l.WaitAnnounced(l.Directors, converge)
	digest, _ := l.WaitDigestsEqual(agreeWithin)
	if digest == first {
		t.Errorf("the digest after the add is the one before, %s", digest)
	}
	t.Logf("rs4 added: every director holds it %v after the first reload (%v after the last), digests equal: %s", time.Since(added).Round(time.Millisecond), took.Round(time.Millisecond), digest)
	ch.end()
	if n, reqs, first := ch.broken(); n != 0 {
		t.Errorf("%d of %d long-lived connections broke or moved (of %d requests); the first: %v", n, activeConns, reqs, first)
	} else {
		t.Logf("the %d long-lived connections went on through the add, %d requests, each answered by its first real server", activeConns, reqs)
	}
	forgot := waitProbesForgotten(t, l, kept)

	probed = time.Now()
	after, errs := probe(l, kept)
	failed, moved, toNew := 0, 0, 0
	firstErr = nil
	spread := map[string][2]int{}
	for i := range kept {
		if errs[i] != nil {
			failed++
			firstErr = cmp.Or(firstErr, errs[i])
			continue
		}
		n := spread[before[i]]
		n[0]++
		spread[before[i]] = n
		n = spread[after[i]]
		n[1]++
		spread[after[i]] = n
		if after[i] != before[i] {
			moved++
			if after[i] == rs4.Name {
				toNew++
			}
		}
	}
	var sp []string
	for _, r := range l.Reals {
		sp = append(sp, fmt.Sprintf("%s %d→%d", r.Name, spread[r.Name][0], spread[r.Name][1]))
	}
	answered := len(kept) - failed
	t.Logf("%d probes after the add in %v (their old entries gone %v after the digests agreed), %d answered: %d (%.1f%%) on another real server than before, %d of them on rs4, %d moved between the first three; by real server, before→after: %s",
		len(kept), time.Since(probed).Round(time.Millisecond), forgot.Round(time.Millisecond), answered, moved, 100*float64(moved)/float64(max(answered, 1)), toNew, moved-toNew, strings.Join(sp, ", "))
	if failed != 0 {
		t.Errorf("%d of %d new flows after the add failed; the first: %v%s", failed, len(kept), firstErr, machine(l, probed, time.Time{}, margin))
	}
	if moved == 0 || 2*moved >= answered {
		t.Errorf("%d of %d new flows went elsewhere than before the add: want more than none (rs4 takes its share) and under half (3/4 would be a full reshuffle)", moved, answered)
	}

	if got := getAll(conns); got != activeConns {
		t.Errorf("at the end %d of %d long-lived connections answered by their first real server", got, activeConns)
	}
	t.Logf("the whole test took %v in the guest", time.Since(start).Round(time.Millisecond))
}
