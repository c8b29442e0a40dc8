// Package control is directord's control interface: the status model that
// directorctl shows and the metrics are read from, and the HTTP API on a
// Unix socket that only root may use.
package control

import (
	"context"
	"time"
)

// Status is a snapshot of a running directord.
type Status struct {
	Version    string    `json:"version"`
	PID        int       `json:"pid"`
	Started    time.Time `json:"started"`
	ConfigFile string    `json:"config_file"`
	// Reloads: the last attempt and the last that succeeded (zero if
	// none), and the counts of each outcome since start.
	LastReload     *Reload   `json:"last_reload,omitempty"`
	LastGoodReload time.Time `json:"last_good_reload"`
	ReloadsOK      uint64    `json:"reloads_ok"`
	ReloadsFailed  uint64    `json:"reloads_failed"`

	Instances      []Instance      `json:"instances"`
	VirtualServers []VirtualServer `json:"virtual_servers"`
	// Drained lists the real servers an operator drained (ADDR:PORT),
	// which keep weight 0 until undrained, across reloads.
	Drained []string `json:"drained"`
	IPVS    IPVS     `json:"ipvs"`
	// BGP is the embedded BGP speaker; nil without a bgp block.
	BGP *BGP `json:"bgp,omitempty"`
}

// BGP is the speaker: its neighbors and the addresses it announces or
// not, each with why.
type BGP struct {
	LocalAS  uint32 `json:"local_as"`
	RouterID string `json:"router_id"`
	// Drained: directorctl drain-director withdrew everything.
	Drained   bool          `json:"drained"`
	Neighbors []BGPNeighbor `json:"neighbors"`
	Addresses []BGPAddress  `json:"addresses"`
}

// BGPNeighbor is one BGP neighbor.
type BGPNeighbor struct {
	Address  string `json:"address"`
	RemoteAS uint32 `json:"remote_as"`
	// State is the session's: idle, connect, active, opensent,
	// openconfirm or established.
	State string `json:"state"`
	// Since is when the session was established, zero unless it is.
	Since time.Time `json:"since,omitzero"`
	// BFD is up, down, init or admin-down; "" without BFD.
	BFD          string `json:"bfd,omitempty"`
	PrefixesSent uint64 `json:"prefixes_sent"`
}

// BGPAddress is one address a virtual server announces.
type BGPAddress struct {
	Prefix    string `json:"prefix"`
	Announced bool   `json:"announced"`
	// Reason is serving, no-quorum, not-programmed, vrrp-backup,
	// drained or stopping; Detail says it for an operator.
	Reason string `json:"reason"`
	Detail string `json:"detail"`
	// Dev is where directord put the address ("" when VRRP holds it).
	Dev   string    `json:"dev,omitempty"`
	Since time.Time `json:"since,omitzero"`
}

// DirectorDrainer is what the control API asks of a daemon that runs
// BGP, for drain-director.
type DirectorDrainer interface {
	// DrainDirector withdraws every route (on) or lets them be announced
	// again (off), and returns once the routes are withdrawn or announced.
	DrainDirector(ctx context.Context, on bool) error
}

// Reload is one reload's outcome.
type Reload struct {
	At    time.Time `json:"at"`
	OK    bool      `json:"ok"`
	Error string    `json:"error,omitempty"` // names file:line when the file was bad
}

// Instance is one VRRP instance.
type Instance struct {
	Name      string `json:"name"`
	VRID      uint8  `json:"vrid"`
	Interface string `json:"interface"`
	Version   int    `json:"version"`
	// State is INIT, BACKUP, MASTER or FAULT.
	State             string    `json:"state"`
	Since             time.Time `json:"since"`
	Priority          uint8     `json:"priority"`           // configured
	EffectivePriority uint8     `json:"effective_priority"` // after tracking
	MasterAddr        string    `json:"master_addr,omitempty"`
	VIPs              []string  `json:"vips"`

	// HandedOver: an operator's hand-over holds the instance back (it
	// runs at priority 1, as backup while a peer is master) until resume.
	HandedOver bool `json:"handed_over"`

	AdvertsSent     uint64            `json:"adverts_sent"`
	AdvertsReceived uint64            `json:"adverts_received"`
	Transitions     uint64            `json:"transitions"`
	Drops           map[string]uint64 `json:"drops,omitempty"` // by reason
}

