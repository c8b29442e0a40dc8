package ipvs

import (
	"fmt"
	"net/netip"
	"strconv"
	"time"
)

// Protocol is a virtual service's transport protocol, an IANA number.
type Protocol uint16

// The protocols IPVS balances.
const (
	TCP  Protocol = 6
	UDP  Protocol = 17
	SCTP Protocol = 132
)

func (p Protocol) String() string {
	switch p {
	case TCP:
		return "TCP"
	case UDP:
		return "UDP"
	case SCTP:
		return "SCTP"
	case 0:
		return "none"
	}
	return "proto-" + strconv.Itoa(int(p))
}

// Family is an address family as the kernel numbers it.
type Family uint16

// The address families.
const (
	IPv4 Family = 2  // AF_INET
	IPv6 Family = 10 // AF_INET6
)

func (f Family) String() string {
	switch f {
	case IPv4:
		return "IPv4"
	case IPv6:
		return "IPv6"
	}
	return "af-" + strconv.Itoa(int(f))
}

// FamilyOf is the family of an address (IPv4 for a 4-in-6 address too,
// as the kernel would not know what to do with a mapped one).
func FamilyOf(a netip.Addr) Family {
	if a.Is4() || a.Is4In6() {
		return IPv4
	}
	return IPv6
}

// Forward is a destination's forwarding method (IP_VS_CONN_F_*).
type Forward uint32

// The forwarding methods. Local is what the kernel reports for a NAT
// destination whose address is the director's own.
const (
	Masquerade Forward = 0 // NAT
	Local      Forward = 1
	Tunnel     Forward = 2 // IP-in-IP (or GUE, GRE: TunnelType)
	Route      Forward = 3 // direct routing (DR)
	Bypass     Forward = 4
)

func (f Forward) String() string {
	switch f {
	case Masquerade:
		return "masq"
	case Local:
		return "local"
	case Tunnel:
		return "tunnel"
	case Route:
		return "route"
	case Bypass:
		return "bypass"
	}
	return "fwd-" + strconv.Itoa(int(f))
}

// ServiceFlags are IP_VS_SVC_F_* flags.
type ServiceFlags uint32

// The flags userspace sets. Hashed is the kernel's own and is masked off
// what Service reports.
const (
	Persistent ServiceFlags = 0x0001
	Hashed     ServiceFlags = 0x0002
	OnePacket  ServiceFlags = 0x0004
	SchedFlag1 ServiceFlags = 0x0008 // sh-fallback for sh, mh-fallback for mh
	SchedFlag2 ServiceFlags = 0x0010 // sh-port for sh, mh-port for mh
	SchedFlag3 ServiceFlags = 0x0020
)

// userFlags are the flags a service's owner decides.
const userFlags = Persistent | OnePacket | SchedFlag1 | SchedFlag2 | SchedFlag3

func (f ServiceFlags) String() string {
	if f == 0 {
		return "0"
	}
	names := []struct {
		f ServiceFlags
		n string
	}{{Persistent, "persistent"}, {Hashed, "hashed"}, {OnePacket, "ops"},
		{SchedFlag1, "flag-1"}, {SchedFlag2, "flag-2"}, {SchedFlag3, "flag-3"}}
	s := ""
	for _, n := range names {
		if f&n.f != 0 {
			if s != "" {
				s += ","
			}
			s += n.n
			f &^= n.f
		}
	}
	if f != 0 {
		if s != "" {
			s += ","
		}
		s += fmt.Sprintf("%#x", uint32(f))
	}
	return s
}

// ServiceKey identifies a virtual service: protocol, address and port, or
// a firewall mark and family. It is comparable, for maps.
type ServiceKey struct {
	Family   Family
	Protocol Protocol // 0 for a fwmark service
	Addr     netip.Addr
	Port     uint16
	FWMark   uint32
}

// AddrKey is the key of the service at protocol, address and port.
func AddrKey(p Protocol, ap netip.AddrPort) ServiceKey {
	a := ap.Addr().Unmap()
	return ServiceKey{Family: FamilyOf(a), Protocol: p, Addr: a, Port: ap.Port()}
}

// MarkKey is the key of the service of fwmark mark in family f.
func MarkKey(f Family, mark uint32) ServiceKey {
	return ServiceKey{Family: f, FWMark: mark}
}

// String writes the key as ipvsadm -Ln does: "TCP 192.0.2.1:80",
// "TCP [2001:db8::1]:443", "FWM 7 IPv6".
func (k ServiceKey) String() string {
	if k.FWMark != 0 {
		return fmt.Sprintf("FWM %d %s", k.FWMark, k.Family)
	}
	return k.Protocol.String() + " " + netip.AddrPortFrom(k.Addr, k.Port).String()
}

