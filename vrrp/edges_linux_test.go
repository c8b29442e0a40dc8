package vrrp

import (
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/directord/directord/config"
	"github.com/directord/directord/internal/nstest"
)

// addrFlags returns the kernel's flags of addr on ifn in ns.
func addrFlags(t *testing.T, ns *nstest.NS, ifn, addr string) (int, bool) {
	t.Helper()
	l, err := ns.NL.LinkByName(ifn)
	if err != nil {
		t.Fatal(err)
	}
	for try := 0; ; try++ {
		list, err := ns.NL.AddrList(l, netlink.FAMILY_V6)
		if errors.Is(err, netlink.ErrDumpInterrupted) && try < 5 {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range list {
			if a.IP.String() == addr {
				return a.Flags, true
			}
		}
		return 0, false
	}
}

const ifaTentative = 0x40 // IFA_F_TENTATIVE

// TestIPv6VIPUsableAtTakeover: an IPv6 VIP is added without Duplicate
// Address Detection, as keepalived adds it: the moment it is on the
// interface it is not tentative and a socket can bind to it. With
// "-nodad" the kernel's DAD runs (the address starts tentative); the
// interface's dad_transmits is raised so that "starts" lasts long enough
// to be seen on a busy host.
func TestIPv6VIPUsableAtTakeover(t *testing.T) {
	nstest.RequireRoot(t)
	for _, tc := range []struct {
		name      string
		opt       string
		tentative bool
	}{
		{"default", "", false},
		{"-nodad", " -nodad", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := nstest.New(t, "dd-dad-a")
			b := nstest.New(t, "dd-dad-b")
			nstest.Link(t, a, b, "dda", "ddb", "2001:db8::1/64", "2001:db8::2/64")
			a.Do(t, func() {
				for s, v := range map[string]string{"accept_dad": "1", "dad_transmits": "100"} {
					if err := os.WriteFile("/proc/sys/net/ipv6/conf/dda/"+s, []byte(v), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			})
			na := startNode(t, a, nstest.Instance("dda", 150, 3, "0.1", "2001:db8::100/64"+tc.opt, ""))
			var flags int
			nstest.WaitFor(t, 5*time.Second, "the VIP on dda", func() bool {
				var ok bool
				flags, ok = addrFlags(t, a, "dda", "2001:db8::100")
				return ok
			})
			if na.state(t) != Master {
				t.Fatalf("the VIP is there, state %v", na.state(t))
			}
			if got := flags&ifaTentative != 0; got != tc.tentative {
				t.Errorf("tentative at once: got %v, want %v (flags %#x)", got, tc.tentative, flags)
			}
			if got := flags&syscall.IFA_F_NODAD != 0; got == tc.tentative {
				t.Errorf("IFA_F_NODAD: got %v, want %v (flags %#x)", got, !tc.tentative, flags)
			}
			var err error
			a.Do(t, func() {
				var ln net.Listener
				if ln, err = net.Listen("tcp6", "[2001:db8::100]:0"); err == nil {
					ln.Close()
				}
			})
			if tc.tentative && err == nil {
				t.Error("a tentative address could be bound: the test proves nothing")
			}
			if !tc.tentative && err != nil {
				t.Errorf("bind to the VIP right after takeover: %v", err)
			}
		})
	}
}

// frames records the frames of one EtherType received on ifn in ns.
type frames struct {
	mu  sync.Mutex
	got [][]byte
}

func captureFrames(t *testing.T, ns *nstest.NS, ifn string, proto uint16) *frames {
	t.Helper()
	var fd int
	var err error
	ns.Do(t, func() {
		if fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(proto))); err != nil {
			return
		}
		var ifi *net.Interface
		if ifi, err = net.InterfaceByName(ifn); err == nil {
			err = unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(proto), Ifindex: ifi.Index})
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	f := &frames{}
	tv := unix.Timeval{Usec: 50000}
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 2000)
		for {
			select {
			case <-stop:
				return
			default:
			}
			n, _, err := unix.Recvfrom(fd, buf, 0)
			if err == nil {
				f.mu.Lock()
				f.got = append(f.got, slices.Clone(buf[:n]))
				f.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done; unix.Close(fd) })
	return f
}

// nas returns the unsolicited NAs for target seen from index from on.
func (f *frames) nas(target netip.Addr, from int) (out [][]byte, next int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.got[min(from, len(f.got)):] {
		if len(p) >= NAFrameLen && p[20] == 58 && p[54] == 136 && netip.AddrFrom16([16]byte(p[62:78])) == target {
			out = append(out, p)
		}
	}
	return out, len(f.got)
}

