package bgp

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"time"
)

// Service is one virtual server that announces its address, as the data
// plane last saw it.
type Service struct {
	// Name identifies the virtual server in reasons and logs
	// ("TCP 10.1.0.100:443").
	Name string
	// Prefix is the announced /32 or /128.
	Prefix netip.Prefix
	// Dev is where the address is put when no VRRP instance holds it.
	Dev string
	// Programmed: the service is in the kernel's IPVS table.
	Programmed bool
	// Quorum: the pool has quorum (keepalived's: by default one real
	// server alive).
	Quorum bool
}

// Inputs is everything the decision depends on, and nothing else.
type Inputs struct {
	Services []Service
	// VRRPMaster holds the addresses that are also VRRP virtual addresses,
	// each with whether this director is master for it.
	VRRPMaster map[netip.Addr]bool
	// Drained: directorctl drain-director withdrew everything.
	Drained bool
	// Stopping: directord is shutting down.
	Stopping bool
	// Restarting: the speaker is about to restart (a reload changed
	// local_as, router_id or listen_port); what it restarts for, else "".
	// Everything is withdrawn, the addresses stay.
	Restarting string
}

// Reason says why an address is or is not announced.
type Reason int

// The reasons, in the order they are checked: the first that applies is
// given.
const (
	ReasonServing Reason = iota
	ReasonStopping
	ReasonDrained
	ReasonNotProgrammed
	ReasonNoQuorum
	ReasonVRRPBackup
	ReasonRemoved
	ReasonRestarting
)

func (r Reason) String() string {
	switch r {
	case ReasonServing:
		return "serving"
	case ReasonStopping:
		return "stopping"
	case ReasonDrained:
		return "drained"
	case ReasonNotProgrammed:
		return "not-programmed"
	case ReasonNoQuorum:
		return "no-quorum"
	case ReasonVRRPBackup:
		return "vrrp-backup"
	case ReasonRemoved:
		return "removed"
	case ReasonRestarting:
		return "restarting"
	}
	return fmt.Sprintf("reason(%d)", int(r))
}

// Decision is what Decide says of one address.
type Decision struct {
	Prefix   netip.Prefix
	Announce bool
	Reason   Reason
	// Service is the virtual server the reason is about (the one not
	// programmed, without quorum), the settings a restart is for, or "".
	Service string
	// Dev is where the address belongs; "" when a VRRP instance holds it
	// (directord then never puts it on lo: the backup would answer ARP
	// for it).
	Dev string
}

// Detail is the reason as an operator reads it.
func (d Decision) Detail() string {
	switch d.Reason {
	case ReasonServing:
		return "every virtual server of the address is programmed and has quorum"
	case ReasonStopping:
		return "directord is stopping"
	case ReasonDrained:
		return "the director is drained (directorctl drain-director)"
	case ReasonNotProgrammed:
		return d.Service + " is not programmed in the kernel"
	case ReasonNoQuorum:
		return d.Service + " has no quorum"
	case ReasonVRRPBackup:
		return "this director is not VRRP master for the address"
	case ReasonRemoved:
		return "no virtual server announces the address any more"
	case ReasonRestarting:
		return "the speaker restarts: " + d.Service + " changed"
	}
	return d.Reason.String()
}

// Decide says, for every address that a service announces, whether it is
// announced: while every service of that address is programmed and has
// quorum, this director is master for it when it is also a VRRP address,
// and the director is neither drained nor stopping. The result is sorted
// by prefix.
func Decide(in Inputs) []Decision {
	byPrefix := map[netip.Prefix]*Decision{}
	var order []netip.Prefix
	for _, s := range in.Services {
		d, ok := byPrefix[s.Prefix]
		if !ok {
			d = &Decision{Prefix: s.Prefix, Announce: true, Reason: ReasonServing, Dev: s.Dev}
			if _, vrrp := in.VRRPMaster[s.Prefix.Addr()]; vrrp {
				d.Dev = ""
			}
			byPrefix[s.Prefix] = d
			order = append(order, s.Prefix)
		}
		// The first service at fault is named; not programmed outranks no
		// quorum.
		switch {
		case !s.Programmed && d.Reason != ReasonNotProgrammed:
			d.Announce, d.Reason, d.Service = false, ReasonNotProgrammed, s.Name
		case s.Programmed && !s.Quorum && d.Reason == ReasonServing:
			d.Announce, d.Reason, d.Service = false, ReasonNoQuorum, s.Name
		}
	}
	out := make([]Decision, 0, len(order))
	for _, p := range order {
		d := byPrefix[p]
		if master, vrrp := in.VRRPMaster[p.Addr()]; vrrp && !master && d.Reason == ReasonServing {
			d.Announce, d.Reason = false, ReasonVRRPBackup
		}
		switch {
		case in.Stopping:
			d.Announce, d.Reason, d.Service = false, ReasonStopping, ""
		case in.Restarting != "":
			d.Announce, d.Reason, d.Service = false, ReasonRestarting, in.Restarting
		case in.Drained:
			d.Announce, d.Reason, d.Service = false, ReasonDrained, ""
		}
		out = append(out, *d)
	}
	slices.SortFunc(out, func(a, b Decision) int { return comparePrefix(a.Prefix, b.Prefix) })
	return out
}

func comparePrefix(a, b netip.Prefix) int {
	return cmp.Or(a.Addr().Compare(b.Addr()), cmp.Compare(a.Bits(), b.Bits()))
}

