package bgp

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/directord/directord/config"
)

// Speaker is what directord needs of a BGP implementation: one per
// process, its neighbors from the configuration, host routes announced
// and withdrawn. GoBGP is the one in use (bgp/gobgp), run in the helper
// process directord-bgp that Process drives; tests use a fake.
type Speaker interface {
	// Start runs the speaker with cfg's identity and neighbors.
	Start(ctx context.Context, cfg *config.BGP) error
	// Configure moves the running speaker to cfg's neighbors: new ones are
	// added, removed ones deleted, changed ones replaced; unchanged ones are
	// not touched (their sessions stay up).
	Configure(ctx context.Context, cfg *config.BGP) error
	// Announce sends p to every neighbor of its family, the director as
	// next hop; Withdraw takes it back. Both are idempotent.
	Announce(ctx context.Context, p netip.Prefix) error
	Withdraw(ctx context.Context, p netip.Prefix) error
	// Neighbors is the state of each neighbor.
	Neighbors(ctx context.Context) ([]NeighborStatus, error)
	// Stop closes every session (a NOTIFICATION Cease) and stops.
	Stop(ctx context.Context) error
}

// NeighborStatus is one neighbor as directorctl status shows it.
type NeighborStatus struct {
	Addr     netip.Addr   `json:"address"`
	RemoteAS uint32       `json:"remote_as"`
	State    SessionState `json:"state"`
	// Since is when the session was established (zero unless it is).
	Since time.Time `json:"since,omitzero"`
	// BFD is the BFD session's state ("up", "down", "init",
	// "admin-down"), or "" without BFD.
	BFD string `json:"bfd,omitempty"`
	// Sent is the number of prefixes advertised to it.
	Sent uint64 `json:"prefixes_sent"`
}

// SessionState is a BGP session's finite state machine state.
type SessionState int

// RFC 4271's states.
const (
	Idle SessionState = iota
	Connect
	Active
	OpenSent
	OpenConfirm
	Established
)

func (s SessionState) String() string {
	switch s {
	case Idle:
		return "idle"
	case Connect:
		return "connect"
	case Active:
		return "active"
	case OpenSent:
		return "opensent"
	case OpenConfirm:
		return "openconfirm"
	case Established:
		return "established"
	}
	return "unknown"
}

// MarshalText writes the state's name.
func (s SessionState) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a state's name.
func (s *SessionState) UnmarshalText(b []byte) error {
	for st := Idle; st <= Established; st++ {
		if st.String() == string(b) {
			*s = st
			return nil
		}
	}
	return fmt.Errorf("unknown BGP session state %q", b)
}

// SessionEvent is a neighbor's session changing state.
type SessionEvent struct {
	Neighbor netip.Addr   `json:"neighbor"`
	State    SessionState `json:"state"`
	// Reason is why it went down, when it did ("hold timer expired",
	// "BFD down", "peer closed" ...), as the speaker says it.
	Reason string `json:"reason,omitempty"`
}
