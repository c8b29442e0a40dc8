package lab

import (
	"bufio"
	"cmp"
	"crypto/tls"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/directord/directord/internal/frrtest"
	"github.com/directord/directord/internal/ipvstest"
	"github.com/directord/directord/internal/nstest"
)

// The benchmarks of the active-active lab beside the VRRP pair, each
// figure measured on both labs in the same run (make bench's lab step,
// docs/benchmarks.md): what a director's loss costs the users, and how
// many new flows go elsewhere when a real server is added. They measure;
// they assert nothing but their premises (a lab that comes up, the
// connections they start from).

// benchLabs are the two labs every benchmark runs: the VRRP pair with
// connection sync (lab.Options{}) and the active-active directors
// (lab.Options{Active: true}).
var benchLabs = []struct {
	name   string
	active bool
}{{"pair", false}, {"active", true}}

// What a loss benchmark carries: benchConns long-lived connections, a
// request every benchEvery on each, and benchRate new connections a
// second. Lighter than TestActiveActive's (20 connections every 100 ms,
// 20 new a second): with those, at host load 10, neither lab answered
// its first 20 new connections within 30 s (the guest lost 60 to 100 %
// of its CPU, stalls up to 41 s), before anything was killed.
const (
	benchConns = 20
	benchEvery = time.Second
	benchRate  = 10
)

// benchSettle is how long a loss benchmark keeps its new connections
// going after the labs converged (the pair's backup holds the VIP, the
// router has dropped the dead director): new connections that fail later
// than this are not seen. Those begun before it may take RequestTimeout
// to fail, and Traffic.Stop waits for them.
const benchSettle = 10 * time.Second

// newBenchLab builds a lab for one round of a benchmark, removed when the
// scope closes, and starts its directors.
func newBenchLab(s *nstest.Scope, b *testing.B, active bool) *Lab {
	b.Helper()
	ipvstest.Require(b)
	ipvstest.RequireRoot(b)
	ipvstest.RequireCommand(b, "ipvsadm")
	if active {
		frrtest.Require(s)
	}
	bin := func(name string) string {
		p, err := filepath.Abs("../../bin/uml/" + name)
		if err != nil {
			b.Fatal(err)
		}
		return p
	}
	l := New(s, Options{
		Directord:   bin("directord"),
		Directorctl: bin("directorctl"),
		Prefix:      fmt.Sprintf("b%d-%d-", os.Getpid()%10000, seq.Add(1)),
		Active:      active,
	})
	// Up's way, with longer waits: a lab that comes up is the premise of
	// the figures, not one of them, and a busy machine (at load 10 the
	// guest lost 85 % of its CPU, stalls of 20 s) takes longer than the
	// tests' 30 s and 60 s to bring it up. lost-cpu-% says what the
	// machine withheld while the figures were taken.
	for _, d := range l.Directors {
		d.Start()
	}
	if active {
		l.WaitAnnounced(l.Directors, benchUp)
	} else {
		l.WaitSteady(l.Directors[0], benchUp)
	}
	return l
}

// benchUp bounds how long a benchmark's lab takes to come up.
const benchUp = 3 * time.Minute

// BenchmarkDirectorLoss: a director's directord SIGKILLed under traffic,
// in each lab. The pair loses its master (lb1), whose guardian hands over
// to lb2 (priority 0 adverts); the active lab loses lb3, whose BGP
// session ends with it, and the router sends its flows to lb1 and lb2.
// Before the kill, benchConns long-lived connections are open, each
// with a request every benchEvery, every director that stays knows them
// all by connection sync, and new connections arrive at benchRate a
// second; they go on for benchSettle after the lab converged. Per round:
//
//   - survived-%: the long-lived connections whose every request was
//     answered, by the real server that answered them first, through the
//     loss and once more after it;
//   - last-failure-s: from the kill to the start of the last new
//     connection that failed (0 when none did): after it, every new
//     connection succeeds;
//   - failed-new, new: the new connections begun after the kill that
//     failed, and all of them; slowest-new-s: the longest one answered
//     took (SYNs retransmitted across the loss);
//   - converged-s: from the kill to the pair's backup holding the VIP, or
//     the router's route without the dead director;
//   - lost-cpu-%: what the machine withheld from an ordinary process from
//     the kill to the end (nstest.Starvation), to read the others by.
//
// Medians over the rounds (-benchtime Nx).
func BenchmarkDirectorLoss(b *testing.B) {
	for _, lab := range benchLabs {
		b.Run(lab.name, func(b *testing.B) {
			var rounds []map[string]float64
			for i := 0; i < b.N; i++ {
				m := directorLossOnce(b, lab.active)
				b.Logf("round %d: %v", i, m)
				rounds = append(rounds, m)
			}
			reportMedians(b, rounds)
		})
	}
}

