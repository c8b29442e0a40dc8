package bgp

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/directord/directord/internal/frrtest"
	"github.com/directord/directord/internal/nstest"
)

// addRouter plugs another router into the LAN's switch and runs FRR on it.
func (l *lan) addRouter(t nstest.TB, name string, addr netip.Addr, conf frrtest.Conf) *frrtest.Router {
	t.Helper()
	ns := nstest.New(t, name)
	l.sw.Plug(t, ns, "eth0", addr.String()+"/24")
	return frrtest.Start(t, ns, conf)
}

// identityConf is director 0's configuration with its own local_as and
// router_id, and neighbors given as "ADDR AS" pairs.
func identityConf(t nstest.TB, localAS uint32, rid string, neighbors ...string) string {
	t.Helper()
	var nb strings.Builder
	for _, n := range neighbors {
		addr, as, _ := strings.Cut(n, " ")
		fmt.Fprintf(&nb, "        neighbor %s {\n            remote_as %s\n            hold_time 9\n        }\n", addr, as)
	}
	return writeConf(t, fmt.Sprintf(`global_defs {
    bgp_withdraw_wait 1
    bgp {
        local_as %d
        router_id %s
%s    }
}
virtual_server 10.1.0.100 80 {
    protocol TCP
    announce bgp
    real_server 10.2.0.1 80 {
    }
}
`, localAS, rid, nb.String()))
}

// reload sends a reload and returns the lines the director printed until
// it was applied.
func (d *director) reload(file string) []string {
	d.t.Helper()
	d.send("reload " + file)
	var seen []string
	timeout := time.After(60 * time.Second)
	for {
		select {
		case l, ok := <-d.lines:
			if !ok {
				d.t.Fatal("director ended during a reload")
			}
			if l == "ok" {
				return seen
			}
			if strings.HasPrefix(l, "error") {
				d.t.Fatalf("director: %s", l)
			}
			seen = append(seen, l)
		case <-timeout:
			d.t.Fatalf("director: reload not applied within 60s; saw %q", seen)
		}
	}
}

// index is the position of the first line starting with prefix, or -1.
func index(lines []string, prefix string) int {
	for i, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return i
		}
	}
	return -1
}

// TestFRRReloadIdentity: a reload that changes local_as and router_id
// restarts the speaker: the route is withdrawn before the speaker stops,
// the address stays on lo, and the session comes back under the new
// identity with the route. (FRR takes any eBGP AS from the director.)
func TestFRRReloadIdentity(t *testing.T) {
	l := newLANWith(t, 1, func(n []netip.Addr) frrtest.Conf {
		c := frrtest.Config(65000, routerAddr, 65010, n, "")
		c.BGP = strings.Replace(c.BGP, "remote-as 65010", "remote-as external", 1)
		return c
	})
	d := startDirector(t, l.dirs[0], identityConf(t, 65010, "10.0.0.11", "10.0.0.1 65000"))
	d.waitEstablished()
	l.frr.WaitNextHops(30*time.Second, vip, directorAddr(0))
	before := l.neighbor(t, directorAddr(0))
	if before.RemoteAS != 65010 || before.RouterID != "10.0.0.11" {
		t.Fatalf("the router sees %+v", before)
	}

	seen := d.reload(identityConf(t, 65011, "10.0.0.111", "10.0.0.1 65000"))
	w, stop, start := index(seen, "action withdraw "+vip.String()+" restarting"), index(seen, "speaker stop"), index(seen, "speaker start AS 65011 router_id 10.0.0.111")
	if w < 0 || stop < 0 || start < 0 || w > stop || stop > start {
		t.Errorf("the reload did %q; want the withdraw (reason restarting), then the speaker stopped, then started as AS 65011, 10.0.0.111", seen)
	}
	if !onLo(t, l.dirs[0]) {
		t.Error("the address left lo over the restart")
	}
	nstest.WaitFor(t, 30*time.Second, "the session under the new identity", func() bool {
		n := l.neighbor(t, directorAddr(0))
		return n.State == "Established" && n.RemoteAS == 65011 && n.RouterID == "10.0.0.111"
	})
	l.frr.WaitNextHops(30*time.Second, vip, directorAddr(0))
	st := d.status()
	if a := st.Addresses; len(a) != 1 || !a[0].Announced || a[0].Reason != "serving" {
		t.Errorf("after the restart: %+v", a)
	}
	if after := l.neighbor(t, directorAddr(0)); after.Established != before.Established+1 {
		t.Errorf("sessions established: %d then %d, want one more", before.Established, after.Established)
	}
}