// TestNARouterFlag: unsolicited NAs carry the Router flag while the
// interface forwards (net.ipv6.conf.IF.forwarding 1) and not otherwise,
// read afresh for each burst as keepalived does; the frame is the one
// keepalived sends, from the VIP itself.
func TestNARouterFlag(t *testing.T) {
	nstest.RequireRoot(t)
	a := nstest.New(t, "dd-nar-a")
	b := nstest.New(t, "dd-nar-b")
	nstest.Link(t, a, b, "dda", "ddb", "2001:db8::1/64", "2001:db8::2/64")
	setForwarding := func(v string) {
		a.Do(t, func() {
			if err := os.WriteFile("/proc/sys/net/ipv6/conf/dda/forwarding", []byte(v), 0o644); err != nil {
				t.Fatal(err)
			}
		})
	}
	setForwarding("1")
	f := captureFrames(t, b, "ddb", unix.ETH_P_IPV6)
	vip := netip.MustParseAddr("2001:db8::100")
	na := startNode(t, a, nstest.Instance("dda", 150, 3, "0.1", "2001:db8::100/64", "garp_master_refresh 1\n    garp_master_delay 0"))
	nstest.WaitFor(t, 5*time.Second, "a master", func() bool { return na.state(t) == Master })
	next := 0
	nstest.WaitFor(t, 3*time.Second, "an NA", func() bool { got, _ := f.nas(vip, 0); return len(got) > 0 })
	var hw net.HardwareAddr
	a.Do(t, func() {
		i, err := net.InterfaceByName("dda")
		if err != nil {
			t.Fatal(err)
		}
		hw = i.HardwareAddr
	})
	for _, tc := range []struct {
		fw     string
		router bool
	}{{"1", true}, {"0", false}, {"1", true}} {
		setForwarding(tc.fw)
		// The burst under way may have read the old value: wait for one
		// that began after the change.
		_, next = f.nas(vip, next)
		var p []byte
		nstest.WaitFor(t, 3*time.Second, "a burst after forwarding "+tc.fw, func() bool {
			got, _ := f.nas(vip, next)
			if len(got) > 1 {
				p = got[len(got)-1]
			}
			return p != nil
		})
		want, err := AppendNA(nil, hw, vip, tc.router)
		if err != nil {
			t.Fatal(err)
		}
		if string(p[:NAFrameLen]) != string(want) {
			t.Errorf("forwarding %s: NA\n got %x\nwant %x", tc.fw, p[:NAFrameLen], want)
		}
		if got := p[58]&0x80 != 0; got != tc.router {
			t.Errorf("forwarding %s: Router flag %v, want %v", tc.fw, got, tc.router)
		}
	}
}

