// Package nstest builds test hosts out of network namespaces on this
// machine: namespaces joined by veth pairs, commands run inside them, and
// Debian's keepalived as a reference peer. Tests that use it need root (CI
// runs as root); traffic never leaves the namespaces they make.
package nstest

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// TB is what the helpers need of a test or benchmark; *testing.T and
// *testing.B satisfy it, and so does a Scope.
type TB interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
	Skip(args ...any)
	Failed() bool
	Cleanup(func())
	TempDir() string
}

// Scope is a TB whose cleanups run when Close is called, for the rounds
// of a benchmark.
type Scope struct {
	TB
	cleanups []func()
}

// Cleanup registers f to run at Close.
func (s *Scope) Cleanup(f func()) { s.cleanups = append(s.cleanups, f) }

// Close runs the cleanups, last first.
func (s *Scope) Close() {
	for i := len(s.cleanups) - 1; i >= 0; i-- {
		s.cleanups[i]()
	}
	s.cleanups = nil
}

// NS is a named network namespace, removed when the test ends.
type NS struct {
	Name string
	NS   netns.NsHandle
	NL   *netlink.Handle // a netlink handle inside it
}

// RequireRoot skips a test that cannot make namespaces.
func RequireRoot(t TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root for network namespaces (CI runs as root)")
	}
}

// New makes a named namespace with lo up. The name gets the test
// process's ID as a suffix, so that two test binaries run at once (two
// packages, or two work trees on one machine) never take each other's
// namespaces.
func New(t TB, name string) *NS {
	t.Helper()
	name = fmt.Sprintf("%s-%d", name, os.Getpid())
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	netns.DeleteNamed(name) // a leftover of a killed run
	ns, err := netns.NewNamed(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := netns.Set(orig); err != nil {
		t.Fatal(err)
	}
	nl, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		nl.Close()
		ns.Close()
		netns.DeleteNamed(name)
	})
	lo, err := nl.LinkByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	if err := nl.LinkSetUp(lo); err != nil {
		t.Fatal(err)
	}
	return &NS{Name: name, NS: ns, NL: nl}
}

// Do runs f on a thread inside the namespace.
func (n *NS) Do(t TB, f func()) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	if err := netns.Set(n.NS); err != nil {
		t.Fatal(err)
	}
	defer netns.Set(orig)
	f()
}

// Link joins a and b with a veth pair named ifA in a and ifB in b, with the
// given addresses (blank-separated), and waits for the IPv6 link-local
// addresses.
func Link(t TB, a, b *NS, ifA, ifB, addrA, addrB string) {
	t.Helper()
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: ifA, Namespace: netlink.NsFd(a.NS)},
		PeerName: ifB, PeerNamespace: netlink.NsFd(b.NS)}
	if err := netlink.LinkAdd(veth); err != nil {
		t.Fatal(err)
	}
	for _, side := range []struct {
		n    *NS
		ifn  string
		addr string
	}{{a, ifA, addrA}, {b, ifB, addrB}} {
		l, err := side.n.NL.LinkByName(side.ifn)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range strings.Fields(side.addr) {
			ad, err := netlink.ParseAddr(s)
			if err != nil {
				t.Fatal(err)
			}
			ad.Flags |= 0x02 // IFA_F_NODAD: usable at once
			if err := side.n.NL.AddrAdd(l, ad); err != nil {
				t.Fatal(err)
			}
		}
		if err := side.n.NL.LinkSetUp(l); err != nil {
			t.Fatal(err)
		}
	}
	WaitFor(t, 5*time.Second, "IPv6 link-local addresses", func() bool {
		return hasLinkLocal(a, ifA) && hasLinkLocal(b, ifB)
	})
}

func hasLinkLocal(n *NS, ifn string) bool {
	l, err := n.NL.LinkByName(ifn)
	if err != nil {
		return false
	}
	list, _ := n.NL.AddrList(l, netlink.FAMILY_V6)
	for _, a := range list {
		if a.IP.IsLinkLocalUnicast() && a.Flags&0x40 == 0 { // not IFA_F_TENTATIVE
			return true
		}
	}
	return false
}

// WaitFor polls cond until it holds, failing the test after limit; it
// returns how long it took.
func WaitFor(t TB, limit time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > limit {
			t.Fatalf("%s: not within %v%s", what, limit, StarvedDuring(t, start))
		}
		time.Sleep(pollEvery)
	}
	return time.Since(start)
}

