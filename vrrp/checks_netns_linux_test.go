package vrrp

import (
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"

	"github.com/directord/directord/internal/nstest"
)

// Namespace tests of what keepalived checks on receive and sets on send:
// the address list (skip_check_adv_addr) and unicast_ttl. They need root.

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

// TestUnicastToMulticastInstance: a multicast instance drops an advert
// sent to its own address, as keepalived does ("Expected multicast packet
// but received unicast packet"), and counts it as destination; the same
// advert to the group is taken.
func TestUnicastToMulticastInstance(t *testing.T) {
	nstest.RequireRoot(t)
	a, b := peers(t, "dd-ucm")
	nd := startNode(t, a, nstest.Instance("dda", 100, 2, "1", "192.0.2.100/24", ""))
	nstest.WaitFor(t, 2*time.Second, "backup", func() bool { return nd.state(t) == Backup })
	src, own := netip.MustParseAddr("192.0.2.2"), netip.MustParseAddr("192.0.2.1")
	adv := Advert{Version: 2, VRID: 51, Priority: 200, Interval: 1, Addrs: addrs("192.0.2.100")}
	msg, err := adv.AppendMarshal(nil, src, own, MessageOnly)
	if err != nil {
		t.Fatal(err)
	}
	b.Do(t, func() {
		c, err := OpenConn("ddb", false, netip.Addr{})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.Write(msg, src, own); err != nil {
			t.Fatal(err)
		}
	})
	waitCount(t, nd, "destination", 1)
	if st := nd.status(t); st.Received != 0 {
		t.Errorf("received %d adverts, want 0", st.Received)
	}
	sender{t, b, "ddb"}.send(adv, src)
	waitCount(t, nd, "received", 1)
}

// TestUnicastTTL: unicast adverts leave with unicast_ttl as their TTL or
// hop limit; without it, as keepalived 2.2.7 sends them (checked with
// tcpdump): TTL 255 over IPv4, the kernel's default hop limit (64) over
// IPv6.
func TestUnicastTTL(t *testing.T) {
	nstest.RequireRoot(t)
	cases := []struct {
		name, extra, proto string
		version            int
		vip                string
	}{
		{"IPv4", "unicast_peer {\n 192.0.2.2\n }", "ip4:112", 2, "192.0.2.100/24"},
		{"IPv4 AH", ahAuth + "\nunicast_peer {\n 192.0.2.2\n }", "ip4:51", 2, "192.0.2.100/24"},
		{"IPv6", "unicast_src_ip 2001:db8::1\nunicast_peer {\n 2001:db8::2\n }", "ip6:112", 3, "2001:db8::100/64"},
	}
	for i, c := range cases {
		for _, ttl := range []int{0, 42} {
			t.Run(fmt.Sprintf("%s unicast_ttl %d", c.name, ttl), func(t *testing.T) {
				a := nstest.New(t, fmt.Sprintf("dd-ttl-a%d", i))
				b := nstest.New(t, fmt.Sprintf("dd-ttl-b%d", i))
				nstest.Link(t, a, b, "dda", "ddb", "192.0.2.1/24 2001:db8::1/64", "192.0.2.2/24 2001:db8::2/64")
				extra, want := c.extra, 255
				if c.version == 3 {
					want = 64 // keepalived leaves IPv6 unicast to the kernel's default
				}
				if ttl != 0 {
					extra += fmt.Sprintf("\nunicast_ttl %d", ttl)
					want = ttl
				}
				var read func() (int, error)
				b.Do(t, func() {
					pc, err := net.ListenPacket(c.proto, "")
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { pc.Close() })
					pc.SetReadDeadline(time.Now().Add(5 * time.Second))
					buf := make([]byte, 1500)
					if c.version == 3 {
						p := ipv6.NewPacketConn(pc)
						if err := p.SetControlMessage(ipv6.FlagHopLimit, true); err != nil {
							t.Fatal(err)
						}
						read = func() (int, error) {
							_, cm, _, err := p.ReadFrom(buf)
							if err != nil || cm == nil {
								return 0, fmt.Errorf("read: %v (control message %v)", err, cm)
							}
							return cm.HopLimit, nil
						}
						return
					}
					p := ipv4.NewPacketConn(pc)
					if err := p.SetControlMessage(ipv4.FlagTTL, true); err != nil {
						t.Fatal(err)
					}
					read = func() (int, error) {
						_, cm, _, err := p.ReadFrom(buf)
						if err != nil || cm == nil {
							return 0, fmt.Errorf("read: %v (control message %v)", err, cm)
						}
						return cm.TTL, nil
					}
				})
				startNode(t, a, nstest.Instance("dda", 150, c.version, "1", c.vip, extra))
				got, err := read()
				if err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Errorf("advert TTL %d, want %d", got, want)
				}
			})
		}
	}
}

// TestUnicastSrcAbsent: a unicast instance whose unicast_src_ip is no
// address of the host stays in FAULT, as keepalived 2.2.7's does ("src
// address not configured"; checked in namespaces, with and without
// track_src_ip), instead of sending adverts no peer can answer.
func TestUnicastSrcAbsent(t *testing.T) {
	nstest.RequireRoot(t)
	a, _ := peers(t, "dd-src")
	nd := startNode(t, a, nstest.Instance("dda", 150, 2, "1", "192.0.2.100/24",
		"unicast_src_ip 192.0.2.9\nunicast_peer {\n 192.0.2.2\n }"))
	inFault := func() bool { st := nd.status(t); return st.State == Fault && st.Sent == 0 }
	nstest.WaitFor(t, 2*time.Second, "FAULT", inFault)
	nstest.HoldFor(t, 4*time.Second, "FAULT past Master_Down_Interval", inFault)
	if a.HasAddr(t, "dda", "192.0.2.100") {
		t.Error("the VIP was added")
	}
}
