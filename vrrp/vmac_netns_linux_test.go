package vrrp

import (
	"bytes"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/directord/directord/internal/nstest"
)

// Namespace tests of use_vmac, beside keepalived 2.2.7 (the host kernel has
// macvlan).

// vmacFrames records, on one interface of a namespace, the source MAC of the
// vmacFrames of interest: VRRP adverts (IPv4 protocol 112 or IPv6 next header
// 112) and gratuitous ARPs, by the address they are about (the advert's
// source, the ARP's sender).
type vmacFrames struct {
	mu   sync.Mutex
	seen []vmacFrame
}

type vmacFrame struct {
	kind string // "vrrp" or "garp"
	addr netip.Addr
	mac  string
}

func watchFrames(t *testing.T, ns *nstest.NS, ifn string) *vmacFrames {
	t.Helper()
	f := &vmacFrames{}
	var fd int
	var err error
	ns.Do(t, func() {
		fd, err = syscall.Socket(syscall.AF_PACKET, syscall.SOCK_DGRAM, int(htons(syscall.ETH_P_ALL)))
		if err != nil {
			return
		}
		var ifi *net.Interface
		if ifi, err = net.InterfaceByName(ifn); err != nil {
			return
		}
		err = syscall.Bind(fd, &syscall.SockaddrLinklayer{Protocol: htons(syscall.ETH_P_ALL), Ifindex: ifi.Index})
	})
	if err != nil {
		t.Fatal(err)
	}
	tv := syscall.Timeval{Usec: 100000}
	syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv)
	done, stop := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 1500)
		for {
			select {
			case <-stop:
				return
			default:
			}
			n, from, err := syscall.Recvfrom(fd, buf, 0)
			ll, ok := from.(*syscall.SockaddrLinklayer)
			if err != nil || !ok || ll.Pkttype == syscall.PACKET_OUTGOING {
				continue
			}
			p := buf[:n]
			mac := net.HardwareAddr(ll.Addr[:6]).String()
			var fr vmacFrame
			switch htons(ll.Protocol) {
			case syscall.ETH_P_IP:
				if ihl := int(p[0]&0xf) * 4; len(p) >= 20 && p[9] == syscall.IPPROTO_IGMP && ihl <= len(p) {
					f.mu.Lock()
					for _, g := range igmpGroups(p[ihl:]) {
						f.seen = append(f.seen, vmacFrame{"igmp", g, mac})
					}
					f.mu.Unlock()
					continue
				}
				if len(p) < 20 || p[9] != 112 {
					continue
				}
				fr = vmacFrame{"vrrp", netip.AddrFrom4([4]byte(p[12:16])), mac}
			case syscall.ETH_P_IPV6:
				if len(p) < 40 || p[6] != 112 && p[6] != 58 && p[6] != 0 {
					continue
				}
				fr = vmacFrame{"vrrp", netip.AddrFrom16([16]byte(p[8:24])), mac}
				if p[6] == 0 { // a hop-by-hop header: an MLD report's
					if len(p) < 49 || p[40] != 58 || p[48] != 143 {
						continue
					}
					fr.kind = "mld"
				}
				if p[6] == 58 && len(p) > 40 && p[40] == 133 {
					fr.kind = "rs" // a router solicitation
				}
			case syscall.ETH_P_ARP:
				if len(p) < 28 || !bytes.Equal(p[14:18], p[24:28]) {
					continue
				}
				fr = vmacFrame{"garp", netip.AddrFrom4([4]byte(p[14:18])), net.HardwareAddr(p[8:14]).String()}
			default:
				continue
			}
			f.mu.Lock()
			f.seen = append(f.seen, fr)
			f.mu.Unlock()
		}
	}()
	t.Cleanup(func() { close(stop); <-done; syscall.Close(fd) })
	return f
}

