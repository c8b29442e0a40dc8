package vrrp

import (
	"fmt"
	"net/netip"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/directord/directord/internal/nstest"
)

// Namespace tests of auth_type AH: beside keepalived, replays and wrong
// keys. They need root.

const ahAuth = "authentication {\n auth_type AH\n auth_pass s3cret\n }"

// keepalivedAuthComplaints are the lines keepalived 2.2.7 logs for an
// advert whose authentication it refuses.
var keepalivedAuthComplaints = regexp.MustCompile(`(?i)IPSEC|invalid passwd|auth type|No AH header|Received AH header`)

// TestAHKeepalivedInterop: directord and keepalived with auth_type AH,
// multicast and unicast, each side master in turn: the backup takes the
// master's adverts (it stays backup, no VIP), keepalived logs no
// authentication failure, and directord counts no drop.
func TestAHKeepalivedInterop(t *testing.T) {
	nstest.RequireRoot(t)
	// Unicast: each lists the other only (keepalived sends to its own
	// address too when listed, and logs its own advert as a replay).
	cases := []struct{ name, dExtra, kExtra string }{
		{"multicast", ahAuth, ahAuth},
		{"unicast", ahAuth + "\nunicast_peer {\n 192.0.2.2\n }", ahAuth + "\nunicast_peer {\n 192.0.2.1\n }"},
	}
	for i, c := range cases {
		for _, directordHigher := range []bool{true, false} {
			name := fmt.Sprintf("%s directord %s", c.name, map[bool]string{true: "master", false: "backup"}[directordHigher])
			t.Run(name, func(t *testing.T) {
				a := nstest.New(t, fmt.Sprintf("dd-ah-a%d", i))
				b := nstest.New(t, fmt.Sprintf("dd-ah-b%d", i))
				nstest.Link(t, a, b, "dda", "ddb", "192.0.2.1/24", "192.0.2.2/24")
				vip, limit := "192.0.2.100", 6*time.Second
				dPrio, kPrio := 150, 100
				if !directordHigher {
					dPrio, kPrio = 100, 150
				}
				var nd *node
				var ka *nstest.Process
				if directordHigher {
					nd = startNode(t, a, nstest.Instance("dda", dPrio, 2, "1", vip+"/24", c.dExtra))
					nstest.WaitFor(t, limit, "directord master", func() bool { return nd.state(t) == Master })
					ka = nstest.Keepalived(t, b, nstest.Instance("ddb", kPrio, 2, "1", vip+"/24", c.kExtra))
					converged := func() bool {
						return nd.state(t) == Master && a.HasAddr(t, "dda", vip) && !b.HasAddr(t, "ddb", vip)
					}
					// keepalived's Master_Down_Interval is 3.6 s: holding past
					// it shows it took directord's adverts.
					nstest.WaitFor(t, limit, "directord master, keepalived without the VIP", converged)
					nstest.HoldFor(t, 4*time.Second, "directord master, keepalived backup", converged)
				} else {
					ka = nstest.Keepalived(t, b, nstest.Instance("ddb", kPrio, 2, "1", vip+"/24", c.kExtra))
					nstest.WaitFor(t, limit, "keepalived master", func() bool { return b.HasAddr(t, "ddb", vip) })
					nd = startNode(t, a, nstest.Instance("dda", dPrio, 2, "1", vip+"/24", c.dExtra))
					converged := func() bool {
						st := nd.status(t)
						return st.State == Backup && st.Received > 0 && b.HasAddr(t, "ddb", vip) && !a.HasAddr(t, "dda", vip)
					}
					nstest.WaitFor(t, limit, "keepalived master, directord backup", converged)
					nstest.HoldFor(t, 4*time.Second, "keepalived master, directord backup", converged)
				}
				st := nd.status(t)
				if len(st.Drops) != 0 {
					t.Errorf("directord dropped adverts: %v", st.Drops)
				}
				ka.Stop(10 * time.Second)
				if bad := keepalivedAuthComplaints.FindAllString(ka.Output(), -1); len(bad) > 0 {
					t.Errorf("keepalived refused directord's adverts: %q", bad)
				}
			})
		}
	}
}

// TestAHWrongKey: directord with another auth_pass than keepalived's
// master drops every advert as auth, does not take them as a master's, and
// becomes master itself; keepalived refuses directord's adverts likewise.
func TestAHWrongKey(t *testing.T) {
	nstest.RequireRoot(t)
	a, b := peers(t, "dd-ahk")
	ka := nstest.Keepalived(t, b, nstest.Instance("ddb", 150, 2, "1", "192.0.2.100/24", ahAuth))
	nstest.WaitFor(t, 6*time.Second, "keepalived master", func() bool { return b.HasAddr(t, "ddb", "192.0.2.100") })
	nd := startNode(t, a, nstest.Instance("dda", 100, 2, "1", "192.0.2.100/24",
		strings.Replace(ahAuth, "s3cret", "other", 1)))
	nstest.WaitFor(t, 6*time.Second, "directord master despite the higher priority peer", func() bool {
		st := nd.status(t)
		return st.State == Master && st.Drops["auth"] >= 3
	})
	if st := nd.status(t); st.Received != 0 {
		t.Errorf("directord took %d adverts signed with another key", st.Received)
	}
	ka.Stop(10 * time.Second)
	if !strings.Contains(ka.Output(), "IPSEC-AH : invalid IPSEC HMAC-MD5") {
		t.Error("keepalived did not refuse directord's adverts signed with another key")
	}
}

// sender sends hand-made adverts from a namespace.
type sender struct {
	t   *testing.T
	ns  *nstest.NS
	ifn string
}

