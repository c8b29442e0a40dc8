package lab

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// idleConns is how many idle long-lived connections TestActiveReturnIdle
// carries across a return: the demo's.
const idleConns = 60

// sysctlIPVS reads net.ipv4.vs.NAME in the director's namespace; the
// error's text when it cannot.
func (d *Director) sysctlIPVS(name string) string {
	var b []byte
	if err := inNS(d.NS, func() (err error) {
		b, err = os.ReadFile("/proc/sys/net/ipv4/vs/" + name)
		return err
	}); err != nil {
		return err.Error()
	}
	return strings.TrimSpace(string(b))
}

// TestActiveReturnIdle: idle long-lived connections, which the kernel's
// sync sends once (at their third packet) and never again, survive a
// director's drain, stop and return. The stop deletes lb3's service, and
// with expire_nodest_conn the kernel drops every connection of its
// destinations: lb3 comes back knowing none of them. The router gives it
// its share of them again as soon as it announces the VIP, so it must
// not announce before its table and sloppy_tcp are in place (docs/bgp.md);
// with both, mh with mh-port schedules each moved flow to the real server
// the others use, known or not.
func TestActiveReturnIdle(t *testing.T) {
	l := newActiveLab(t)
	l.Up()
	lb3 := l.Directors[2]
	others := l.Directors[:2]
	conns := dialActive(t, l, idleConns)
	ports := map[uint16]bool{}
	for _, c := range conns {
		ports[c.ClientPort()] = true
	}
	WaitFor(t, 30*time.Second, "every director knows every connection", func() bool {
		for _, d := range l.Directors {
			if established(t, d, ports) != idleConns {
				return false
			}
		}
		return true
	})
	if _, err := lb3.Ctl("drain-director"); err != nil {
		t.Fatal(err)
	}
	lb3.Signal(syscall.SIGTERM)
	if !lb3.Stopped(30 * time.Second) {
		t.Fatal("directord on lb3 did not end")
	}
	l.WaitAnnounced(others, converge)
	if n := getAll(conns); n != idleConns {
		t.Fatalf("lb3 stopped: %d of %d idle connections answered by their first real server", n, idleConns)
	}
	known := established(t, lb3, ports)
	t.Logf("lb3 stopped: every connection answered through lb1 and lb2; lb3 knows %d of them", known)

	start := time.Now()
	lb3.Start()
	// The rule, seen from outside: when the router first sends flows to
	// lb3, lb3 holds its whole table and sloppy_tcp is 1.
	WaitFor(t, converge, "the router's next hop to lb3", func() bool {
		return slices.Contains(l.NextHops(), lb3.Addr)
	})
	hop := time.Since(start)
	complete, sloppy := lb3.Complete(), lb3.sysctlIPVS("sloppy_tcp")
	known = established(t, lb3, ports)
	t.Logf("the router's next hop to lb3 %v after its start: lb3's table complete %v, sloppy_tcp %s, knows %d of the %d idle connections",
		hop.Round(time.Millisecond), complete, sloppy, known, idleConns)
	if !complete || sloppy != "1" {
		t.Errorf("lb3 announced before it could serve moved flows: table complete %v, sloppy_tcp %s: %v", complete, sloppy, lb3.Destinations())
	}
	l.WaitAnnounced(l.Directors, converge)
	before := lb3.Scheduled()
	var mu sync.Mutex
	var lost []string
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(func() {
			if s, err := c.Get(); err != nil || s != c.Server {
				mu.Lock()
				lost = append(lost, fmt.Sprintf("port %d, first answered by %s: %q %v", c.ClientPort(), c.Server, s, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	// The kernel's counters lag up to 2 s (its estimator): wait, as
	// TestActiveActive does, for lb3's share to show.
	WaitFor(t, 10*time.Second, "lb3 schedules its share of the idle connections", func() bool { return lb3.Scheduled() > before })
	t.Logf("lb3 back: it scheduled %d connections by mh (sloppy_tcp), %d of %d idle connections lost", lb3.Scheduled()-before, len(lost), idleConns)
	if len(lost) != 0 {
		slices.Sort(lost)
		t.Errorf("%d of %d idle connections lost across lb3's return; the first: %s%s", len(lost), idleConns, lost[0], machine(l, start, time.Time{}, margin))
	}
}