// igmpGroups returns the groups an IGMP membership report is about
// (RFC 3376 section 4.2, or the group of a version 2 report); none for
// other IGMP messages.
func igmpGroups(m []byte) []netip.Addr {
	if len(m) >= 8 && m[0] == 0x16 { // IGMPv2 report
		return []netip.Addr{netip.AddrFrom4([4]byte(m[4:8]))}
	}
	if len(m) < 8 || m[0] != 0x22 { // IGMPv3 report
		return nil
	}
	var gs []netip.Addr
	recs, r := int(m[6])<<8|int(m[7]), m[8:]
	for range recs {
		if len(r) < 8 {
			break
		}
		aux, nsrc := int(r[1])*4, int(r[2])<<8|int(r[3])
		gs = append(gs, netip.AddrFrom4([4]byte(r[4:8])))
		if len(r) < 8+4*nsrc+aux {
			break
		}
		r = r[8+4*nsrc+aux:]
	}
	return gs
}

// macs lists the source MACs seen for kind and addr, each once.
func (f *vmacFrames) macs(kind, addr string) []string {
	a := netip.MustParseAddr(addr)
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, fr := range f.seen {
		if fr.kind == kind && fr.addr == a && !strings.Contains(strings.Join(out, " "), fr.mac) {
			out = append(out, fr.mac)
		}
	}
	return out
}

// count counts the frames of kind about addr; countFrom those from mac.
func (f *vmacFrames) count(kind, addr string) int { return f.countFrom(kind, addr, "") }

func (f *vmacFrames) countFrom(kind, addr, mac string) int {
	a := netip.MustParseAddr(addr)
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, fr := range f.seen {
		if fr.kind == kind && fr.addr == a && (mac == "" || fr.mac == mac) {
			n++
		}
	}
	return n
}

// macsOf counts the frames of kind from mac.
func (f *vmacFrames) macsOf(kind, mac string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, fr := range f.seen {
		if fr.kind == kind && fr.mac == mac {
			n++
		}
	}
	return n
}

// neighbour makes ns resolve addr on ifn (a datagram to it) and returns the
// MAC its neighbour table then holds (within a second). holder, which has
// addr, is told our MAC beforehand (a permanent entry on each of its
// links): else, answering the datagram with an ICMP error from addr, it
// would resolve us with a request that gives addr's sender as the MAC of
// the interface the error leaves by, which our table would take (for
// directord and keepalived alike: the kernel's choice).
func neighbour(t *testing.T, ns *nstest.NS, ifn string, holder *nstest.NS, addr string) string {
	t.Helper()
	l, err := ns.NL.LinkByName(ifn)
	if err != nil {
		t.Fatal(err)
	}
	a := netip.MustParseAddr(addr)
	fam := netlink.FAMILY_V4
	if a.Is6() {
		fam = netlink.FAMILY_V6
	}
	ours, err := ns.NL.AddrList(l, fam)
	if err != nil {
		t.Fatal(err)
	}
	links, err := holder.NL.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	for _, hl := range links {
		if hl.Attrs().Name == "lo" {
			continue
		}
		for _, o := range ours {
			if err := holder.NL.NeighSet(&netlink.Neigh{LinkIndex: hl.Attrs().Index, Family: fam, State: netlink.NUD_PERMANENT,
				IP: o.IP, HardwareAddr: l.Attrs().HardwareAddr}); err != nil {
				t.Fatalf("neighbour entry for %s on %s: %v", o.IP, hl.Attrs().Name, err)
			}
		}
	}
	send := func() {
		ns.Do(t, func() {
			if c, err := net.Dial("udp", net.JoinHostPort(addr, "9")); err == nil {
				c.Write([]byte("x"))
				c.Close()
			}
		})
	}
	mac := ""
	lookup := func() bool {
		neighs, err := ns.NL.NeighList(l.Attrs().Index, fam)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range neighs {
			if b, ok := netip.AddrFromSlice(n.IP); ok && b.Unmap() == a && n.State&(netlink.NUD_REACHABLE|netlink.NUD_STALE|netlink.NUD_DELAY|netlink.NUD_PROBE|netlink.NUD_PERMANENT) != 0 {
				mac = n.HardwareAddr.String()
				return true
			}
		}
		send()
		return false
	}
	send()
	nstest.WaitFor(t, time.Second, addr+" resolved", lookup)
	return mac
}

