package vrrp

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/directord/directord/internal/nstest"
)

// Namespace tests of what keepalived checks on receive and sets on send:
// the address list (skip_check_adv_addr). They need root.

// send sends a plain advert from src with TTL 255.
func (s sender) send(a Advert, src netip.Addr) {
	s.t.Helper()
	msg, err := a.AppendMarshal(nil, src, Group4, MessageOnly)
	if err != nil {
		s.t.Fatal(err)
	}
	s.ns.Do(s.t, func() {
		c, err := OpenConn(s.ifn, false, netip.Addr{})
		if err != nil {
			s.t.Fatal(err)
		}
		defer c.Close()
		if err := c.Write(msg, src, Group4); err != nil {
			s.t.Fatal(err)
		}
	})
}

// TestAdvertAddressesChecked: an advert whose address list differs from
// the instance's is dropped and counted as addresses, as keepalived drops
// it; with skip_check_adv_addr, a backup takes it from the master it heard
// last, and still checks a new master's.
func TestAdvertAddressesChecked(t *testing.T) {
	nstest.RequireRoot(t)
	for _, skip := range []bool{false, true} {
		t.Run(fmt.Sprintf("skip_check_adv_addr %v", skip), func(t *testing.T) {
			a := nstest.New(t, "dd-adr-a")
			b := nstest.New(t, "dd-adr-b")
			nstest.Link(t, a, b, "dda", "ddb", "192.0.2.1/24", "192.0.2.2/24 192.0.2.3/24")
			extra := ""
			if skip {
				extra = "skip_check_adv_addr"
			}
			nd := startNode(t, a, nstest.Instance("dda", 100, 2, "1", "192.0.2.100/24\n192.0.2.101/24", extra))
			nstest.WaitFor(t, 2*time.Second, "backup", func() bool { return nd.state(t) == Backup })
			s := sender{t, b, "ddb"}
			first, second := netip.MustParseAddr("192.0.2.2"), netip.MustParseAddr("192.0.2.3")
			good := Advert{Version: 2, VRID: 51, Priority: 200, Interval: 1, Addrs: addrs("192.0.2.101", "192.0.2.100")}
			other := good
			other.Addrs = addrs("192.0.2.100", "192.0.2.199")
			fewer := good
			fewer.Addrs = addrs("192.0.2.100")

			s.send(other, first) // a new master's wrong list: checked either way
			waitCount(t, nd, "addresses", 1)
			s.send(good, first) // the same addresses in another order
			waitCount(t, nd, "received", 1)
			s.send(other, first)
			s.send(fewer, first)
			if skip {
				waitCount(t, nd, "received", 3)
				s.send(other, second) // another master: checked
				waitCount(t, nd, "addresses", 2)
			} else {
				waitCount(t, nd, "addresses", 3)
				if st := nd.status(t); st.Received != 1 {
					t.Errorf("received %d adverts, want 1", st.Received)
				}
			}
		})
	}
}
