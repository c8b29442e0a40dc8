package vrrp

import (
	"net"
	"testing"
	"time"

	"github.com/directord/directord/config"
	"github.com/directord/directord/internal/nstest"
)

// TestVMACNoIGMP: an IPv4 use_vmac instance's macvlan reports VRRP's
// group (224.0.0.18, IGMP) as its socket joins it there. With
// keepalived's nftables table (which the daemon keeps unasked for it, as
// keepalived 2.2.7 does), no report leaves with the VMAC, so a switch
// cannot learn it from a backup: each leaves from the interface, with its
// MAC, as keepalived's nft_add_vmac sends them. Without the table they
// all leave with the VMAC (what the table is for; dda itself has not
// joined the group). With disable_local_igmp no
// report of the link-local group leaves at all and the macvlan gets no
// element in table ip, as keepalived skips nft_add_vmac for an IPv4
// instance then: a report of another group joined on the macvlan later
// (239.1.2.3, the test's own) still leaves, from the VMAC, and it is seen
// after any report of 224.0.0.18 would have been.
func TestVMACNoIGMP(t *testing.T) {
	nstest.RequireRoot(t)
	const vmacMAC = "00:00:5e:00:01:33"
	vrrpGroup, testGroup := "224.0.0.18", "239.1.2.3"
	for i, mode := range []string{"table", "no table", "disable_local_igmp"} {
		t.Run(mode, func(t *testing.T) {
			a := nstest.New(t, "dd-igv-a"+itoa(i))
			b := nstest.New(t, "dd-igv-b"+itoa(i))
			nstest.Link(t, a, b, "dda", "ddb", "192.0.2.1/24", "192.0.2.2/24")
			aMAC := macvlanless(t, a, "dda")
			seen := watchFrames(t, b, "ddb")
			conf := nstest.Instance("dda", 200, 3, "0.5", "192.0.2.100/24", "use_vmac")
			wantTable := "keepalived"
			if mode == "disable_local_igmp" {
				conf = "global_defs {\n disable_local_igmp\n}\n" + conf
				wantTable = ""
			}
			cfg, diags := config.Parse("/test.conf", conf, nil, config.Options{Hostname: a.Name})
			if diags.HasErrors() {
				t.Fatalf("config: %s", diags.Errors())
			}
			if got := cfg.NFTableName(); got != wantTable {
				t.Fatalf("table %q, want %q", got, wantTable)
			}
			// Under disable_local_igmp the table is opened still, as
			// another instance's (no accept mode) would have it.
			table := "keepalived"
			if mode == "no table" {
				table = ""
			}
			nd := startFirewalled(t, a, cfg, table)
			nstest.WaitFor(t, 15*time.Second, "master with the VIP on vrrp.51", func() bool {
				return nd.state(t) == Master && a.HasAddr(t, "vrrp.51", "192.0.2.100")
			})
			if mode == "disable_local_igmp" {
				var c *net.UDPConn
				var err error
				a.Do(t, func() {
					var ifi *net.Interface
					if ifi, err = net.InterfaceByName("vrrp.51"); err == nil {
						c, err = net.ListenMulticastUDP("udp4", ifi, &net.UDPAddr{IP: net.ParseIP(testGroup)})
					}
				})
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				nstest.WaitFor(t, 10*time.Second, "a report of "+testGroup, func() bool {
					return len(seen.macs("igmp", testGroup)) > 0
				})
				if got := seen.macs("igmp", vrrpGroup); len(got) > 0 {
					t.Errorf("reports of %s from %v under disable_local_igmp: want none", vrrpGroup, got)
				}
				if got := seen.macs("igmp", testGroup); len(got) != 1 || got[0] != vmacMAC {
					t.Errorf("the report of %s came from %v, want the VMAC %s only: the macvlan is in table ip", testGroup, got, vmacMAC)
				}
				nd.stop()
				return
			}
			// The report of the join, and its retransmission.
			nstest.WaitFor(t, 10*time.Second, "2 IGMP reports of "+vrrpGroup, func() bool {
				return seen.count("igmp", vrrpGroup) >= 2
			})
			fromVMAC, fromIf := seen.countFrom("igmp", vrrpGroup, vmacMAC), seen.countFrom("igmp", vrrpGroup, aMAC)
			switch {
			case mode == "table" && (fromVMAC > 0 || fromIf == 0):
				t.Errorf("%d IGMP reports from the VMAC %s and %d from dda's MAC: want none from the VMAC, some from dda", fromVMAC, vmacMAC, fromIf)
			case mode == "no table" && (fromVMAC == 0 || fromIf > 0):
				// dda has not joined the group itself: those from its MAC
				// with the table are the macvlan's, sent through it.
				t.Errorf("without the table %d IGMP reports from the VMAC and %d from dda's MAC: want all from the VMAC", fromVMAC, fromIf)
			}
			nd.stop()
		})
	}
}