// macvlan returns the macvlan ifn of ns (nil if there is none).
func macvlan(t *testing.T, ns *nstest.NS, ifn string) *netlink.Macvlan {
	t.Helper()
	l, err := ns.NL.LinkByName(ifn)
	if err != nil {
		return nil
	}
	mv, ok := l.(*netlink.Macvlan)
	if !ok {
		t.Fatalf("%s is a %s, not a macvlan", ifn, l.Type())
	}
	return mv
}

func sysctl(t *testing.T, ns *nstest.NS, path string) string {
	t.Helper()
	var b []byte
	var err error
	ns.Do(t, func() { b, err = os.ReadFile(path) })
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TestVMACBesideKeepalived runs a use_vmac instance of directord beside
// keepalived 2.2.7, with use_vmac on both sides or on directord's only,
// over IPv4 and IPv6, with and without vmac_xmit_base, each side master in
// turn. directord's macvlan is vrrp.51, private, with the VRRP MAC, up,
// holds the VIP, and is gone after the stop; its adverts and gratuitous
// ARPs leave with the VMAC (adverts with the interface's own MAC under
// vmac_xmit_base); keepalived, the backup, resolves the VIP to the VMAC;
// each side takes over from the other's clean stop.
func TestVMACBesideKeepalived(t *testing.T) {
	nstest.RequireRoot(t)
	cases := []struct {
		name        string
		vip         string
		mine, peers string // the instances' extra lines
	}{
		{"IPv4 both", "192.0.2.100/24", "use_vmac", "use_vmac"},
		{"IPv4 directord only", "192.0.2.100/24", "use_vmac", ""},
		// Both sides with vmac_xmit_base: a side with it does not hear a
		// peer that sends from the VMAC, its own macvlan's MAC (the
		// kernel hands such a frame to that macvlan alone, not to the
		// interface), as two keepalived 2.2.7 do not (both master; checked
		// in namespaces).
		{"IPv4 xmit base", "192.0.2.100/24", "use_vmac\n vmac_xmit_base", "use_vmac\n vmac_xmit_base"},
		{"IPv6 both", "2001:db8::100/64", "use_vmac", "use_vmac"},
		{"IPv6 xmit base", "2001:db8::100/64", "use_vmac\n vmac_xmit_base", "use_vmac\n vmac_xmit_base"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := nstest.New(t, fmt.Sprintf("dd-vm-a%d", i))
			b := nstest.New(t, fmt.Sprintf("dd-vm-b%d", i))
			nstest.Link(t, a, b, "dda", "ddb", "192.0.2.1/24 2001:db8::1/64", "192.0.2.2/24 2001:db8::2/64")
			ipv6 := strings.Contains(c.vip, ":")
			vmacMAC := "00:00:5e:00:01:33"
			if ipv6 {
				vmacMAC = "00:00:5e:00:02:33"
			}
			vip := strings.Split(c.vip, "/")[0]
			aMAC := macvlanless(t, a, "dda")
			seen := watchFrames(t, b, "ddb")
			limit := 5 * time.Second

			nd := startNode(t, a, nstest.Instance("dda", 150, 3, "0.1", c.vip, c.mine))
			nstest.WaitFor(t, limit, "directord master with the VIP on vrrp.51", func() bool {
				return nd.state(t) == Master && a.HasAddr(t, "vrrp.51", vip)
			})
			mv := macvlan(t, a, "vrrp.51")
			switch {
			case mv == nil:
				t.Fatal("no macvlan vrrp.51")
			case mv.HardwareAddr.String() != vmacMAC || mv.Mode != netlink.MACVLAN_MODE_PRIVATE || mv.Flags&net.FlagUp == 0:
				t.Errorf("vrrp.51: MAC %s mode %v flags %v, want %s private up", mv.HardwareAddr, mv.Mode, mv.Flags, vmacMAC)
			}
			if a.HasAddr(t, "dda", vip) {
				t.Error("the VIP is on the interface, not only on the macvlan")
			}
			if !ipv6 {
				for path, want := range map[string]string{
					"/proc/sys/net/ipv4/conf/vrrp.51/arp_ignore": "1", "/proc/sys/net/ipv4/conf/vrrp.51/accept_local": "1",
					"/proc/sys/net/ipv4/conf/vrrp.51/rp_filter": "0", "/proc/sys/net/ipv4/conf/dda/arp_ignore": "1",
					"/proc/sys/net/ipv4/conf/dda/arp_filter": "1", "/proc/sys/net/ipv6/conf/vrrp.51/disable_ipv6": "1",
				} {
					if got := sysctl(t, a, path); got != want {
						t.Errorf("%s = %s, want %s", path, got, want)
					}
				}
			}

			ka := nstest.Keepalived(t, b, nstest.Instance("ddb", 100, 3, "0.1", c.vip, c.peers))
			peerIf := "ddb"
			if c.peers != "" {
				peerIf = "vrrp.51"
			}
			nstest.WaitFor(t, limit, "keepalived backup, its macvlan up", func() bool {
				return c.peers == "" || macvlan(t, b, "vrrp.51") != nil
			})
			nstest.HoldFor(t, 500*time.Millisecond, "directord master, keepalived without the VIP", func() bool {
				return nd.state(t) == Master && !b.HasAddr(t, peerIf, vip)
			})
			if mac := neighbour(t, b, "ddb", a, vip); mac != vmacMAC {
				t.Errorf("keepalived's side resolves %s to %q, want the VMAC %s", vip, mac, vmacMAC)
			}
			src := "192.0.2.1"
			if ipv6 {
				src = linkLocal(t, a, "dda")
			}
			wantAdvert := vmacMAC
			if strings.Contains(c.mine, "xmit_base") {
				wantAdvert = aMAC
			}
			if got := seen.macs("vrrp", src); len(got) != 1 || got[0] != wantAdvert {
				t.Errorf("directord's adverts from %s came from MACs %v, want only %s", src, got, wantAdvert)
			}
			if !ipv6 {
				if got := seen.macs("garp", vip); len(got) != 1 || got[0] != vmacMAC {
					t.Errorf("gratuitous ARPs for %s came from %v, want only the VMAC %s", vip, got, vmacMAC)
				}
			}

			nd.stop()
			nstest.WaitFor(t, limit, "keepalived takes over", func() bool { return b.HasAddr(t, peerIf, vip) })
			if macvlan(t, a, "vrrp.51") != nil {
				t.Error("vrrp.51 is left after the stop")
			}
			if !ipv6 {
				for _, k := range []string{"arp_ignore", "arp_filter"} {
					if got := sysctl(t, a, "/proc/sys/net/ipv4/conf/dda/"+k); got != "0" {
						t.Errorf("dda's %s is %s after the stop, want 0 back", k, got)
					}
				}
			}

			// And back: directord as backup of keepalived, then master
			// when keepalived stops.
			nd = startNode(t, a, nstest.Instance("dda", 50, 3, "0.1", c.vip, c.mine))
			nstest.WaitFor(t, limit, "directord backup of keepalived", func() bool {
				st := nd.status(t)
				return st.State == Backup && st.MasterAddr.IsValid()
			})
			if a.HasAddr(t, "vrrp.51", vip) {
				t.Error("the backup holds the VIP")
			}
			if c.peers != "" {
				if mac := neighbour(t, a, "dda", b, vip); mac != vmacMAC {
					t.Errorf("directord's side resolves %s to %q, want keepalived's VMAC %s", vip, mac, vmacMAC)
				}
			}
			ka.Stop(10 * time.Second)
			nstest.WaitFor(t, limit, "directord takes over", func() bool {
				return nd.state(t) == Master && a.HasAddr(t, "vrrp.51", vip)
			})
			if ipv6 && !strings.Contains(c.mine, "xmit_base") {
				if got := seen.macsOf("rs", vmacMAC); got > 0 {
					t.Errorf("%d router solicitations from the VMAC %s: a switch learns it where they come from", got, vmacMAC)
				}
			}
		})
	}
}

