package director

import (
	"math"
	"net/netip"

	"github.com/directord/directord/config"
)

// This file is the one place that decides a real server's weight and
// presence in the kernel's table. Everything that needs them (the table
// the pools want, a verdict's update, the status, the stop's notify
// scripts) asks Weigh; the quorum state it reads moves only in
// quorumStep, at the transitions.

// Place is where a real server (or the sorry server) stands in a
// service's table: in it at Weight, or out of it.
type Place struct {
	In     bool
	Weight int
	// TableWeight is, for a real server of a Maglev service that holds
	// its table (holdsTable), the weight the kernel's table is built
	// from: its Weight, or while that is 0, the weight it would have up.
	TableWeight int
}

// Weights is what Weigh decides for one virtual server.
type Weights struct {
	// Reals are the real servers' places, in the configuration's order.
	Reals []Place
	// Sorry is the sorry server's place (out without one).
	Sorry Place
	// SorryYields is true when the sorry server, held at weight 0 by
	// sorry_server_inhibit, gives way to a real server's entry that
	// lands on the same destination (a DR or TUN real server on the same
	// address with another port, which the service's port replaces).
	SorryYields bool
	// Sum is the quorum's measure: the weights of the alive real servers,
	// a drained one at 0 (keepalived's weigh_live_realservers).
	Sum int
}

// Weigh decides, as keepalived 2.2.7's checker does (ipwrapper.c and
// ipvswrapper.c), the place of each real server of vs and of its sorry
// server, from the checks' word on them (health, in the configuration's
// order; a missing one counts as alive at its configured weight), the
// operator's drains and the quorum state. It is pure.
//
//   - A real server's weight is the checks' (its configured weight, or
//     what a MISC_CHECK with misc_dynamic made of it), held to
//     0..2^31-1 as keepalived's real_weight, and 0 while drained.
//   - An alive real server is in the table while the quorum holds, or
//     when there is no sorry server (perform_svr_state: a change is made
//     "only if we have quorum or no sorry server").
//   - Otherwise (dead, or alive while the sorry server stands in for the
//     pool) it is out, or in at weight 0 with inhibit_on_failure
//     (ipvs_cmd turns the removal into an edit to weight 0).
//   - A virtual server of lvs_sched mh with mh-fallback holds its
//     Maglev table (holdsTable, a directord difference): a real server
//     keepalived would remove is in at weight 0 instead, as with
//     inhibit_on_failure, so that the kernel keeps its slots in the
//     table and mh-fallback sends its flows on; every place gets a
//     TableWeight.
//   - Without quorum the sorry server is in at weight 1 (its
//     effective_weight, alloc_ssvr); with quorum it is out, or in at
//     weight 0 with sorry_server_inhibit (init_service_vs), unless it is
//     also a real server, whose entry alone stands (s_svr_duplicates_rs).
func Weigh(vs *config.VirtualServer, health []RealState, drained map[netip.AddrPort]bool, quorumUp bool) Weights {
	w := Weights{Reals: make([]Place, len(vs.RealServers))}
	sorry := vs.SorryServer
	hold := holdsTable(vs)
	for i, rs := range vs.RealServers {
		st := NewRealState(true, rs.Weight)
		if i < len(health) {
			st = health[i]
		}
		weight := realWeight(int(st.Weight))
		table := 0
		if hold {
			table = weight
			if table == 0 {
				table = realWeight(rs.Weight)
			}
		}
		if drained[rs.Addr] {
			weight = 0
		}
		switch {
		case st.Alive && (quorumUp || sorry == nil):
			w.Reals[i] = Place{In: true, Weight: weight, TableWeight: table}
		case rs.InhibitOnFailure || hold:
			w.Reals[i] = Place{In: true, TableWeight: table}
		}
		if st.Alive {
			w.Sum += weight
		}
	}
	switch {
	case sorry == nil:
	case !quorumUp:
		w.Sorry = Place{In: true, Weight: 1}
	case duplicates(vs):
		// keepalived's s_svr_duplicates_rs: the sorry server is a real
		// server (same address and port). Its inhibit is made the real
		// server's (check_data.c, "matches sorry server, but inhibit
		// setting differs"), and init_service_vs marks it set without
		// adding it: while the quorum holds, the address's entry is the
		// real server's, or none.
	case sorry.Inhibit:
		w.Sorry = Place{In: true}
		w.SorryYields = true
	}
	return w
}

// holdsTable tells whether vs is a Maglev service (lvs_sched mh) with
// mh-fallback (flag-1): one whose real servers stay in the kernel's
// table at weight 0 when keepalived would remove them. The mh table is
// built from every destination of non-zero last weight in the list's
// order, so a removal moves flows of the servers that stay, differently
// on directors that saw different histories; a destination at weight 0
// keeps its slots (the kernel keeps its last non-zero weight) and
// mh-fallback sends the flows that hash to it on to the next available
// server (ip_vs_mh_get_fallback). Without mh-fallback those flows would
// be dropped, so such a service removes as keepalived does.
func holdsTable(vs *config.VirtualServer) bool {
	if vs.Scheduler != "mh" {
		return false
	}
	for _, f := range vs.SchedFlags {
		if f == "mh-fallback" || f == "flag-1" {
			return true
		}
	}
	return false
}

// duplicates tells whether vs's sorry server is also one of its real
// servers, as keepalived's rs_iseq compares them: address and port.
func duplicates(vs *config.VirtualServer) bool {
	for _, rs := range vs.RealServers {
		if rs.Addr == vs.SorryServer.Addr {
			return true
		}
	}
	return false
}

// realWeight is a weight as the kernel takes it: keepalived's
// real_weight, which holds effective_weight to 0..IPVS_WEIGHT_LIMIT
// (INT32_MAX).
func realWeight(w int) int {
	return min(max(w, 0), math.MaxInt32)
}

// quorumStep moves a virtual server's quorum state for the sum of its
// alive real servers' weights, as keepalived's update_quorum_state: the
// quorum is lost when the sum falls below quorum - hysteresis (or to 0),
// and won when it reaches quorum + hysteresis. A virtual server starts
// without it (set_quorum_states, before any real server is alive), so its
// first step wins it only at quorum + hysteresis; a reload keeps it.
//
// init is the step of keepalived's init_service_vs, at the start and at
// each reload; sorryIn, that the sorry server is in the table already
// (the same one, kept over a reload while the quorum was down). news says
// that the notifications (quorum_up or quorum_down, the FIFO line, the
// e-mail) are due: at each change, and at an init step that puts the
// sorry server in ("Starting with quorum down"). A virtual server that
// starts without quorum and without a sorry server says nothing, as
// keepalived.
func quorumStep(vs *config.VirtualServer, up, init, sorryIn bool, sum int) (next, news bool) {
	q, h := int(vs.Quorum), int(vs.Hysteresis)
	switch {
	case up && (sum == 0 || sum < q-h):
		return false, true
	case !up && sum > 0 && sum >= q+h:
		return true, true
	case init && !up && vs.SorryServer != nil && !sorryIn:
		return false, true
	}
	return up, false
}
