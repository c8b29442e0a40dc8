package config

import (
	"net/netip"
	"time"
)

// BGP is global_defs' bgp block, a directord extension: the embedded BGP
// speaker that announces the addresses of the virtual servers marked
// "announce bgp" (docs/bgp.md).
type BGP struct {
	Pos     Pos    `json:"pos"`
	LocalAS uint32 `json:"local_as"`
	// RouterID is the BGP identifier; unset, it is derived at start from
	// the address the first neighbor is reached from.
	RouterID netip.Addr `json:"router_id,omitzero"`
	// ListenPort is where the speaker accepts sessions (179); -1 accepts
	// none, every session is then opened by directord.
	ListenPort int `json:"listen_port"`
	// WithdrawWait (global_defs' bgp_withdraw_wait) is how long directord
	// waits after withdrawing everything on SIGTERM before it removes the
	// addresses and the services, for the routers to act on the withdraw.
	WithdrawWait time.Duration `json:"bgp_withdraw_wait"`
	Neighbors    []*Neighbor   `json:"neighbors"`
}

// Neighbor is one BGP peer of the bgp block.
type Neighbor struct {
	Pos      Pos        `json:"pos"`
	Addr     netip.Addr `json:"address"`
	RemoteAS uint32     `json:"remote_as"`
	// HoldTime is the hold time offered (keepalives at a third of it);
	// 0 means none, as RFC 4271 allows.
	HoldTime time.Duration `json:"hold_time"`
	// BFD, when set, runs a BFD session to the neighbor that resets the
	// BGP session when it goes down.
	BFD           *BFD       `json:"bfd,omitempty"`
	SourceAddress netip.Addr `json:"source_address,omitzero"`
	Port          uint16     `json:"port"`
	Password      string     `json:"password,omitempty"`
	// Multihop is the TTL of an eBGP multihop session (0: directly
	// connected, TTL 1).
	Multihop        int  `json:"multihop,omitempty"`
	Passive         bool `json:"passive,omitempty"`
	GracefulRestart bool `json:"graceful_restart,omitempty"`
	// Communities are sent with every announced address, each as
	// "AS:VALUE" or a well-known name (no-export, no-advertise, ...).
	Communities []string `json:"communities,omitempty"`
	MED         *uint32  `json:"med,omitempty"`
	LocalPref   *uint32  `json:"local_pref,omitempty"`
}

// BFD is a neighbor's bfd: the interval both sent and required, and the
// detection multiplier.
type BFD struct {
	Interval   time.Duration `json:"interval"`
	Multiplier int           `json:"multiplier"`
}

// Announce is a virtual server's "announce bgp [dev NAME]": its address is
// announced, and put on Dev (lo by default) so that IPVS receives it.
type Announce struct {
	Pos Pos    `json:"pos"`
	Dev string `json:"dev"`
	// Addresses are announce's "address ADDR...": what a fwmark virtual
	// server (or a group's fwmark entries) announces, a directord
	// extension of the extension.
	Addresses []netip.Addr `json:"addresses,omitempty"`
	// Prefixes are resolved: every /32 and /128 announced, sorted
	// (AnnouncedPrefixes).
	Prefixes []netip.Prefix `json:"prefixes"`
}

// Default BGP settings.
const (
	DefaultBGPPort      = 179
	DefaultHoldTime     = 90 * time.Second
	DefaultWithdrawWait = 2 * time.Second
)