// macvlanless returns ifn's own MAC.
func macvlanless(t *testing.T, ns *nstest.NS, ifn string) string {
	t.Helper()
	l, err := ns.NL.LinkByName(ifn)
	if err != nil {
		t.Fatal(err)
	}
	return l.Attrs().HardwareAddr.String()
}

// linkLocal returns ifn's IPv6 link-local address.
func linkLocal(t *testing.T, ns *nstest.NS, ifn string) string {
	t.Helper()
	l, err := ns.NL.LinkByName(ifn)
	if err != nil {
		t.Fatal(err)
	}
	addrs, err := ns.NL.AddrList(l, netlink.FAMILY_V6)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if a.IP.IsLinkLocalUnicast() {
			return a.IP.String()
		}
	}
	t.Fatalf("%s has no link-local address", ifn)
	return ""
}

// TestVMACReload: a reload that keeps use_vmac keeps the macvlan (the same
// link, the VIP on it at every 10 ms sample, no transition), as
// keepalived's reload keeps it; one refused (a Node that cannot be made)
// leaves it alone; one that drops use_vmac removes it once the old
// instance stops, and the VIP goes on the interface.
func TestVMACReload(t *testing.T) {
	nstest.RequireRoot(t)
	a := nstest.New(t, "dd-vmr-a")
	b := nstest.New(t, "dd-vmr-b")
	nstest.Link(t, a, b, "dda", "ddb", "192.0.2.1/24", "192.0.2.2/24")
	conf := func(prio int, extra string) string {
		return nstest.Instance("dda", prio, 3, "0.1", "192.0.2.100/24", extra)
	}
	na := startNode(t, a, conf(150, "use_vmac"))
	cfg := parseConf(t, a, conf(150, "use_vmac"))
	nstest.WaitFor(t, 3*time.Second, "master with the VIP on vrrp.51", func() bool {
		return na.state(t) == Master && a.HasAddr(t, "vrrp.51", "192.0.2.100")
	})
	index := macvlan(t, a, "vrrp.51").Index
	before := na.status(t).Transitions

	// Refused: the second instance's interface does not exist. The
	// running macvlan stays.
	bad := conf(150, "use_vmac") + strings.ReplaceAll(strings.ReplaceAll(conf(100, "use_vmac"), "VI_1", "VI_2"), "dda", "nosuch0")
	badCfg := parseConf(t, a, bad)
	var err error
	a.Do(t, func() { _, err = NewNode(badCfg, a.NL, na.n.log) })
	if err == nil {
		t.Fatal("a Node for an absent interface was made")
	}
	if mv := macvlan(t, a, "vrrp.51"); mv == nil || mv.Index != index {
		t.Fatalf("the refused reload took vrrp.51 away (now %v)", mv)
	}

	// Refused too: another name for the same MAC on the same interface
	// cannot come up beside the running one (EADDRINUSE); what it made
	// goes, the running one stays.
	renamed := parseConf(t, a, conf(150, "use_vmac other"))
	a.Do(t, func() { _, err = NewNode(renamed, a.NL, na.n.log) })
	if err == nil {
		t.Fatal("a second macvlan with the VMAC came up beside the first")
	}
	if _, lerr := a.NL.LinkByName("other"); lerr == nil {
		t.Error("the refused reload left its macvlan other")
	}
	if mv := macvlan(t, a, "vrrp.51"); mv == nil || mv.Index != index || mv.Flags&net.FlagUp == 0 {
		t.Fatalf("the refused rename took vrrp.51 away or down (now %v)", mv)
	}

	count, stop := sampleVIP(t, a, "vrrp.51", netip.MustParseAddr("192.0.2.100"))
	nstest.WaitFor(t, 5*time.Second, "20 samples", func() bool { return count() >= 20 })
	na2, cfg2 := reloadNode(t, na, cfg, conf(160, "use_vmac"))
	after := count()
	nstest.WaitFor(t, 5*time.Second, "40 samples after the reload", func() bool { return count() >= after+40 })
	samples, missing := stop()
	if missing > 0 {
		t.Errorf("the VIP was missing from vrrp.51 at %d of %d samples through the reload", missing, samples)
	}
	if mv := macvlan(t, a, "vrrp.51"); mv == nil || mv.Index != index {
		t.Fatalf("vrrp.51 is not the same link after the reload (now %v)", mv)
	}
	if st := na2.status(t); st.State != Master || st.Transitions != before || st.Priority != 160 {
		t.Errorf("after the reload: %v, %d transitions (was %d), priority %d; want MASTER, none, 160", st.State, st.Transitions, before, st.Priority)
	}

	na3, _ := reloadNode(t, na2, cfg2, conf(160, ""))
	nstest.WaitFor(t, 3*time.Second, "master with the VIP on dda", func() bool {
		return na3.state(t) == Master && a.HasAddr(t, "dda", "192.0.2.100")
	})
	if macvlan(t, a, "vrrp.51") != nil {
		t.Error("vrrp.51 is left after a reload without use_vmac")
	}
	na3.stop()
	if a.HasAddr(t, "dda", "192.0.2.100") {
		t.Error("the VIP is left after the stop")
	}
}