// State is what is in effect: the addresses announced and the addresses
// directord put on a device.
type State struct {
	Announced map[netip.Prefix]bool
	// Addresses maps each address directord added to its device.
	Addresses map[netip.Prefix]string
}

// ActionKind is one step of a plan.
type ActionKind int

// The steps.
const (
	// Withdraw the route to Prefix from every neighbor.
	Withdraw ActionKind = iota
	// Wait for the routers to act on the withdraws before the addresses
	// they concern go (bgp_withdraw_wait).
	Wait
	// RemoveAddress takes Prefix off Dev.
	RemoveAddress
	// AddAddress puts Prefix on Dev.
	AddAddress
	// Announce Prefix to every neighbor, the director as next hop.
	Announce
)

func (k ActionKind) String() string {
	switch k {
	case Withdraw:
		return "withdraw"
	case Wait:
		return "wait"
	case RemoveAddress:
		return "remove-address"
	case AddAddress:
		return "add-address"
	case Announce:
		return "announce"
	}
	return fmt.Sprintf("action(%d)", int(k))
}

// Action is one step; Decision is what led to it (for the log).
type Action struct {
	Kind     ActionKind
	Prefix   netip.Prefix
	Dev      string
	Wait     time.Duration
	Decision Decision
}

func (a Action) String() string {
	switch a.Kind {
	case Wait:
		return fmt.Sprintf("wait %s", a.Wait)
	case AddAddress, RemoveAddress:
		return fmt.Sprintf("%s %s dev %s", a.Kind, a.Prefix, a.Dev)
	}
	return fmt.Sprintf("%s %s (%s)", a.Kind, a.Prefix, a.Decision.Reason)
}

// Plan returns the actions that take prev to what next decides, in an
// order that never refuses a packet the routers still send: every
// withdraw first; then, if an address that was announced is to go, a wait
// of withdrawWait; then the addresses that go, those that come, and last
// the announces, each of an address already in place. An address stays on
// its device while it is withdrawn for any reason but its removal from the
// configuration, or stopping (keepalive serving what still arrives).
func Plan(prev State, next []Decision, withdrawWait time.Duration) []Action {
	var withdraws, removes, adds, announces []Action
	seen := map[netip.Prefix]bool{}
	withdrawn := map[netip.Prefix]bool{}
	for _, d := range next {
		seen[d.Prefix] = true
		if prev.Announced[d.Prefix] && !d.Announce {
			withdraws = append(withdraws, Action{Kind: Withdraw, Prefix: d.Prefix, Decision: d})
			withdrawn[d.Prefix] = true
		}
		dev, have := prev.Addresses[d.Prefix]
		want := d.Dev != "" && d.Reason != ReasonStopping
		switch {
		case have && (!want || dev != d.Dev):
			removes = append(removes, Action{Kind: RemoveAddress, Prefix: d.Prefix, Dev: dev, Decision: d})
			if want {
				adds = append(adds, Action{Kind: AddAddress, Prefix: d.Prefix, Dev: d.Dev, Decision: d})
			}
		case !have && want:
			adds = append(adds, Action{Kind: AddAddress, Prefix: d.Prefix, Dev: d.Dev, Decision: d})
		}
		if d.Announce && !prev.Announced[d.Prefix] {
			announces = append(announces, Action{Kind: Announce, Prefix: d.Prefix, Decision: d})
		}
	}
	// What the new decision no longer names has left the configuration.
	for _, p := range sortedKeys(prev.Announced) {
		if !seen[p] && prev.Announced[p] {
			d := Decision{Prefix: p, Reason: ReasonRemoved}
			withdraws = append(withdraws, Action{Kind: Withdraw, Prefix: p, Decision: d})
			withdrawn[p] = true
		}
	}
	for _, p := range sortedKeys(prev.Addresses) {
		if !seen[p] {
			d := Decision{Prefix: p, Reason: ReasonRemoved}
			removes = append(removes, Action{Kind: RemoveAddress, Prefix: p, Dev: prev.Addresses[p], Decision: d})
		}
	}
	slices.SortStableFunc(withdraws, byPrefix)
	slices.SortStableFunc(removes, byPrefix)
	out := withdraws
	for _, r := range removes {
		if withdrawn[r.Prefix] && withdrawWait > 0 {
			out = append(out, Action{Kind: Wait, Wait: withdrawWait})
			break
		}
	}
	out = append(out, removes...)
	out = append(out, adds...)
	return append(out, announces...)
}

func byPrefix(a, b Action) int { return comparePrefix(a.Prefix, b.Prefix) }

func sortedKeys[V any](m map[netip.Prefix]V) []netip.Prefix {
	out := make([]netip.Prefix, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	slices.SortFunc(out, comparePrefix)
	return out
}

// Apply returns the state after plan's actions all succeeded.
func (s State) Apply(plan []Action) State {
	n := State{Announced: map[netip.Prefix]bool{}, Addresses: map[netip.Prefix]string{}}
	for p, v := range s.Announced {
		if v {
			n.Announced[p] = true
		}
	}
	for p, d := range s.Addresses {
		n.Addresses[p] = d
	}
	for _, a := range plan {
		switch a.Kind {
		case Withdraw:
			delete(n.Announced, a.Prefix)
		case Announce:
			n.Announced[a.Prefix] = true
		case RemoveAddress:
			delete(n.Addresses, a.Prefix)
		case AddAddress:
			n.Addresses[a.Prefix] = a.Dev
		}
	}
	return n
}
