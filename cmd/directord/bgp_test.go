package main

import (
	"log/slog"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/directord/directord/bgp"
	"github.com/directord/directord/config"
	"github.com/directord/directord/director"
	"github.com/directord/directord/vrrp"
)

const bgpDaemonConf = `global_defs {
    bgp {
        local_as 65010
        neighbor 10.0.0.1 {
            remote_as 65000
        }
    }
}
vrrp_instance VI_1 {
    interface eth0
    virtual_router_id 7
    virtual_ipaddress {
        192.0.2.1
    }
}
virtual_server 192.0.2.1 443 {
    protocol TCP
    announce bgp
    real_server 10.0.1.1 443 {
    }
}
virtual_server 192.0.2.2 443 {
    protocol TCP
    announce bgp dev dummy0
    real_server 10.0.1.1 443 {
    }
}
virtual_server 192.0.2.3 443 {
    protocol TCP
    real_server 10.0.1.1 443 {
    }
}
`

// TestBGPInputs: the daemon's parts become the decider's inputs: the data
// plane's word per virtual server (by identity, so that it survives a
// reload), VRRP's state per instance as mastership per VIP, the drain
// flag; virtual servers without announce are not inputs.
func TestBGPInputs(t *testing.T) {
	cfg, diags := config.Parse("/k.conf", bgpDaemonConf, nil, config.Options{Hostname: "h"})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	b := &bgpRun{cfg: cfg, serving: map[string]director.Serving{}, vrrp: map[string]vrrp.State{}}
	vip1, vip2 := netip.MustParsePrefix("192.0.2.1/32"), netip.MustParsePrefix("192.0.2.2/32")
	want := bgp.Inputs{VRRPMaster: map[netip.Addr]bool{vip1.Addr(): false}, Services: []bgp.Service{
		{Name: "TCP 192.0.2.1:443", Prefix: vip1, Dev: "lo"},
		{Name: "TCP 192.0.2.2:443", Prefix: vip2, Dev: "dummy0"},
	}}
	opts := cmpopts.EquateComparable(netip.Prefix{}, netip.Addr{})
	if d := cmp.Diff(want, b.inputs(), opts); d != "" {
		t.Errorf("before anything is known (-want +got):\n%s", d)
	}
	// A reload's new configuration: the same virtual servers, new pointers.
	again, _ := config.Parse("/k.conf", bgpDaemonConf, nil, config.Options{Hostname: "h"})
	for _, vs := range again.VirtualServers {
		b.serving[vs.Identity()] = director.Serving{VS: vs, Programmed: true, Quorum: vs.Addr.Addr() != vip2.Addr()}
	}
	b.vrrp["VI_1"] = vrrp.Master
	b.drained = true
	want.VRRPMaster[vip1.Addr()] = true
	want.Services[0].Programmed, want.Services[0].Quorum = true, true
	want.Services[1].Programmed = true
	want.Drained = true
	if d := cmp.Diff(want, b.inputs(), opts); d != "" {
		t.Errorf("after the data plane and VRRP spoke (-want +got):\n%s", d)
	}
}

// TestBGPInputsFWMarkAndGroup: a fwmark virtual server gives a service
// per address its announce names, a group one per address of its
// entries, each with the virtual server's state.
func TestBGPInputsFWMarkAndGroup(t *testing.T) {
	cfg, diags := config.Parse("/k.conf", `global_defs {
    bgp {
        local_as 65010
        neighbor 10.0.0.1 {
            remote_as 65000
        }
    }
}
virtual_server fwmark 7 {
    announce bgp address 192.0.2.10 192.0.2.11
    real_server 10.0.1.1 443 {
    }
}
virtual_server_group web {
    192.0.2.20-21 443
}
virtual_server group web {
    protocol TCP
    announce bgp
    real_server 10.0.1.1 443 {
    }
}
`, nil, config.Options{Hostname: "h"})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	b := &bgpRun{cfg: cfg, serving: map[string]director.Serving{}, vrrp: map[string]vrrp.State{}}
	b.serving[cfg.VirtualServers[1].Identity()] = director.Serving{VS: cfg.VirtualServers[1], Programmed: true, Quorum: true}
	p := netip.MustParsePrefix
	want := bgp.Inputs{VRRPMaster: map[netip.Addr]bool{}, Services: []bgp.Service{
		{Name: "fwmark 7 (inet)", Prefix: p("192.0.2.10/32"), Dev: "lo"},
		{Name: "fwmark 7 (inet)", Prefix: p("192.0.2.11/32"), Dev: "lo"},
		{Name: "group web (TCP)", Prefix: p("192.0.2.20/32"), Dev: "lo", Programmed: true, Quorum: true},
		{Name: "group web (TCP)", Prefix: p("192.0.2.21/32"), Dev: "lo", Programmed: true, Quorum: true},
	}}
	if d := cmp.Diff(want, b.inputs(), cmpopts.EquateComparable(netip.Prefix{}, netip.Addr{})); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

func TestSessionLogger(t *testing.T) {
	var b strings.Builder
	f := sessionLogger(slog.New(slog.NewTextHandler(&b, nil)))
	n := netip.MustParseAddr("10.0.0.1")
	for _, st := range []bgp.SessionState{bgp.Active, bgp.OpenConfirm, bgp.Established} {
		f(bgp.SessionEvent{Neighbor: n, State: st})
	}
	f(bgp.SessionEvent{Neighbor: n, State: bgp.Idle, Reason: "hold timer expired"})
	f(bgp.SessionEvent{Neighbor: n, State: bgp.Active})
	out := b.String()
	if strings.Count(out, "\n") != 2 || !strings.Contains(out, `level=INFO msg="bgp session established" neighbor=10.0.0.1`) ||
		!strings.Contains(out, `level=WARN msg="bgp session down" neighbor=10.0.0.1 state=idle reason="hold timer expired"`) {
		t.Errorf("logged:\n%s", out)
	}
}