// TestVMACFoundAtStart: a macvlan of the name already there (left by a
// killed directord or keepalived) is taken as it is when it is right,
// replaced when its MAC is wrong, and removed at the stop either way; an
// interface of the name that is not a macvlan is an error naming it, and
// is left alone.
func TestVMACFoundAtStart(t *testing.T) {
	nstest.RequireRoot(t)
	a := nstest.New(t, "dd-vmf-a")
	b := nstest.New(t, "dd-vmf-b")
	nstest.Link(t, a, b, "dda", "ddb", "192.0.2.1/24", "192.0.2.2/24")
	conf := nstest.Instance("dda", 150, 3, "0.1", "192.0.2.100/24", "use_vmac")
	dda, err := a.NL.LinkByName("dda")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, mac string
		same      bool
	}{{"right", "00:00:5e:00:01:33", true}, {"wrong MAC", "02:00:00:00:00:01", false}} {
		t.Run(c.name, func(t *testing.T) {
			hw, _ := net.ParseMAC(c.mac)
			if err := a.NL.LinkAdd(&netlink.Macvlan{LinkAttrs: netlink.LinkAttrs{Name: "vrrp.51", ParentIndex: dda.Attrs().Index, HardwareAddr: hw},
				Mode: netlink.MACVLAN_MODE_PRIVATE}); err != nil {
				t.Fatal(err)
			}
			index := macvlan(t, a, "vrrp.51").Index
			nd := startNode(t, a, conf)
			nstest.WaitFor(t, 3*time.Second, "master with the VIP on vrrp.51", func() bool {
				return nd.state(t) == Master && a.HasAddr(t, "vrrp.51", "192.0.2.100")
			})
			mv := macvlan(t, a, "vrrp.51")
			if (mv.Index == index) != c.same || mv.HardwareAddr.String() != "00:00:5e:00:01:33" {
				t.Errorf("vrrp.51: index %d (was %d), MAC %s; want the same link %v, the VMAC", mv.Index, index, mv.HardwareAddr, c.same)
			}
			nd.stop()
			if macvlan(t, a, "vrrp.51") != nil {
				t.Error("vrrp.51 is left after the stop")
			}
		})
	}
	t.Run("not a macvlan", func(t *testing.T) {
		if err := a.NL.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "vrrp.51"}, PeerName: "vrrp.51p"}); err != nil {
			t.Fatal(err)
		}
		defer a.NL.LinkDel(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "vrrp.51"}})
		cfg := parseConf(t, a, conf)
		var err error
		a.Do(t, func() { _, err = NewNode(cfg, a.NL, slog.New(slog.NewTextHandler(testWriter{t, a.Name}, nil))) })
		if err == nil || !strings.Contains(err.Error(), "vrrp.51 exists and is not a macvlan") {
			t.Fatalf("NewNode: %v; want an error naming vrrp.51", err)
		}
		if l, err := a.NL.LinkByName("vrrp.51"); err != nil || l.Type() != "veth" {
			t.Errorf("the veth vrrp.51 was touched: %v %v", l, err)
		}
	})
}