func directorLossOnce(b *testing.B, active bool) map[string]float64 {
	s := &nstest.Scope{TB: b}
	defer s.Close()
	l := newBenchLab(s, b, active)
	victim, stay := l.Directors[0], l.Directors[1:]
	if active {
		victim, stay = l.Directors[2], l.Directors[:2]
	}

	conns := benchDial(s, l, benchConns)
	ports := map[uint16]bool{}
	for _, c := range conns {
		ports[c.ClientPort()] = true
	}
	// Sync is the kernel's, asynchronous: the premise is that every
	// director that stays knows every connection, or the figure would
	// be sync's lag.
	WaitFor(s, 30*time.Second, "every director that stays knows every connection", func() bool {
		for _, d := range stay {
			if n, err := knownConns(d, ports); err != nil || n != len(conns) {
				return false
			}
		}
		return true
	})
	ch := benchChat(conns, benchEvery)
	s.Cleanup(ch.end)
	tr := l.StartTraffic(benchRate)
	start := time.Now()
	WaitFor(s, benchUp, fmt.Sprintf("%d new connections answered", benchRate), func() bool { return tr.Answered(start) >= benchRate })

	killed := time.Now()
	victim.Kill()
	if active {
		l.WaitAnnounced(stay, converge)
	} else {
		waitEvery(s, 30*time.Second, askEvery, "lb2 holds the VIP", stay[0].HasVIP)
	}
	converged := time.Now()
	WaitFor(s, benchSettle+RequestTimeout, "new connections answered after the lab converged", func() bool {
		return time.Since(converged) >= benchSettle && tr.Answered(converged) >= benchRate
	})
	res := tr.Stop()
	ch.end()
	end := time.Now()

	// The long-lived connections: those the chatter saw fail or move are
	// lost; the others must answer once more, from their real server.
	var survived atomic.Int32
	var wg sync.WaitGroup
	ch.mu.Lock()
	dead, reqs := len(ch.dead), ch.reqs
	var firstDead error
	for i := range conns {
		if firstDead = ch.dead[i]; firstDead != nil {
			break
		}
	}
	for i, c := range conns {
		if ch.dead[i] != nil {
			continue
		}
		wg.Go(func() {
			if srv, err := c.Get(); err == nil && srv == c.Server {
				survived.Add(1)
			}
		})
	}
	ch.mu.Unlock()
	wg.Wait()

	after := Count(res, StartedIn(killed, time.Time{}))
	var last, slowest time.Duration
	for _, r := range res {
		if r.Start.Before(killed) {
			continue
		}
		if r.Err != nil {
			last = max(last, r.Start.Sub(killed))
		} else {
			slowest = max(slowest, r.End.Sub(r.Start))
		}
	}
	w := l.Starve.Between(killed, end)
	b.Logf("%s killed: converged %v after; new connections begun after the kill: %v (first failure: %v), the last failure begun %v after it; long-lived: %d of %d answered by their real server to the end (%d failed or moved in the chatter, %d requests; the first: %v); the machine: %v",
		victim.Name, converged.Sub(killed).Round(time.Millisecond), after, after.FirstError, last.Round(time.Millisecond),
		survived.Load(), len(conns), dead, reqs, firstDead, w)
	// A measure, not a verdict: every failure, starved or not.
	failed := after.Failed + after.Starved
	return map[string]float64{
		"survived-%":     100 * float64(survived.Load()) / float64(len(conns)),
		"last-failure-s": last.Seconds(),
		"failed-new":     float64(failed),
		"new":            float64(after.Requests),
		"slowest-new-s":  slowest.Seconds(),
		"converged-s":    converged.Sub(killed).Seconds(),
		"lost-cpu-%":     100 * w.Lost.Seconds() / max(end.Sub(killed).Seconds(), 1e-9),
	}
}