// TestFRRReloadNeighbors: a reload that adds a neighbor, changes a
// neighbor's AS or removes one touches that neighbor's session only: the
// other router's session and route stay as they were.
func TestFRRReloadNeighbors(t *testing.T) {
	l := newLAN(t, 1, "")
	r1addr := netip.MustParseAddr("10.0.0.2")
	r1 := l.addRouter(t, "bgr1", r1addr, frrtest.Config(65000, r1addr, 65010, []netip.Addr{directorAddr(0)}, ""))
	d := startDirector(t, l.dirs[0], identityConf(t, 65010, "10.0.0.11", "10.0.0.1 65000"))
	d.waitEstablished()
	l.frr.WaitNextHops(30*time.Second, vip, directorAddr(0))
	r0 := l.neighbor(t, directorAddr(0))
	since := d.status().Neighbors[0].Since
	unflapped := func(step string) {
		t.Helper()
		n := l.neighbor(t, directorAddr(0))
		if n.State != "Established" || n.Established != r0.Established || n.Dropped != r0.Dropped {
			t.Errorf("%s: the other router's session flapped: %+v, then %+v", step, r0, n)
		}
		for _, ns := range d.status().Neighbors {
			if ns.Addr == routerAddr && !ns.Since.Equal(since) {
				t.Errorf("%s: the session to %s up since %s, then %s", step, routerAddr, since, ns.Since)
			}
		}
		if got := l.frr.NextHops(vip); len(got) != 1 || got[0] != directorAddr(0) {
			t.Errorf("%s: the other router's route: %v", step, got)
		}
	}

	seen := d.reload(identityConf(t, 65010, "10.0.0.11", "10.0.0.1 65000", "10.0.0.2 65000"))
	if index(seen, "speaker") >= 0 || index(seen, "action withdraw") >= 0 {
		t.Errorf("adding a neighbor did %q", seen)
	}
	r1.WaitNextHops(30*time.Second, vip, directorAddr(0))
	unflapped("neighbor added")

	// The second router now speaks as AS 65001 to the director; the
	// director's reload follows.
	if out, err := r1.VTY("configure terminal\nrouter bgp 65000\nneighbor " + directorAddr(0).String() + " local-as 65001 no-prepend replace-as"); err != nil {
		t.Fatalf("vtysh: %v: %s", err, out)
	}
	d.reload(identityConf(t, 65010, "10.0.0.11", "10.0.0.1 65000", "10.0.0.2 65001"))
	nstest.WaitFor(t, 30*time.Second, "the session to AS 65001", func() bool {
		for _, ns := range d.status().Neighbors {
			if ns.Addr == r1addr {
				return ns.RemoteAS == 65001 && ns.State == Established
			}
		}
		return false
	})
	r1.WaitNextHops(30*time.Second, vip, directorAddr(0))
	unflapped("neighbor's AS changed")

	d.reload(identityConf(t, 65010, "10.0.0.11", "10.0.0.1 65000"))
	r1.WaitNextHops(10*time.Second, vip)
	unflapped("neighbor removed")
	if ns := d.status().Neighbors; len(ns) != 1 || ns[0].Addr != routerAddr {
		t.Errorf("neighbors after the removal: %+v", ns)
	}
}

// TestFRRAnnounceFWMarkAndGroup: a fwmark virtual server announces the
// addresses its announce names, a group one each address of its ranges;
// FRR installs every one through the director, each address is on lo,
// and losing quorum withdraws them all.
func TestFRRAnnounceFWMarkAndGroup(t *testing.T) {
	l := newLAN(t, 1, "")
	d := startDirector(t, l.dirs[0], writeConf(t, `global_defs {
    bgp_withdraw_wait 1
    bgp {
        local_as 65010
        router_id 10.0.0.11
        neighbor 10.0.0.1 {
            remote_as 65000
            hold_time 9
        }
    }
}
virtual_server fwmark 7 {
    announce bgp address 10.1.0.100 10.1.0.101
    real_server 10.2.0.1 80 {
    }
}
virtual_server_group web {
    10.1.0.110-112 443
    fwmark 8
}
virtual_server group web {
    protocol TCP
    announce bgp address 10.1.0.120
    real_server 10.2.0.1 443 {
    }
}
`))
	var want []netip.Prefix
	for _, a := range []string{"10.1.0.100", "10.1.0.101", "10.1.0.110", "10.1.0.111", "10.1.0.112", "10.1.0.120"} {
		want = append(want, netip.MustParsePrefix(a+"/32"))
	}
	nstest.WaitFor(t, 30*time.Second, "every address sent", func() bool {
		st := d.status()
		return len(st.Neighbors) == 1 && st.Neighbors[0].State == Established && st.Neighbors[0].Sent == uint64(len(want))
	})
	for _, p := range want {
		l.frr.WaitNextHops(30*time.Second, p, directorAddr(0))
		if !l.dirs[0].HasAddr(t, "lo", p.Addr().String()) {
			t.Errorf("%s is not on lo", p.Addr())
		}
	}
	if st := d.status().Addresses; len(st) != len(want) {
		t.Errorf("addresses %+v", st)
	}
	d.do("quorum off")
	for _, p := range want {
		l.frr.WaitNextHops(10*time.Second, p)
	}
	st := d.status().Addresses
	if len(st) == 0 || st[0].Reason != "no-quorum" || !strings.Contains(st[0].Detail, "fwmark 7") {
		t.Errorf("after quorum loss: %+v", st)
	}
}
