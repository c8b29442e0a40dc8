package director

import (
	"fmt"

	"github.com/directord/directord/config"
	"github.com/directord/directord/ipvs"
)

// RealState is what the health checks say of a real server.
type RealState struct {
	Alive bool
	// Weight is the weight to give it while alive: the configured one, or
	// what a MISC_CHECK with misc_dynamic reports.
	Weight int
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
	started  bool // Update has run once
}

// NewPools makes a Pool per virtual server of cfg.
func NewPools(cfg *config.Config) ([]*Pool, error) {
	var out []*Pool
	for _, vs := range cfg.VirtualServers {
		s, err := serviceOf(vs)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", vs.Pos, err)
		}
		keys, err := keysOf(cfg, vs)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", vs.Pos, err)
		}
		out = append(out, &Pool{VS: vs, Keys: keys, service: s})
	}
	return out, nil
}

// weightOf is the weight real server rs gets in the kernel in state st,
// or in false when it is left out: alive while the quorum holds (or there
// is no sorry server), else weight 0 with inhibit_on_failure.
func (p *Pool) weightOf(rs *config.RealServer, st RealState) (w int, in bool) {
	switch {
	case st.Alive && (p.quorumUp || p.VS.SorryServer == nil):
		return st.Weight, true
	case rs.InhibitOnFailure:
		return 0, true
	}
	return 0, false
}

// InitialStates are the real servers' states before any check has run:
// alive unless alpha (or a checker-less real server, always alive).
func (p *Pool) InitialStates() []RealState {
	st := make([]RealState, len(p.VS.RealServers))
	for i, rs := range p.VS.RealServers {
		st[i] = RealState{Alive: !rs.Alpha || len(rs.Checkers) == 0, Weight: rs.Weight}
	}
	return st
}

// QuorumUp tells whether the pool has its quorum.
func (p *Pool) QuorumUp() bool { return p.quorumUp }

// Update takes the real servers' states (in the configuration's order),
// moves the quorum state as keepalived does, and writes the pool's
// services into t. It reports a change of quorum state, for the
// quorum_up and quorum_down scripts.
//
// The quorum is the sum of the weights of the alive real servers. It is
// lost when that sum falls below quorum - hysteresis (or to 0), and won
// when it reaches quorum + hysteresis; a pool starts without it, so the
// first Update wins it only at quorum + hysteresis. Without quorum, a
// sorry server (weight 1), if there is one, takes the place of the alive
// real servers; sorry_server_inhibit keeps it at weight 0 otherwise.
//
// A real server that is not to take traffic is left out, or kept at
// weight 0 with inhibit_on_failure, so that its established connections
// drain instead of being cut.
func (p *Pool) Update(states []RealState, t ipvs.Table) (changed bool) {
	sum := 0
	for i, st := range states {
		if st.Alive && i < len(p.VS.RealServers) {
			sum += max(st.Weight, 0)
		}
	}
	q, h := int(p.VS.Quorum), int(p.VS.Hysteresis)
	switch {
	case p.quorumUp && (sum == 0 || sum < q-h):
		p.quorumUp, changed = false, true
	case !p.quorumUp && sum > 0 && sum >= q+h:
		p.quorumUp, changed = true, true
	case !p.started:
		changed = true // starting without quorum is news too
	}
	p.started = true
	sorry := p.VS.SorryServer
	for _, k := range p.Keys {
		s := p.service
		s.ServiceKey = k
		vs := t.Add(s)
		for i, rs := range p.VS.RealServers {
			st := RealState{Alive: true, Weight: rs.Weight}
			if i < len(states) {
				st = states[i]
			}
			addr := rs.Addr
			if rs.Method.Kind != "NAT" {
				// DR and TUN cannot change the port: the service's, or 0
				// for a fwmark service, as keepalived gives the kernel.
				addr = netipPort(addr, k.Port)
			}
			if w, in := p.weightOf(rs, st); in {
				vs.AddDest(destOf(addr, rs.Method, w, rs.UThreshold, rs.LThreshold))
			}
		}
		if sorry != nil {
			addr := sorry.Addr
			if sorry.Method.Kind != "NAT" {
				addr = netipPort(addr, k.Port)
			}
			switch {
			case !p.quorumUp:
				vs.AddDest(destOf(addr, sorry.Method, 1, 0, 0))
			case sorry.Inhibit:
				// A sorry server that is also a real server keeps the
				// real server's entry while the quorum holds.
				d := destOf(addr, sorry.Method, 0, 0, 0)
				if _, taken := vs.Dests[d.Key()]; !taken {
					vs.AddDest(d)
				}
			}
		}
	}
	return changed
}