// benchDial opens n long-lived connections, a few at a time, each tried
// up to 3 times (dialActive's way, for a benchmark's scope): they are the
// premise, not what is measured.
func benchDial(s *nstest.Scope, l *Lab, n int) []*Conn {
	s.Helper()
	conns := make([]*Conn, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	slots := make(chan struct{}, 8)
	for i := range n {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			for range 3 {
				if conns[i], errs[i] = l.Dial(); errs[i] == nil {
					return
				}
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			s.Fatalf("long-lived connection %d, 3 tries: %v", i, err)
		}
		s.Cleanup(func() { conns[i].Close() })
	}
	return conns
}

// knownConns counts the client's connections from ports that d's IPVS
// connection table holds as established.
func knownConns(d *Director, ports map[uint16]bool) (int, error) {
	cs, err := d.Conns()
	if err != nil {
		return 0, err
	}
	k := 0
	for _, c := range cs {
		if c.Client.Addr() == ClientAddr && ports[c.Client.Port()] && c.State == "ESTABLISHED" {
			k++
		}
	}
	return k, nil
}

// reportMedians reports each metric's median over the rounds, with the
// unit that names it.
func reportMedians(b *testing.B, rounds []map[string]float64) {
	if len(rounds) == 0 {
		return
	}
	for unit := range rounds[0] {
		var vs []float64
		for _, m := range rounds {
			vs = append(vs, m[unit])
		}
		slices.Sort(vs)
		b.ReportMetric(vs[len(vs)/2], unit)
	}
	b.ReportMetric(0, "ns/op")
}

// remapFlows is how many flows BenchmarkRemap follows, each from a port
// of its own on the client, from remapFirstPort on: below the client's
// ephemeral ports (32768 on), so that no other connection takes one.
const (
	remapFlows     = 120
	remapFirstPort = 20000
)

// remapAddr is the real server BenchmarkRemap adds: above the others, as
// a new server usually is (for mh, one addition at the head of the
// kernel's list, docs/ipvs.md).
var remapAddr = netip.MustParseAddr("10.1.0.24")

// BenchmarkRemap: new flows remapped when a real server is added, in
// each lab. remapFlows flows, each a new connection from its own client
// port (the same address and port each time: the same flow to the
// router's ECMP hash and to the scheduler), are sent three times: before,
// again with nothing changed, and after a fourth real server (rs4) was
// added to every director's file and each reloaded. The ideal for a
// consistent hash is 1/N of the flows moved (N the real servers after:
// 4), all to the new server. Per round:
//
//   - remapped-%: the flows answered after by another real server than
//     before; to-new-%, between-old-%: those that went to rs4, and those
//     that moved among the old three;
//   - repeat-remapped-%: the flows answered by another real server the
//     second time, nothing changed: 0 for a hash; round-robin (the
//     pair's rr) ignores the flow, and this is what it gives by itself;
//   - ideal-%: 100/N; flows: the flows answered all three times (a flow
//     that fails 3 tries in a phase is left out).
//
// Medians over the rounds (-benchtime Nx).
func BenchmarkRemap(b *testing.B) {
	for _, lab := range benchLabs {
		b.Run(lab.name, func(b *testing.B) {
			var rounds []map[string]float64
			for i := 0; i < b.N; i++ {
				m := remapOnce(b, lab.active)
				b.Logf("round %d: %v", i, m)
				rounds = append(rounds, m)
			}
			reportMedians(b, rounds)
		})
	}
}

func remapOnce(b *testing.B, active bool) map[string]float64 {
	s := &nstest.Scope{TB: b}
	defer s.Close()
	l := newBenchLab(s, b, active)
	before := flowServers(l)
	again := flowServers(l)

	rs4 := addBenchReal(l, "rs4", remapAddr)
	reals := append(slices.Clone(RealAddrs), rs4.Addr)
	for _, d := range l.Directors {
		d.WriteConfig(reals)
		d.Reload()
	}
	WaitFor(s, 30*time.Second, "every director with rs4 in its table", func() bool {
		for _, d := range l.Directors {
			if !d.Complete() {
				return false
			}
		}
		return true
	})
	after := flowServers(l)

	var flows, moved, toNew, repeat int
	spread := map[string]int{}
	for p, srv := range before {
		a, ok1 := again[p]
		z, ok2 := after[p]
		if !ok1 || !ok2 {
			continue
		}
		flows++
		spread[z]++
		if a != srv {
			repeat++
		}
		if z != srv {
			moved++
			if z == rs4.Name {
				toNew++
			}
		}
	}
	if flows == 0 {
		s.Fatalf("no flow answered in all three phases")
	}
	pc := func(n int) float64 { return 100 * float64(n) / float64(flows) }
	b.Logf("%d flows answered in all three phases (of %d); after rs4: %v; moved %d (%d to rs4), %d moved with nothing changed",
		flows, remapFlows, spread, moved, toNew, repeat)
	return map[string]float64{
		"remapped-%":        pc(moved),
		"to-new-%":          pc(toNew),
		"between-old-%":     pc(moved - toNew),
		"repeat-remapped-%": pc(repeat),
		"ideal-%":           100 / float64(len(reals)),
		"flows":             float64(flows),
	}
}

// flowServers sends each of the remapFlows flows once, a few at a time,
// and returns which real server answered each, by client port; a flow
// that fails 3 tries is missing, and logged.
func flowServers(l *Lab) map[uint16]string {
	out := map[uint16]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var failed atomic.Int32
	slots := make(chan struct{}, 8)
	for i := range remapFlows {
		port := uint16(remapFirstPort + i)
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			var err error
			for range 3 {
				var srv string
				if srv, err = l.flowFrom(port); err == nil {
					mu.Lock()
					out[port] = srv
					mu.Unlock()
					return
				}
			}
			if failed.Add(1) == 1 {
				l.t.Logf("flow from port %d, 3 tries: %v", port, err)
			}
		})
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		l.t.Logf("%d of %d flows failed 3 tries", n, remapFlows)
	}
	return out
}

