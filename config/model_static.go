package config

import "net/netip"

// Static entries: the top-level static_ipaddress, static_routes and
// static_rules blocks, which keepalived adds when its VRRP process starts
// and keeps whatever the instances' states, and the policy rules of a
// vrrp_instance's virtual_rules, which move with its addresses.

// Rule is one static_rules or virtual_rules line, in ip-rule syntax.
type Rule struct {
	Pos Pos `json:"pos"`
	// Family is inet or inet6: from inet/inet6 or the first address.
	Family Family       `json:"family"`
	From   netip.Prefix `json:"from,omitzero"`
	To     netip.Prefix `json:"to,omitzero"`
	Not    bool         `json:"not,omitempty"`
	// Priority is the rule's preference. A rule that gives none gets
	// keepalived's: 16384 for the first of its family in the file, one
	// less for each next (PriorityAuto).
	Priority     uint32 `json:"priority"`
	PriorityAuto bool   `json:"priority_auto,omitempty"`
	// Action is table (lookup), goto, nop, blackhole, unreachable or
	// prohibit.
	Action RuleAction `json:"action"`
	Table  uint32     `json:"table,omitempty"`
	Goto   uint32     `json:"goto,omitempty"`
	TOS    uint8      `json:"tos,omitempty"`
	// FwMark is set with HasFwMark (fwmark N), FwMask with HasFwMask
	// (fwmark N/M).
	FwMark    uint32 `json:"fwmark,omitempty"`
	HasFwMark bool   `json:"-"`
	FwMask    uint32 `json:"fwmask,omitempty"`
	HasFwMask bool   `json:"-"`
	Realms    uint32 `json:"realms,omitempty"`
	// SuppressPrefixLen and SuppressIfGroup are -1 when not given.
	SuppressPrefixLen int    `json:"suppress_prefixlength"`
	SuppressIfGroup   int    `json:"suppress_ifgroup"`
	IIf               string `json:"iif,omitempty"`
	OIf               string `json:"oif,omitempty"`
	// UIDRange, SPort and DPort are [first, last] when Has... is set.
	UIDRange    [2]uint32 `json:"uidrange,omitzero"`
	HasUIDRange bool      `json:"-"`
	SPort       [2]uint16 `json:"sport,omitzero"`
	HasSPort    bool      `json:"-"`
	DPort       [2]uint16 `json:"dport,omitzero"`
	HasDPort    bool      `json:"-"`
	IPProto     uint8     `json:"ipproto,omitempty"`
	// Protocol is the rule's protocol: keepalived's own (18) unless
	// no_track, when it is the one given, if any.
	Protocol    uint8 `json:"protocol,omitempty"`
	HasProtocol bool  `json:"-"`
	NoTrack     bool  `json:"no_track,omitempty"`
}