// TestVMACTracked: the macvlan is tracked as the instance's interface is
// (keepalived adds the instance to it): set down under directord, the
// master goes to FAULT and its VIP goes; set up again, it is master
// again. With dont_track_primary it is not tracked.
func TestVMACTracked(t *testing.T) {
	nstest.RequireRoot(t)
	a := nstest.New(t, "dd-vmt-a")
	b := nstest.New(t, "dd-vmt-b")
	nstest.Link(t, a, b, "dda", "ddb", "192.0.2.1/24", "192.0.2.2/24")
	for _, dont := range []bool{false, true} {
		extra := "use_vmac"
		if dont {
			extra += "\n dont_track_primary"
		}
		nd := startNode(t, a, nstest.Instance("dda", 150, 3, "0.1", "192.0.2.100/24", extra))
		nstest.WaitFor(t, 3*time.Second, "master with the VIP on vrrp.51", func() bool {
			return nd.state(t) == Master && a.HasAddr(t, "vrrp.51", "192.0.2.100")
		})
		mv := macvlan(t, a, "vrrp.51")
		if err := a.NL.LinkSetDown(mv); err != nil {
			t.Fatal(err)
		}
		if dont {
			nstest.HoldFor(t, 500*time.Millisecond, "master with dont_track_primary", func() bool { return nd.state(t) == Master })
		} else {
			nstest.WaitFor(t, 3*time.Second, "FAULT with vrrp.51 down", func() bool { return nd.state(t) == Fault })
		}
		if err := a.NL.LinkSetUp(mv); err != nil {
			t.Fatal(err)
		}
		nstest.WaitFor(t, 5*time.Second, "master again with the VIP", func() bool {
			return nd.state(t) == Master && a.HasAddr(t, "vrrp.51", "192.0.2.100")
		})
		nd.stop()
	}
}

