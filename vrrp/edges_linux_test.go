package vrrp

import (
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

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