// Service is a virtual service as the kernel holds it.
type Service struct {
	ServiceKey
	Scheduler string // rr, wrr, lc, wlc, lblc, lblcr, dh, sh, sed, nq, fo, ovf, mh, twos
	Flags     ServiceFlags
	// Timeout is the persistence timeout (whole seconds), with Persistent.
	Timeout time.Duration
	// Netmask is the persistence granularity as a prefix length: clients
	// in one prefix of this length stick to one destination. Zero means
	// the whole address (32 or 128).
	Netmask int
	// PersistenceEngine is the name of a persistence engine ("sip"), or "".
	PersistenceEngine string

	// Read only: what the kernel reports.
	Stats Stats
}

// Destination is a real server of a service as the kernel holds it.
type Destination struct {
	Addr    netip.Addr
	Port    uint16
	Forward Forward
	Weight  int32
	// TableWeight is wanted only, for a destination of an ordered (mh)
	// service held at Weight 0: the weight the kernel builds its Maglev
	// table from, its last_weight, which the kernel keeps from the last
	// non-zero weight it was given and never reports. Diff adds such a
	// destination at TableWeight and sets it to 0 at once, so that the
	// table is the one of a director where it was up before it failed.
	TableWeight int32
	// UpperThreshold and LowerThreshold bound the destination's
	// connections; 0 means no bound.
	UpperThreshold uint32
	LowerThreshold uint32
	// Tunnel settings, for Forward Tunnel: the encapsulation (0 IPIP,
	// 1 GUE, 2 GRE), GUE's UDP port and the checksum flags.
	TunnelType  uint8
	TunnelPort  uint16
	TunnelFlags uint16

	// Counters is what the kernel reports of the destination's
	// connections and traffic, read only: set on a destination read from
	// the kernel, nil on one built to be sent. It is out of line so that
	// a table holds none of it: the director keeps every destination
	// twice (the wanted table and the reconciler's copy of the kernel's),
	// and 92 bytes of counters each, which neither reads, made more than
	// half of a destination's 152 bytes.
	Counters *DestCounters
}

// DestCounters are a destination's counters as the kernel reports them.
type DestCounters struct {
	ActiveConns   uint32
	InactiveConns uint32
	PersistConns  uint32
	Stats         Stats
}

// AddrPort is the destination's address and port.
func (d Destination) AddrPort() netip.AddrPort { return netip.AddrPortFrom(d.Addr, d.Port) }

// Stats are a service's or destination's counters and rates, as 64-bit
// values whatever the kernel's word size.
type Stats struct {
	Connections uint64
	PacketsIn   uint64
	PacketsOut  uint64
	BytesIn     uint64
	BytesOut    uint64
	CPS         uint64 // connections per second
	PPSIn       uint64
	PPSOut      uint64
	BPSIn       uint64 // bytes per second
	BPSOut      uint64
}

// Timeouts are the kernel's connection timeouts; zero means "leave
// unchanged" when setting them.
type Timeouts struct {
	TCP    time.Duration
	TCPFin time.Duration
	UDP    time.Duration
}

// SyncState is a sync daemon's role.
type SyncState uint32

// The sync daemon roles (IP_VS_STATE_*).
const (
	SyncMaster SyncState = 1
	SyncBackup SyncState = 2
)

func (s SyncState) String() string {
	switch s {
	case SyncMaster:
		return "master"
	case SyncBackup:
		return "backup"
	}
	return "state-" + strconv.Itoa(int(s))
}

// SyncDaemon is one of the kernel's connection sync daemons. A master
// sends the connections it schedules to a multicast group; a backup
// receives them. Zero values mean the kernel's defaults: version 1
// packets, maxlen from the interface MTU, group 224.0.0.81, port 8848,
// TTL 1.
type SyncDaemon struct {
	State     SyncState
	Interface string
	SyncID    uint8
	MaxLen    uint16     // the largest sync datagram's payload
	Group     netip.Addr // multicast group (IPv4 or IPv6)
	Port      uint16
	TTL       uint8
}

func (d SyncDaemon) String() string {
	return fmt.Sprintf("%s sync daemon on %s syncid %d", d.State, d.Interface, d.SyncID)
}

// Info is what the kernel says of its IPVS.
type Info struct {
	Version       uint32 // major<<16 | minor<<8 | patch
	ConnTableSize uint32
}

// VersionString is the version as ipvsadm prints it: "1.2.1".
func (i Info) VersionString() string {
	return fmt.Sprintf("%d.%d.%d", i.Version>>16, i.Version>>8&0xff, i.Version&0xff)
}
