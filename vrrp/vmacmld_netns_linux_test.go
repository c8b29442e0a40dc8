package vrrp

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/directord/directord/config"
	"github.com/directord/directord/internal/nft"
	"github.com/directord/directord/internal/nstest"
)

// TestVMACNoMLD: an IPv6 use_vmac instance's macvlan reports its
// multicast groups (MLD) as it comes up, joins VRRP's group and takes
// its VIP. With keepalived's nftables table (as the daemon keeps it), no
// report leaves with the VMAC, so a switch cannot learn it from a
// backup: each leaves from the interface, with its MAC, as keepalived's
// nft_add_vmac sends them. Without the table, they leave with the VMAC
// (what the table is for).
func TestVMACNoMLD(t *testing.T) {
	nstest.RequireRoot(t)
	const vmacMAC = "00:00:5e:00:02:33"
	for i, table := range []bool{true, false} {
		name := map[bool]string{true: "table", false: "no table"}[table]
		t.Run(name, func(t *testing.T) {
			a := nstest.New(t, "dd-mld-a"+itoa(i))
			b := nstest.New(t, "dd-mld-b"+itoa(i))
			nstest.Link(t, a, b, "dda", "ddb", "2001:db8::1/64", "2001:db8::2/64")
			aMAC := macvlanless(t, a, "dda")
			seen := watchFrames(t, b, "ddb")
			conf := nstest.Instance("dda", 200, 3, "0.5", "2001:db8::100/64", "use_vmac")
			cfg, diags := config.Parse("/test.conf", conf, nil, config.Options{Hostname: a.Name})
			if diags.HasErrors() {
				t.Fatalf("config: %s", diags.Errors())
			}
			if got := cfg.NFTableName(); got != "keepalived" {
				t.Fatalf("table %q, want keepalived's", got)
			}
			name := ""
			if table {
				name = cfg.NFTableName()
			}
			nd := startFirewalled(t, a, cfg, name)
			nstest.WaitFor(t, 15*time.Second, "master with the VIP on vrrp.51", func() bool {
				return nd.state(t) == Master && a.HasAddr(t, "vrrp.51", "2001:db8::100")
			})
			// The reports of the VIP's group, and their retransmission.
			nstest.WaitFor(t, 10*time.Second, "3 MLD reports", func() bool {
				return seen.macsOf("mld", vmacMAC)+seen.macsOf("mld", aMAC) >= 3
			})
			fromVMAC, fromIf := seen.macsOf("mld", vmacMAC), seen.macsOf("mld", aMAC)
			switch {
			case table && fromVMAC > 0:
				t.Errorf("%d MLD reports from the VMAC %s (and %d from dda's MAC): want none", fromVMAC, vmacMAC, fromIf)
			case !table && fromVMAC == 0:
				t.Errorf("no MLD report from the VMAC without the table (%d from dda's MAC): the capture misses them", fromIf)
			}
			nd.stop()
		})
	}
}

// startFirewalled runs cfg's Node in ns with the nftables table named
// table as its firewall (none when table is ""), both closed at the
// test's end.
func startFirewalled(t *testing.T, ns *nstest.NS, cfg *config.Config, table string) *node {
	t.Helper()
	var fw Firewall
	var tb *nft.Table
	var n *Node
	var err error
	log := slog.New(slog.NewTextHandler(testWriter{t, ns.Name}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ns.Do(t, func() {
		if table != "" {
			if tb, err = nft.Open(nft.Options{Table: table, Priority: -1}); err != nil {
				return
			}
			fw = tb
		}
		n, err = NewNodeFirewall(cfg, ns.NL, log, fw)
	})
	if err != nil {
		t.Fatal(err)
	}
	if tb != nil {
		t.Cleanup(func() { ns.Do(t, func() { tb.Close() }) })
	}
	ctx, cancel := context.WithCancel(context.Background())
	nd := &node{ns: ns, n: n, cancel: cancel, done: make(chan error, 1)}
	go func() { nd.done <- n.Run(ctx) }()
	t.Cleanup(nd.stop)
	return nd
}
