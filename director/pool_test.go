package director

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/directord/directord/internal/conftest"
	"github.com/directord/directord/ipvs"
)

// parse reads a test's configuration.
var parse = conftest.Parse

func pools(t *testing.T, text string) []*Pool {
	t.Helper()
	ps, err := NewPools(parse(t, text))
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// lines writes a table as ipvsadm -Sn would, sorted.
func lines(t ipvs.Table) []string {
	var out []string
	for _, k := range t.Keys() {
		vs := t[k]
		out = append(out, "-A "+k.String()+" "+vs.Scheduler)
		for _, d := range vs.SortedDests() {
			out = append(out, "-a "+k.String()+" "+d.AddrPort().String()+" "+d.Forward.String()+" "+strconv.Itoa(int(d.Weight)))
		}
	}
	return out
}

const twoReal = `
virtual_server 192.0.2.1 443 {
    lb_algo wrr
    lb_kind DR
    protocol TCP
    %s
    real_server 10.0.0.1 443 {
        weight 3
        %s
        TCP_CHECK { }
    }
    real_server 10.0.0.2 443 {
        weight 2
        TCP_CHECK { }
    }
}
`

func conf(vsExtra, rsExtra string) string {
	return strings.Replace(strings.Replace(twoReal, "%s", vsExtra, 1), "%s", rsExtra, 1)
}

func TestPoolRealServersFollowHealth(t *testing.T) {
	tests := []struct {
		name           string
		vs, rs         string
		alive1, alive2 bool
		want           []string
	}{
		{"both alive", "", "", true, true, []string{
			"-A TCP 192.0.2.1:443 wrr", "-a TCP 192.0.2.1:443 10.0.0.1:443 route 3", "-a TCP 192.0.2.1:443 10.0.0.2:443 route 2"}},
		{"one dead is removed", "", "", false, true, []string{
			"-A TCP 192.0.2.1:443 wrr", "-a TCP 192.0.2.1:443 10.0.0.2:443 route 2"}},
		{"inhibit_on_failure keeps it at weight 0", "", "inhibit_on_failure", false, true, []string{
			"-A TCP 192.0.2.1:443 wrr", "-a TCP 192.0.2.1:443 10.0.0.1:443 route 0", "-a TCP 192.0.2.1:443 10.0.0.2:443 route 2"}},
		{"all dead, no sorry server: empty, quorum or not", "", "", false, false, []string{
			"-A TCP 192.0.2.1:443 wrr"}},
		{"quorum lost: the sorry server replaces the alive ones", "quorum 4\n sorry_server 10.0.0.99 8443", "", false, true, []string{
			"-A TCP 192.0.2.1:443 wrr", "-a TCP 192.0.2.1:443 10.0.0.99:443 route 1"}},
		{"quorum kept: no sorry server", "quorum 4\n sorry_server 10.0.0.99 443", "", true, true, []string{
			"-A TCP 192.0.2.1:443 wrr", "-a TCP 192.0.2.1:443 10.0.0.1:443 route 3", "-a TCP 192.0.2.1:443 10.0.0.2:443 route 2"}},
		{"quorum lost: inhibited alive ones stay at weight 0", "quorum 4\n sorry_server 10.0.0.99 443", "inhibit_on_failure", true, false, []string{
			"-A TCP 192.0.2.1:443 wrr", "-a TCP 192.0.2.1:443 10.0.0.1:443 route 0", "-a TCP 192.0.2.1:443 10.0.0.99:443 route 1"}},
		{"a sorry server that is a real server keeps its weight", "quorum 4\n sorry_server 10.0.0.1 443\n sorry_server_inhibit", "", true, true, []string{
			"-A TCP 192.0.2.1:443 wrr", "-a TCP 192.0.2.1:443 10.0.0.1:443 route 3", "-a TCP 192.0.2.1:443 10.0.0.2:443 route 2"}},
		{"sorry_server_inhibit keeps it at weight 0", "quorum 4\n sorry_server 10.0.0.99 443\n sorry_server_inhibit", "", true, true, []string{
			"-A TCP 192.0.2.1:443 wrr", "-a TCP 192.0.2.1:443 10.0.0.1:443 route 3", "-a TCP 192.0.2.1:443 10.0.0.2:443 route 2",
			"-a TCP 192.0.2.1:443 10.0.0.99:443 route 0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := pools(t, conf(tt.vs, tt.rs))[0]
			tab := ipvs.Table{}
			st := []RealState{{Alive: tt.alive1, Weight: 3}, {Alive: tt.alive2, Weight: 2}}
			p.Advance(st, nil)
			p.Write(st, nil, tab)
			if got := lines(tab); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestPoolQuorumHysteresis(t *testing.T) {
	// Weights 3 and 2; quorum 4, hysteresis 1: lost below 3, back at 5.
	p := pools(t, conf("quorum 4\n hysteresis 1\n sorry_server 10.0.0.99 443", ""))[0]
	steps := []struct {
		w1, w2  int // 0: dead
		up      bool
		changed bool
	}{
		{3, 0, false, true},  // 3: a pool starts without quorum, and 3 < 5
		{3, 2, true, true},   // 5: won
		{3, 0, true, false},  // 3: not below 3
		{0, 2, false, true},  // 2: lost
		{3, 0, false, false}, // 3: not yet 5
		{3, 2, true, true},   // 5: back
	}
	for i, s := range steps {
		changed := p.Advance([]RealState{{Alive: s.w1 > 0, Weight: int32(s.w1)}, {Alive: s.w2 > 0, Weight: int32(s.w2)}}, nil)
		if p.QuorumUp() != s.up || changed != s.changed {
			t.Errorf("step %d (%d+%d): up %v changed %v, want %v %v", i, s.w1, s.w2, p.QuorumUp(), changed, s.up, s.changed)
		}
	}
}

func TestPoolAlphaStartsDown(t *testing.T) {
	p := pools(t, conf("alpha", ""))[0]
	st := p.InitialStates()
	if st[0].Alive || st[1].Alive {
		t.Errorf("alpha: %+v, want both down until checked", st)
	}
	p = pools(t, conf("", ""))[0]
	if st := p.InitialStates(); !st[0].Alive || !st[1].Alive {
		t.Errorf("no alpha: %+v, want both up", st)
	}
}

func TestPoolServiceOptionsAndGroups(t *testing.T) {
	ps := pools(t, `
virtual_server_group web {
    192.0.2.10-12 80
    fwmark 7
}
virtual_server group web {
    lvs_sched sh
    sh-port
    lvs_method TUN type gue port 6080
    persistence_timeout 600
    persistence_granularity 255.255.255.0
    protocol TCP
    real_server 10.0.0.1 80 {
        weight 5
    }
}
virtual_server fwmark 9 {
    lb_algo rr
    lb_kind NAT
    ops
    protocol UDP
    real_server 10.0.0.2 53 {
    }
}
`)
	tab := ipvs.Table{}
	for _, p := range ps {
		p.Advance(p.InitialStates(), nil)
		p.Write(p.InitialStates(), nil, tab)
	}
	keys := tab.Keys()
	var names []string
	for _, k := range keys {
		names = append(names, k.String())
	}
	want := []string{"TCP 192.0.2.10:80", "TCP 192.0.2.11:80", "TCP 192.0.2.12:80", "FWM 7 IPv4", "FWM 9 IPv4"}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("services %q, want %q", names, want)
	}
	s := tab[keys[0]]
	if s.Scheduler != "sh" || s.Flags != ipvs.Persistent|ipvs.SchedFlag2 || s.Timeout.Seconds() != 600 || s.Netmask != 24 {
		t.Errorf("group service %+v", s.Service)
	}
	d := s.SortedDests()[0]
	if d.Forward != ipvs.Tunnel || d.TunnelType != 1 || d.TunnelPort != 6080 || d.Weight != 5 {
		t.Errorf("tunnel destination %+v", d)
	}
	if d := tab[keys[3]].SortedDests()[0]; d.Port != 0 {
		t.Errorf("TUN destination of a fwmark service has port %d, want 0 as keepalived gives", d.Port)
	}
	f := tab[keys[4]]
	if f.Flags != ipvs.OnePacket || f.OrderedDests()[0].Forward != ipvs.Masquerade {
		t.Errorf("fwmark service %+v", f)
	}
}