// pollEvery is how often WaitFor asks: every millisecond on a host, every
// 10 ms in the User-Mode Linux guest (DIRECTORD_UML=1), whose system calls
// cost tens of microseconds each. Polled every millisecond there, a
// test's wait for a VIP used two thirds of the guest's one CPU (20 s in
// 43 s, TestHASuspendBackupDoesNotCheck at load 20) and starved a
// directord still starting at nice 0. Tests that need the time of an
// event take the kernel's (Watch), not the poll's.
var pollEvery = func() time.Duration {
	if os.Getenv("DIRECTORD_UML") == "1" {
		return 10 * time.Millisecond
	}
	return time.Millisecond
}()

// HoldFor checks that cond stays true for d.
func HoldFor(t TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	start := time.Now()
	end := start.Add(d)
	for time.Now().Before(end) {
		if !cond() {
			t.Fatalf("%s: stopped holding after %v%s", what, time.Since(start).Round(time.Millisecond), StarvedDuring(t, start))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// HasAddr reports whether the interface holds addr.
func (n *NS) HasAddr(t TB, ifn, addr string) bool {
	t.Helper()
	l, err := n.NL.LinkByName(ifn)
	if err != nil {
		t.Fatal(err)
	}
	want := netip.MustParseAddr(addr)
	for try := 0; ; try++ {
		list, err := n.NL.AddrList(l, netlink.FAMILY_ALL)
		if err != nil && try < 5 {
			continue // netlink.ErrDumpInterrupted: a concurrent change
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range list {
			if ip, ok := netip.AddrFromSlice(a.IP); ok && ip.Unmap() == want {
				return true
			}
		}
		return false
	}
}

// Process is a command running inside a namespace.
type Process struct {
	Cmd  *exec.Cmd
	out  *strings.Builder
	done chan struct{}
}

// Start runs argv inside ns; its output is logged when the test ends.
func Start(t TB, ns *NS, argv ...string) *Process {
	t.Helper()
	// ip netns exec would say a missing program only in the output,
	// logged once the test has waited out whatever it waits for.
	if _, err := exec.LookPath(argv[0]); err != nil {
		t.Fatalf("%v: make deps installs what the tests and benchmarks run", err)
	}
	cmd := exec.Command("ip", append([]string{"netns", "exec", ns.Name}, argv...)...)
	p := &Process{Cmd: cmd, out: &strings.Builder{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // Signal reaches its children too
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		if t.Failed() {
			logTopCPU(t) // before the stops, while they run
		}
		p.Stop(10 * time.Second)
		if t.Failed() || verbose() {
			t.Logf("%s in %s:\n%s", filepath.Base(argv[0]), ns.Name, p.out.String())
		}
	})
	return p
}

// verbose reports whether a test binary runs with -test.v; false in any
// other program (testing.Verbose panics there), such as make demo's.
func verbose() bool { return testing.Testing() && testing.Verbose() }

// Signal sends sig to the process and its children (keepalived's VRRP
// process is a child of its parent process): SIGKILL kills them all at
// once, as the OOM killer or a bad deploy would.
func (p *Process) Signal(sig syscall.Signal) { syscall.Kill(-p.Cmd.Process.Pid, sig) }

// Wait waits for the process to end, at most d.
func (p *Process) Wait(d time.Duration) bool {
	select {
	case <-p.done:
		return true
	case <-time.After(d):
		return false
	}
}

// Ended reports whether the process has ended.
func (p *Process) Ended() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Output is what the process wrote, once it has ended (Stop first).
func (p *Process) Output() string {
	<-p.done
	return p.out.String()
}

// Stop interrupts the process and waits for it, killing it after d.
func (p *Process) Stop(d time.Duration) {
	select {
	case <-p.done:
		return
	default:
	}
	p.Signal(syscall.SIGINT)
	if !p.Wait(d) {
		p.Signal(syscall.SIGKILL)
		<-p.done
	}
}

// Keepalived runs Debian's keepalived's VRRP process in ns with conf.
func Keepalived(t TB, ns *NS, conf string) *Process {
	t.Helper()
	if _, err := exec.LookPath("keepalived"); err != nil {
		t.Fatal("keepalived is not installed: make test installs it (apt-get install keepalived)")
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "keepalived.conf")
	if err := os.WriteFile(file, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	return Start(t, ns, "keepalived", "-P", "-n", "-l", "-D", "-f", file,
		"-p", filepath.Join(dir, "k.pid"), "-r", filepath.Join(dir, "v.pid"))
}

// Watch records frames of interest seen on an interface inside a
// namespace (sent or received): gratuitous ARPs, or VRRP adverts.
type Watch struct {
	mu   sync.Mutex
	seen []Seen
	fd   int
}

// Seen is one frame of interest: when, and the address it is about.
type Seen struct {
	At   time.Time
	Addr netip.Addr
}

// WatchARP records gratuitous ARPs (sender address = target address), by
// the address announced.
func WatchARP(t TB, ns *NS, ifn string) *Watch {
	return watch(t, ns, ifn, syscall.ETH_P_ARP, func(p []byte) (netip.Addr, bool) {
		if len(p) < 28 {
			return netip.Addr{}, false
		}
		spa, tpa := netip.AddrFrom4([4]byte(p[14:18])), netip.AddrFrom4([4]byte(p[24:28]))
		return spa, spa == tpa
	})
}

// WatchNA records unsolicited Neighbor Advertisements (ICMPv6 type 136 to
// all nodes), by their target address.
func WatchNA(t TB, ns *NS, ifn string) *Watch {
	return watch(t, ns, ifn, syscall.ETH_P_IPV6, func(p []byte) (netip.Addr, bool) {
		if len(p) < 40+24 || p[6] != 58 || p[40] != 136 {
			return netip.Addr{}, false
		}
		return netip.AddrFrom16([16]byte(p[48:64])), true
	})
}

// WatchVRRP records IPv4 VRRP adverts, by their source address.
func WatchVRRP(t TB, ns *NS, ifn string) *Watch {
	return watch(t, ns, ifn, syscall.ETH_P_IP, func(p []byte) (netip.Addr, bool) {
		if len(p) < 20 || p[9] != 112 {
			return netip.Addr{}, false
		}
		return netip.AddrFrom4([4]byte(p[12:16])), true
	})
}

// WatchVRRPZero records IPv4 VRRP adverts of priority 0 (a master
// giving up), by their source address.
func WatchVRRPZero(t TB, ns *NS, ifn string) *Watch {
	return watch(t, ns, ifn, syscall.ETH_P_IP, func(p []byte) (netip.Addr, bool) {
		if len(p) < 20 || p[9] != 112 {
			return netip.Addr{}, false
		}
		hl := int(p[0]&0x0f) * 4
		if len(p) < hl+4 || p[hl+2] != 0 {
			return netip.Addr{}, false
		}
		return netip.AddrFrom4([4]byte(p[12:16])), true
	})
}

func watch(t TB, ns *NS, ifn string, proto uint16, match func([]byte) (netip.Addr, bool)) *Watch {
	t.Helper()
	w := &Watch{}
	var err error
	ns.Do(t, func() {
		w.fd, err = syscall.Socket(syscall.AF_PACKET, syscall.SOCK_DGRAM, int(htons(proto)))
		if err != nil {
			return
		}
		var ifi *net.Interface
		if ifi, err = net.InterfaceByName(ifn); err != nil {
			return
		}
		err = syscall.Bind(w.fd, &syscall.SockaddrLinklayer{Protocol: htons(proto), Ifindex: ifi.Index})
	})
	if err != nil {
		t.Fatal(err)
	}
	tv := syscall.Timeval{Usec: 100000}
	syscall.SetsockoptTimeval(w.fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv)
	// The kernel's receive time, not when this process got round to
	// reading: a busy host must not blur what is measured.
	syscall.SetsockoptInt(w.fd, syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	done, stop := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		buf, oob := make([]byte, 1500), make([]byte, 128)
		for {
			select {
			case <-stop:
				return
			default:
			}
			n, oobn, _, _, err := syscall.Recvmsg(w.fd, buf, oob, 0)
			if err != nil {
				continue
			}
			at := time.Now()
			if msgs, err := syscall.ParseSocketControlMessage(oob[:oobn]); err == nil {
				for _, m := range msgs {
					if m.Header.Level == syscall.SOL_SOCKET && m.Header.Type == syscall.SO_TIMESTAMPNS && len(m.Data) >= 16 {
						ts := (*syscall.Timespec)(unsafe.Pointer(&m.Data[0]))
						at = time.Unix(ts.Sec, ts.Nsec)
					}
				}
			}
			if addr, ok := match(buf[:n]); ok {
				w.mu.Lock()
				w.seen = append(w.seen, Seen{at, addr})
				w.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done; syscall.Close(w.fd) })
	return w
}

// Count returns how many frames about addr were seen since since.
func (w *Watch) Count(addr string, since time.Time) int {
	a := netip.MustParseAddr(addr)
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, s := range w.seen {
		if s.Addr == a && !s.At.Before(since) {
			n++
		}
	}
	return n
}

// First returns when the first frame about addr since since was seen, or
// the zero time.
func (w *Watch) First(addr string, since time.Time) time.Time {
	a := netip.MustParseAddr(addr)
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range w.seen {
		if s.Addr == a && !s.At.Before(since) {
			return s.At
		}
	}
	return time.Time{}
}

// Last returns when the last frame about addr before before was seen, or
// the zero time.
func (w *Watch) Last(addr string, before time.Time) time.Time {
	a := netip.MustParseAddr(addr)
	w.mu.Lock()
	defer w.mu.Unlock()
	var last time.Time
	for _, s := range w.seen {
		if s.Addr == a && s.At.Before(before) {
			last = s.At
		}
	}
	return last
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// Switch is a namespace holding a bridge that peers plug into, as
// directors on one segment.
type Switch struct {
	ns *NS
	br netlink.Link
	n  int
}

// NewSwitch makes a namespace with a bridge, up.
func NewSwitch(t TB, name string) *Switch {
	t.Helper()
	ns := New(t, name)
	// Its ports need no IPv6 duplicate address detection, which would
	// hold each Plug a second or two in a busy guest.
	var err error
	ns.Do(t, func() { err = os.WriteFile("/proc/sys/net/ipv6/conf/default/accept_dad", []byte("0"), 0o644) })
	if err != nil {
		t.Fatal(err)
	}
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "br0"}}
	if err := ns.NL.LinkAdd(br); err != nil {
		t.Fatal(err)
	}
	if err := ns.NL.LinkSetUp(br); err != nil {
		t.Fatal(err)
	}
	return &Switch{ns: ns, br: br}
}

// Plug joins peer to the switch with an interface named ifn holding addr,
// and returns the name of the switch's port (see Isolate).
func (s *Switch) Plug(t TB, peer *NS, ifn, addr string) string {
	t.Helper()
	s.n++
	port := fmt.Sprintf("port%d", s.n)
	Link(t, peer, s.ns, ifn, port, addr, "")
	l, err := s.ns.NL.LinkByName(port)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ns.NL.LinkSetMaster(l, s.br); err != nil {
		t.Fatal(err)
	}
	return port
}

// Isolate turns the bridge's port isolation on or off: isolated ports
// reach every port but each other, so isolating two peers' ports
// partitions them from each other and from nothing else.
func (s *Switch) Isolate(t TB, port string, on bool) {
	t.Helper()
	l, err := s.ns.NL.LinkByName(port)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ns.NL.LinkSetIsolated(l, on); err != nil {
		t.Fatalf("isolate %s: %v", port, err)
	}
}

// Cut takes the switch's port down, as a cable pulled out of the
// switch: the peer's interface loses its carrier, the others keep theirs.
func (s *Switch) Cut(t TB, port string) {
	t.Helper()
	l, err := s.ns.NL.LinkByName(port)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ns.NL.LinkSetDown(l); err != nil {
		t.Fatalf("cut %s: %v", port, err)
	}
}

// Times returns when the frames about addr since since were seen.
func (w *Watch) Times(addr string, since time.Time) []time.Time {
	a := netip.MustParseAddr(addr)
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []time.Time
	for _, s := range w.seen {
		if s.Addr == a && !s.At.Before(since) {
			out = append(out, s.At)
		}
	}
	return out
}

// GapP99 is the 99th percentile of the gaps between the frames about addr
// seen since since, less the interval they should keep; it fails t when
// fewer than 10 were seen.
func (w *Watch) GapP99(t TB, addr string, since time.Time, interval time.Duration) time.Duration {
	t.Helper()
	times := w.Times(addr, since)
	if len(times) < 10 {
		t.Fatalf("only %d frames about %s seen", len(times), addr)
	}
	gaps := make([]time.Duration, 0, len(times)-1)
	for i := 1; i < len(times); i++ {
		gaps = append(gaps, times[i].Sub(times[i-1]))
	}
	slices.Sort(gaps)
	return gaps[len(gaps)*99/100] - interval
}

// Instance is a one-instance VRRP configuration (VI_1, VRID 51) for tests;
// extra lines go inside the instance block.
func Instance(iface string, prio int, version int, interval string, vip string, extra string) string {
	return fmt.Sprintf(`vrrp_instance VI_1 {
    interface %s
    virtual_router_id 51
    priority %d
    version %d
    advert_int %s
    %s
    virtual_ipaddress {
        %s
    }
}
`, iface, prio, version, interval, extra, vip)
}

// SetPort plugs the cable of a port back in (up) or pulls it out: the
// peer's carrier goes with it, as a cut cable's does, and its own
// configuration stays.
func (s *Switch) SetPort(t TB, port string, up bool) {
	t.Helper()
	l, err := s.ns.NL.LinkByName(port)
	if err == nil {
		if up {
			err = s.ns.NL.LinkSetUp(l)
		} else {
			err = s.ns.NL.LinkSetDown(l)
		}
	}
	if err != nil {
		t.Fatalf("port %s up=%v: %v", port, up, err)
	}
}
