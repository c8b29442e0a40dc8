package director

import (
	"fmt"
	"net/netip"

	"github.com/directord/directord/config"
	"github.com/directord/directord/ipvs"
)

// RealState is what the health checks say of a real server.
type RealState struct {
	Alive bool
	// Weight is the weight to give it while alive: the configured one, or
	// what a MISC_CHECK with misc_dynamic reports. An int32, as the
	// kernel's: 8 bytes a real server, not 16 (issue 20, the idle
	// daemon's memory).
	Weight int32
}

// NewRealState is the state of a real server alive or not, to be given
// weight while alive (a check's, as healthcheck reports it), bounded as
// the kernel takes a weight.
func NewRealState(alive bool, weight int) RealState {
	return RealState{Alive: alive, Weight: int32(realWeight(weight))}
}

// Pool is one virtual_server at run time: the services it makes (one, or
// one per address and fwmark of its group) and the quorum state that
// decides whether its real servers or its sorry server take the traffic.
// It is pure: the health checks' verdicts go in, IPVS services come out.
type Pool struct {
	VS       *config.VirtualServer
	Keys     []ipvs.ServiceKey
	service  ipvs.Service
	quorumUp bool
	// init is true until the first Advance after the pool was made (at
	// the start, or by a reload): keepalived's init_service_vs step.
	init bool
	// sorryIn is true when a reload kept the sorry server in the table.
	sorryIn bool
}

// NewPools makes a Pool per virtual server of cfg.
//
// The pools, and their keys, lie in one array each: what a director keeps
// for as long as the configuration runs is then not spread among the
// reload's short-lived objects of the same sizes, in spans a collection
// leaves mostly empty but resident (TestReloadSpansDense).
func NewPools(cfg *config.Config) ([]*Pool, error) {
	n := len(cfg.VirtualServers)
	pools := make([]Pool, n)
	keys := make([][]ipvs.ServiceKey, n)
	nk := 0
	for i, vs := range cfg.VirtualServers {
		s, err := serviceOf(vs)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", vs.Pos, err)
		}
		if keys[i], err = keysOf(cfg, vs); err != nil {
			return nil, fmt.Errorf("%s: %w", vs.Pos, err)
		}
		nk += len(keys[i])
		pools[i] = Pool{VS: vs, service: s, init: true}
	}
	out := make([]*Pool, n)
	all := make([]ipvs.ServiceKey, 0, nk)
	for i := range pools {
		from := len(all)
		all = append(all, keys[i]...)
		pools[i].Keys = all[from:len(all):len(all)]
		out[i] = &pools[i]
	}
	return out, nil
}

// InitialStates are the real servers' states before any check has run:
// alive unless alpha (or a checker-less real server, always alive).
func (p *Pool) InitialStates() []RealState {
	st := make([]RealState, len(p.VS.RealServers))
	p.initialStates(st)
	return st
}

func (p *Pool) initialStates(st []RealState) {
	for i, rs := range p.VS.RealServers {
		st[i] = NewRealState(!rs.Alpha || len(rs.Checkers) == 0, rs.Weight)
	}
}

// initialStates are the pools' InitialStates, in one array.
func initialStates(pools []*Pool) [][]RealState {
	n := 0
	for _, p := range pools {
		n += len(p.VS.RealServers)
	}
	all := make([]RealState, n)
	out := make([][]RealState, len(pools))
	for i, p := range pools {
		k := len(p.VS.RealServers)
		out[i] = all[:k:k]
		p.initialStates(out[i])
		all = all[k:]
	}
	return out
}

// QuorumUp tells whether the pool has its quorum.
func (p *Pool) QuorumUp() bool { return p.quorumUp }

// Advance moves the quorum state for the real servers' states (in the
// configuration's order) and the operator's drains, as keepalived does
// (quorumStep). It reports whether the quorum's notifications are due:
// call it where the states change (a verdict, a drain, a reload, the
// start), never from a query.
func (p *Pool) Advance(states []RealState, drained map[netip.AddrPort]bool) (news bool) {
	sum := Weigh(p.VS, states, drained, p.quorumUp).Sum
	p.quorumUp, news = quorumStep(p.VS, p.quorumUp, p.init, p.sorryIn, sum)
	p.init, p.sorryIn = false, false
	return news
}

// Write puts the pool's services into t, their destinations where Weigh
// places them for the current quorum state. It changes nothing of p.
//
// A destination takes the real server's port with NAT; DR and TUN
// cannot change the port, so it gets the service's (0 for a fwmark
// service), as keepalived gives the kernel.
func (p *Pool) Write(states []RealState, drained map[netip.AddrPort]bool, t ipvs.Table) {
	w := Weigh(p.VS, states, drained, p.quorumUp)
	sorry := p.VS.SorryServer
	var ds []ipvs.Destination
	for _, k := range p.Keys {
		s := p.service
		s.ServiceKey = k
		vs := t.Add(s)
		ds = ds[:0]
		for i, rs := range p.VS.RealServers {
			if pl := w.Reals[i]; pl.In {
				d := destOf(portFor(rs.Addr, rs.Method, k), rs.Method, pl.Weight, rs.UThreshold(), rs.LThreshold())
				d.TableWeight = int32(pl.TableWeight)
				ds = append(ds, d)
			}
		}
		vs.AddDests(ds)
		if sorry == nil || !w.Sorry.In {
			continue
		}
		d := destOf(portFor(sorry.Addr, sorry.Method, k), sorry.Method, w.Sorry.Weight, 0, 0)
		if _, taken := vs.Dest(d.Key()); w.SorryYields && taken {
			continue
		}
		vs.AddDest(d)
	}
}

// portFor is the address a destination of service k gets: a NAT real
// server keeps its port, the others take the service's.
func portFor(addr netip.AddrPort, m config.Method, k ipvs.ServiceKey) netip.AddrPort {
	if m.Kind != config.NAT {
		return netipPort(addr, k.Port)
	}
	return addr
}