// sendAH sends an AH advert built with key.
func (s sender) sendAH(a Advert, src netip.Addr, seq uint32, key AHKey) {
	s.t.Helper()
	s.sendAHPacket(s.ahPacket(a, src, seq, key), src)
}

func (s sender) ahPacket(a Advert, src netip.Addr, seq uint32, key AHKey) []byte {
	s.t.Helper()
	msg, err := a.AppendMarshal(nil, src, Group4, MessageOnly)
	if err != nil {
		s.t.Fatal(err)
	}
	return AppendAH(nil, &AHHeader{Src: src, Dst: Group4, TTL: 255, ID: uint16(seq), Seq: seq}, msg, &key, false)
}

// sendAHPacket sends a whole IPv4 packet to the VRRP group.
func (s sender) sendAHPacket(pkt []byte, src netip.Addr) {
	s.t.Helper()
	s.ns.Do(s.t, func() {
		c, err := OpenAHConn(s.ifn, netip.Addr{})
		if err != nil {
			s.t.Fatal(err)
		}
		defer c.Close()
		if err := c.Write(pkt, src, Group4); err != nil {
			s.t.Fatal(err)
		}
	})
}

// waitCount waits until the instance's counter (a drop reason, or
// "received") reaches want, and checks it does not pass it.
func waitCount(t *testing.T, nd *node, what string, want uint64) {
	t.Helper()
	get := func() uint64 {
		st := nd.status(t)
		if what == "received" {
			return st.Received
		}
		return st.Drops[what]
	}
	nstest.WaitFor(t, 2*time.Second, fmt.Sprintf("%s = %d", what, want), func() bool { return get() >= want })
	if got := get(); got != want {
		t.Fatalf("%s = %d, want %d (drops %v)", what, got, want, nd.status(t).Drops)
	}
}

// TestAHReplayAndKey: a backup takes an AH advert once: the same sequence
// number again, a lower one and a wrong key are dropped and counted as
// auth; a higher number is taken; AH carrying another protocol is ignored.
func TestAHReplayAndKey(t *testing.T) {
	nstest.RequireRoot(t)
	a, b := peers(t, "dd-ahr")
	nd := startNode(t, a, nstest.Instance("dda", 100, 2, "1", "192.0.2.100/24", ahAuth))
	nstest.WaitFor(t, 2*time.Second, "backup", func() bool { return nd.state(t) == Backup })
	s := sender{t, b, "ddb"}
	src := netip.MustParseAddr("192.0.2.2")
	adv := Advert{Version: 2, VRID: 51, Priority: 200, Interval: 1, AuthType: AuthAH, Addrs: addrs("192.0.2.100")}

	s.sendAH(adv, src, 10, ahKey)
	waitCount(t, nd, "received", 1)
	s.sendAH(adv, src, 10, ahKey) // replayed
	waitCount(t, nd, "auth", 1)
	s.sendAH(adv, src, 9, ahKey) // older
	waitCount(t, nd, "auth", 2)
	s.sendAH(adv, src, 11, NewAHKey("other")) // wrong key
	waitCount(t, nd, "auth", 3)
	s.sendAH(adv, src, 11, ahKey)
	waitCount(t, nd, "received", 2)
	// AH over another protocol (the host's IPsec) is ignored, not counted.
	other := s.ahPacket(adv, src, 12, ahKey)
	other[20] = 6
	s.sendAHPacket(other, src)
	s.sendAH(adv, src, 12, ahKey)
	waitCount(t, nd, "received", 3)
	if d := nd.status(t).Drops; len(d) != 1 || d["auth"] != 3 {
		t.Errorf("drops %v, want auth 3 only", d)
	}
	if st := nd.status(t); st.State != Backup || st.MasterAddr != src {
		t.Errorf("after the adverts: %+v", st)
	}
}

// TestAHRestartBesideKeepalived: directord restarted (its sequence counter
// back at 0) beside keepalived, which has heard higher numbers: directord
// takes keepalived's numbers while keepalived is master and goes on above
// them when it preempts, so keepalived takes its adverts again and gives
// the VIP back; no advert is refused as a replay on either side.
func TestAHRestartBesideKeepalived(t *testing.T) {
	nstest.RequireRoot(t)
	a, b := peers(t, "dd-ahs")
	vip, limit := "192.0.2.100", 8*time.Second
	conf := nstest.Instance("dda", 150, 2, "1", vip+"/24", ahAuth)
	nd := startNode(t, a, conf)
	nstest.WaitFor(t, limit, "directord master", func() bool { return nd.state(t) == Master })
	ka := nstest.Keepalived(t, b, nstest.Instance("ddb", 100, 2, "1", vip+"/24", ahAuth))
	nstest.HoldFor(t, 4*time.Second, "directord master, keepalived backup", func() bool {
		return nd.state(t) == Master && !b.HasAddr(t, "ddb", vip)
	})
	nd.stop()
	nstest.WaitFor(t, limit, "keepalived takes over", func() bool { return b.HasAddr(t, "ddb", vip) })
	nd = startNode(t, a, conf)
	converged := func() bool {
		return nd.state(t) == Master && a.HasAddr(t, "dda", vip) && !b.HasAddr(t, "ddb", vip)
	}
	nstest.WaitFor(t, limit, "restarted directord master again", converged)
	nstest.HoldFor(t, 4*time.Second, "directord master, keepalived backup", converged)
	if d := nd.status(t).Drops; len(d) != 0 {
		t.Errorf("the restarted directord dropped adverts: %v", d)
	}
	ka.Stop(10 * time.Second)
	if bad := keepalivedAuthComplaints.FindAllString(ka.Output(), -1); len(bad) > 0 {
		t.Errorf("keepalived refused directord's adverts: %q", bad)
	}
}