// VirtualServer is one configured virtual server (or group).
type VirtualServer struct {
	Name       string `json:"name"`     // as written: "192.0.2.1 443", "fwmark 1", "group web"
	Position   string `json:"position"` // file:line
	Protocol   string `json:"protocol"`
	Scheduler  string `json:"scheduler"`
	Forwarding string `json:"forwarding"` // DR, NAT, TUN
	QuorumUp   bool   `json:"quorum_up"`
	// Digest fingerprints the virtual server's IPVS services as the
	// kernel holds them (scheduler, flags, destinations in order, weights:
	// docs/ipvs.md): directors that agree have the same; "" while the
	// kernel's table is not known.
	Digest string `json:"digest,omitempty"`
	Reals  []Real `json:"reals"`
}

// Real is one real server of a virtual server.
type Real struct {
	Addr    string `json:"addr"` // ADDR:PORT
	Alive   bool   `json:"alive"`
	Drained bool   `json:"drained"`
	// Weight is the configured weight (with misc_dynamic changes);
	// EffectiveWeight what the kernel gets (0 when drained or inhibited,
	// -1 when the real server is not in the kernel's table).
	Weight          int     `json:"weight"`
	EffectiveWeight int     `json:"effective_weight"`
	Checks          []Check `json:"checks"`
	// Unchecked are its checkers directord does not have ("DNS_CHECK at
	// keepalived.conf:40"): with no Checks, it is always alive.
	Unchecked []string `json:"unchecked,omitempty"`
}

// Check is a checker's last result.
type Check struct {
	Type string `json:"type"` // SSL_GET, HTTP_GET, TCP_CHECK, UDP_CHECK, DNS_CHECK, SMTP_CHECK, MISC_CHECK
	// Result is up, down or unknown; empty before the first probe.
	Result  string        `json:"result"`
	Reason  string        `json:"reason,omitempty"`
	Latency time.Duration `json:"latency_ns"`
	At      time.Time     `json:"at"`
	// Suspended: ha_suspend holds the check while its virtual server's
	// address is not on this host; Result is from before.
	Suspended bool `json:"suspended,omitempty"`
}

// IPVS counts the operations the reconciler sent to the kernel.
type IPVS struct {
	Operations uint64    `json:"operations"`
	Errors     uint64    `json:"errors"`
	LastSync   time.Time `json:"last_sync"`
}

// HandoverRequest is the body of POST /v1/handover and /v1/resume.
type HandoverRequest struct {
	Instance string `json:"instance"` // "" for every instance
}

// HandoverResult is how a hand-over went, instance by instance.
type HandoverResult struct {
	Instances []HandoverInstance `json:"instances"`
}

// HandoverInstance is one instance's hand-over.
type HandoverInstance struct {
	Name string `json:"name"`
	// OK: a peer's adverts show it is master (or it was already).
	OK bool `json:"ok"`
	// Took is from the request to the peer's first advert as master.
	Took   time.Duration `json:"took_ns"`
	Master string        `json:"master,omitempty"` // the peer's address
	Error  string        `json:"error,omitempty"`
}

// Handoverer is what the control API asks of a daemon that runs VRRP, for
// planned hand-overs.
type Handoverer interface {
	// Handover makes the instance (every instance for "") give up
	// mastership and stay backup, and waits until a peer has taken over.
	Handover(ctx context.Context, instance string) (HandoverResult, error)
	// Resume lets the instance compete again.
	Resume(instance string) error
}

// Backend is what the control API asks of the daemon.
type Backend interface {
	Status() Status
	// Drain sets a real server (ADDR:PORT, in every virtual server that
	// has it) to weight 0, or back (on false); it fails for an unknown
	// real server.
	Drain(real string, on bool) error
	// Reload reads the configuration file again, as SIGHUP does, and
	// reports the outcome.
	Reload() Reload
}