// TestGarpExtraIf: with garp_extra_if 1 all, a master announces the first
// address it holds on each other interface once a second, from its
// adverts, as keepalived's vrrp_send_vmac_update does, and nothing more
// on its own interface; without it, nothing after the bursts.
func TestGarpExtraIf(t *testing.T) {
	nstest.RequireRoot(t)
	for i, extra := range []string{"garp_extra_if 1 all", ""} {
		a := nstest.New(t, fmt.Sprintf("dd-gx-a%d", i))
		b := nstest.New(t, fmt.Sprintf("dd-gx-b%d", i))
		c := nstest.New(t, fmt.Sprintf("dd-gx-c%d", i))
		nstest.Link(t, a, b, "dda", "ddb", "192.0.2.1/24", "192.0.2.2/24")
		nstest.Link(t, a, c, "ddc", "ddd", "198.51.100.2/24", "198.51.100.3/24")
		own, other := nstest.WatchARP(t, b, "ddb"), nstest.WatchARP(t, c, "ddd")
		conf := nstest.Instance("dda", 150, 3, "0.1", "192.0.2.100/24",
			extra+"\n garp_master_delay 60\n virtual_ipaddress_excluded {\n  198.51.100.1/24 dev ddc\n  198.51.100.4/24 dev ddc\n }")
		nd := startNode(t, a, conf)
		nstest.WaitFor(t, 3*time.Second, "master", func() bool { return nd.state(t) == Master })
		nstest.WaitFor(t, 3*time.Second, "the first burst seen on both links", func() bool {
			return own.Count("192.0.2.100", time.Time{}) > 0 && other.Count("198.51.100.4", time.Time{}) > 0
		})
		from := time.Now().Add(500 * time.Millisecond) // the burst's 5 GARPs are spaced by nothing
		nstest.WaitFor(t, 5*time.Second, "3.5 s of mastership", func() bool { return time.Since(from) > 3*time.Second })
		to := time.Now()
		n1 := other.Count("198.51.100.1", from) - other.Count("198.51.100.1", to)
		n4 := other.Count("198.51.100.4", from)
		nOwn := own.Count("192.0.2.100", from)
		switch {
		case extra != "" && (n1 < 2 || n1 > 4 || n4 != 0 || nOwn != 0):
			t.Errorf("%s: %d GARPs for the first address on ddc in 3 s, %d for the second, %d on dda; want about 3, 0, 0", extra, n1, n4, nOwn)
		case extra == "" && (n1 != 0 || nOwn != 0):
			t.Errorf("without garp_extra_if: %d GARPs on ddc and %d on dda after the first burst; want none", n1, nOwn)
		}
		nd.stop()
	}
}