// TestAnnounceOnVIPOnlyDevice: a device that carries only virtual
// addresses (no IPv4 address of its own) does not stop start-up, and its
// addresses are announced on it, IPv4 and IPv6; the announcement sockets
// queue nothing, however much the segment sends.
func TestAnnounceOnVIPOnlyDevice(t *testing.T) {
	nstest.RequireRoot(t)
	a, b := peers(t, "dd-vo")
	nstest.Link(t, a, b, "inner", "inner-peer", "", "198.51.100.2/24 2001:db8:1::2/64")
	arps := nstest.WatchARP(t, b, "inner-peer")
	nas := nstest.WatchNA(t, b, "inner-peer")
	start := time.Now()
	na := startNode(t, a, nstest.Instance("dda", 150, 3, "0.1", "192.0.2.100/24",
		"virtual_ipaddress_excluded {\n        198.51.100.50/24 dev inner\n        2001:db8:1::50/64 dev inner\n    }"))
	nstest.WaitFor(t, 5*time.Second, "a master", func() bool { return na.state(t) == Master })
	nstest.WaitFor(t, 2*time.Second, "both addresses announced on inner", func() bool {
		return arps.Count("198.51.100.50", start) > 0 && nas.Count("2001:db8:1::50", start) > 0
	})
	// The peer talks to the VIPs: ARP requests, neighbour solicitations,
	// pings. None of it may wait in an announcement socket.
	b.Do(t, func() {
		for _, dst := range []string{"198.51.100.50", "[2001:db8:1::50]"} {
			c, err := net.DialTimeout("tcp", dst+":9", time.Second)
			if err == nil {
				c.Close()
			}
		}
	})
	for _, in := range na.n.insts {
		for dev, ann := range in.anns {
			if ann.fd < 0 {
				t.Errorf("%s: no announcement socket", dev)
				continue
			}
			if n, err := unix.IoctlGetInt(ann.fd, unix.SIOCINQ); err != nil || n != 0 {
				t.Errorf("%s: %d bytes queued on the announcement socket (%v)", dev, n, err)
			}
		}
	}
}

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestRefusedBuildsLeakNothing: a configuration whose second instance
// fails half-built (an address on a device that does not exist, after
// others whose announcers opened), and one that builds but is closed
// without running (a reload refused after it), 100 times each: the
// process's file descriptors and goroutines are as before.
func TestRefusedBuildsLeakNothing(t *testing.T) {
	nstest.RequireRoot(t)
	a := nstest.New(t, "dd-leak-a")
	b := nstest.New(t, "dd-leak-b")
	nstest.Link(t, a, b, "dda", "ddb", "192.0.2.1/24 2001:db8::1/64", "192.0.2.2/24")
	nstest.Link(t, a, b, "inner", "inner-peer", "198.51.100.1/24", "")
	good := nstest.Instance("dda", 150, 3, "0.1", "192.0.2.100/24",
		"track_interface {\n        inner\n    }\n    virtual_ipaddress_excluded {\n        198.51.100.50/24 dev inner\n        2001:db8::50/64 dev inner\n    }")
	bad := good + `vrrp_instance VI_2 {
    interface dda
    virtual_router_id 52
    priority 100
    advert_int 1
    virtual_ipaddress {
        192.0.2.101/24
        198.51.100.51/24 dev inner
        198.51.100.52/24 dev dd-nosuch
    }
    virtual_ipaddress_excluded {
        2001:db8::101/64 dev inner
    }
}
`
	parse := func(conf string) *config.Config {
		cfg, diags := config.Parse("/test.conf", conf, nil, config.Options{Hostname: a.Name})
		if diags.HasErrors() {
			t.Fatalf("config: %s", diags.Errors())
		}
		return cfg
	}
	badCfg, goodCfg := parse(bad), parse(good)
	log := slog.New(slog.DiscardHandler)
	build := func(cfg *config.Config) (n *Node, err error) {
		a.Do(t, func() { n, err = NewNode(cfg, a.NL, log) })
		return n, err
	}
	// Once each first: whatever is opened once per process (the netlink
	// package's own sockets) is not a leak.
	if _, err := build(badCfg); err == nil {
		t.Fatal("a configuration with an address on a missing device built")
	}
	n, err := build(goodCfg)
	if err != nil {
		t.Fatal(err)
	}
	n.Close()
	fds, gs := openFDs(t), runtime.NumGoroutine()
	for range 100 {
		if _, err := build(badCfg); err == nil {
			t.Fatal("a configuration with an address on a missing device built")
		}
		n, err := build(goodCfg)
		if err != nil {
			t.Fatal(err)
		}
		n.Close()
	}
	if got := openFDs(t); got != fds {
		t.Errorf("%d file descriptors open after 200 refused builds, %d before", got, fds)
	}
	if got := runtime.NumGoroutine(); got > gs {
		t.Errorf("%d goroutines after 200 refused builds, %d before", got, gs)
	}
}

// TestLinkWatchLostUpdates: a link watch opened inside a namespace (no
// setns) reports that namespace's links, and when the kernel drops
// messages because nobody read them in time (ENOBUFS) it says so on lost
// and goes on reporting on the same socket.
func TestLinkWatchLostUpdates(t *testing.T) {
	nstest.RequireRoot(t)
	a := nstest.New(t, "dd-lw-a")
	b := nstest.New(t, "dd-lw-b")
	nstest.Link(t, a, b, "trk", "trk-peer", "", "")
	var w *linkWatch
	var err error
	a.Do(t, func() { w, err = openLinkWatch() })
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	l, err := a.NL.LinkByName("trk")
	if err != nil {
		t.Fatal(err)
	}
	// Nobody reads updates: the reader fills its channel, then the
	// socket's buffer fills, then the kernel drops; the reader hears of it
	// (ENOBUFS) once it reads again.
	for range 3000 {
		if err := a.NL.LinkSetDown(l); err != nil {
			t.Fatal(err)
		}
		if err := a.NL.LinkSetUp(l); err != nil {
			t.Fatal(err)
		}
	}
	drain := time.After(10 * time.Second)
	for lost := false; !lost; {
		select {
		case <-w.updates:
		case <-w.lost:
			lost = true
		case <-drain:
			t.Fatal("6000 link changes unread and no loss reported")
		}
	}
	// The same socket goes on: a change the flood never made, so that no stale message passes for it.
	if err := a.NL.LinkSetMTU(l, 1300); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(5 * time.Second)
	for {
		select {
		case u := <-w.updates:
			if u.Link.Attrs().Name == "trk" && u.Link.Attrs().MTU == 1300 {
				return
			}
		case <-w.lost:
		case <-deadline:
			t.Fatal("no update for trk's new MTU after the loss")
		}
	}
}