// flowFrom sends one request on a new connection from the client's port
// and says which real server answered. It ends the connection with a
// reset, once answered: neither the client nor the real server keeps it
// in TIME_WAIT, so the same port opens the same flow again at once (the
// directors' entry, closed, gives way to the new connection:
// conn_reuse_mode).
func (l *Lab) flowFrom(port uint16) (string, error) {
	deadline := time.Now().Add(RequestTimeout)
	var c net.Conn
	err := inNS(l.Client, func() (err error) {
		d := net.Dialer{
			LocalAddr: &net.TCPAddr{IP: ClientAddr.AsSlice(), Port: int(port)},
			Deadline:  deadline,
			Control: func(_, _ string, rc syscall.RawConn) error {
				var serr error
				err := rc.Control(func(fd uintptr) {
					serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1)
				})
				return cmp.Or(err, serr)
			},
		}
		c, err = d.Dial("tcp4", ServiceAddress.String())
		return err
	})
	if err != nil {
		return "", fmt.Errorf("dial %s from port %d: %w", ServiceAddress, port, err)
	}
	defer func() {
		c.(*net.TCPConn).SetLinger(0)
		c.Close()
	}()
	tc := tls.Client(c, l.tls)
	tc.SetDeadline(deadline)
	if err := tc.Handshake(); err != nil {
		return "", fmt.Errorf("TLS handshake from port %d: %w", port, err)
	}
	return request(tc, bufio.NewReader(tc), true)
}

// addBenchReal starts one more real server on the service LAN, as New
// starts the others (the VIP on its lo, ARP for it ignored), and waits
// until it listens; no director has it yet.
func addBenchReal(l *Lab, name string, addr netip.Addr) *RealServer {
	t := l.t
	t.Helper()
	r := &RealServer{l: l, Name: name, Addr: addr, NS: l.host(name)}
	l.Switch.Plug(t, r.NS, "eth0", prefix(addr))
	l.defaultRoute(r.NS, RouterInside)
	for _, s := range []string{"all", "eth0"} {
		l.sysctl(r.NS, "net/ipv4/conf/"+s+"/arp_ignore", "1")
		l.sysctl(r.NS, "net/ipv4/conf/"+s+"/arp_announce", "2")
	}
	lo, err := r.NS.NL.LinkByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.NS.NL.AddrAdd(lo, &netlink.Addr{IPNet: hostNet(VIP)}); err != nil {
		t.Fatalf("VIP on %s's lo: %v", name, err)
	}
	// Start's way, with benchUp: a premise (rs4 took more than the
	// lab's 30 s at host load 10).
	r.start()
	WaitFor(t, benchUp, name+" listening", func() bool {
		if !r.Running() {
			t.Fatalf("%s ended at start", name)
		}
		return r.listening()
	})
	l.Reals = append(l.Reals, r)
	return r
}

// benchChatter keeps a request going every period on each connection and
// remembers each one's first failure (an error, or an answer from
// another real server): it stops there.
type benchChatter struct {
	stop chan struct{}
	once sync.Once
	wg   sync.WaitGroup
	mu   sync.Mutex
	dead map[int]error
	reqs int
}

func benchChat(conns []*Conn, period time.Duration) *benchChatter {
	ch := &benchChatter{stop: make(chan struct{}), dead: map[int]error{}}
	for i, c := range conns {
		ch.wg.Go(func() {
			tick := time.NewTicker(period)
			defer tick.Stop()
			for {
				select {
				case <-ch.stop:
					return
				case <-tick.C:
				}
				srv, err := c.Get()
				if err == nil && srv != c.Server {
					err = fmt.Errorf("answered by %s, was %s", srv, c.Server)
				}
				ch.mu.Lock()
				ch.reqs++
				if err != nil {
					ch.dead[i] = err
				}
				ch.mu.Unlock()
				if err != nil {
					return
				}
			}
		})
	}
	return ch
}

// end stops the requests and waits for those in flight; again, it does
// nothing.
func (ch *benchChatter) end() {
	ch.once.Do(func() { close(ch.stop) })
	ch.wg.Wait()
}