// TestVMACRPFilter: with net.ipv4.conf.all.rp_filter 1, an IPv4 macvlan
// gets keepalived's clear_rp_filter: default and the interfaces raised to
// 1, all set to 0, the macvlan at 0; a reload that keeps the macvlan
// keeps that; the stop puts every value back.
func TestVMACRPFilter(t *testing.T) {
	nstest.RequireRoot(t)
	a := nstest.New(t, "dd-vmrp-a")
	b := nstest.New(t, "dd-vmrp-b")
	nstest.Link(t, a, b, "dda", "ddb", "192.0.2.1/24", "192.0.2.2/24")
	const dir = "/proc/sys/net/ipv4/conf/"
	set := func(name, v string) {
		a.Do(t, func() {
			if err := os.WriteFile(dir+name+"/rp_filter", []byte(v), 0); err != nil {
				t.Fatal(err)
			}
		})
	}
	set("dda", "0")
	set("default", "0")
	set("all", "1")
	check := func(when string, want map[string]string) {
		t.Helper()
		for name, v := range want {
			if got := sysctl(t, a, dir+name+"/rp_filter"); got != v {
				t.Errorf("%s: %s rp_filter %s, want %s", when, name, got, v)
			}
		}
	}
	conf := nstest.Instance("dda", 150, 3, "0.1", "192.0.2.100/24", "use_vmac")
	nd := startNode(t, a, conf)
	nstest.WaitFor(t, 3*time.Second, "master with the VIP on vrrp.51", func() bool {
		return nd.state(t) == Master && a.HasAddr(t, "vrrp.51", "192.0.2.100")
	})
	running := map[string]string{"all": "0", "default": "1", "dda": "1", "lo": "1", "vrrp.51": "0"}
	check("running", running)
	nd2, _ := reloadNode(t, nd, parseConf(t, a, conf), nstest.Instance("dda", 160, 3, "0.1", "192.0.2.100/24", "use_vmac"))
	nstest.WaitFor(t, 3*time.Second, "master after the reload", func() bool { return nd2.state(t) == Master })
	check("after a reload", running)
	nd2.stop()
	check("after the stop", map[string]string{"all": "1", "default": "0", "dda": "0", "lo": "0"})
}

// TestVMACOnKeepalivedOnly: use_vmac on keepalived's side only. directord,
// its backup on the plain interface, hears its adverts (sent from the
// VMAC), resolves the VIP to the VMAC, and takes over at keepalived's
// stop with the VIP on its own interface.
func TestVMACOnKeepalivedOnly(t *testing.T) {
	nstest.RequireRoot(t)
	a := nstest.New(t, "dd-vmk-a")
	b := nstest.New(t, "dd-vmk-b")
	nstest.Link(t, a, b, "dda", "ddb", "192.0.2.1/24", "192.0.2.2/24")
	ka := nstest.Keepalived(t, b, nstest.Instance("ddb", 150, 3, "0.1", "192.0.2.100/24", "use_vmac"))
	nstest.WaitFor(t, 5*time.Second, "keepalived master on its macvlan", func() bool {
		return macvlan(t, b, "vrrp.51") != nil && b.HasAddr(t, "vrrp.51", "192.0.2.100")
	})
	nd := startNode(t, a, nstest.Instance("dda", 100, 3, "0.1", "192.0.2.100/24", ""))
	nstest.WaitFor(t, 5*time.Second, "directord backup of keepalived", func() bool {
		st := nd.status(t)
		return st.State == Backup && st.MasterAddr.IsValid()
	})
	nstest.HoldFor(t, 500*time.Millisecond, "directord backup", func() bool { return nd.state(t) == Backup })
	if mac := neighbour(t, a, "dda", b, "192.0.2.100"); mac != "00:00:5e:00:01:33" {
		t.Errorf("directord's side resolves the VIP to %q, want keepalived's VMAC", mac)
	}
	if macvlan(t, a, "vrrp.51") != nil {
		t.Error("directord made a macvlan without use_vmac")
	}
	ka.Stop(10 * time.Second)
	nstest.WaitFor(t, 5*time.Second, "directord takes over", func() bool {
		return nd.state(t) == Master && a.HasAddr(t, "dda", "192.0.2.100")
	})
}
