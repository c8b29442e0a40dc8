package vrrp

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/directord/directord/config"
)

// This file translates an instance's configuration into what the run-time
// instance needs (the socket it shares, the machine's Params, the receive
// rules' Expect, the destinations of its adverts, its addresses per
// device), without sockets or netlink: node_linux.go opens what it names.

// sockSettings is what decides the socket an instance sends and hears
// adverts on.
type sockSettings struct {
	IPv6 bool
	// Unicast: the instance sends to unicast peers (or, with
	// unicast_fault_no_peer and none, to no one).
	Unicast bool
	// NoPeer: unicast_fault_no_peer with no unicast_peer at all: the
	// instance is always in FAULT. keepalived 2.2.7 with its own address
	// as its only peer runs, and becomes master (checked in a namespace):
	// only an empty list is FAULT.
	NoPeer bool
	// AH: auth_type AH (VRRPv2 over IPv4 only).
	AH bool
	// Group is the multicast group it joins; none when unicast.
	Group netip.Addr
	// Interface is the one it sends and hears adverts on (sendIf).
	Interface string
	// TTL is unicast_ttl, set on a unicast socket.
	TTL int
	// Key names the socket: instances with one key share it and are told
	// apart by VRID.
	Key string
}

// socketOf translates the settings of ci's socket.
func socketOf(cfg *config.Config, ci *config.Instance) sockSettings {
	s := sockSettings{IPv6: ci.Family == config.Inet6, Interface: sendIf(ci)}
	s.Unicast = len(ci.UnicastPeers) > 0
	if ci.UnicastFaultNoPeer && !s.Unicast {
		// keepalived: no peers and unicast_fault_no_peer is FAULT, not
		// multicast.
		s.Unicast, s.NoPeer = true, true
	}
	if !s.Unicast {
		s.Group = mcastGroup(cfg, ci)
	}
	s.AH = ci.Auth != nil && ci.Version == 2 && ci.Auth.Type == config.AuthAH && !s.IPv6
	s.Key = fmt.Sprintf("%s/%v/%s/ah=%v", s.Interface, s.IPv6, s.Group, s.AH)
	if s.Unicast {
		s.TTL = ci.UnicastTTL
		s.Key += fmt.Sprintf("/ttl=%d", ci.UnicastTTL)
	}
	return s
}

// sendIf is the interface an instance sends and hears adverts on: its
// macvlan for use_vmac, unless vmac_xmit_base (keepalived's
// vrrp_scheduler: the socket's interface), else its interface.
func sendIf(ci *config.Instance) string {
	if ci.VMAC != nil && !ci.VMAC.XmitBase {
		return ci.VMAC.Name
	}
	return ci.Interface
}

// configuredSrc is the source address ci's configuration gives its
// adverts (unicast_src_ip, else mcast_src_ip), if any; without one they
// come from the interface's own address.
func configuredSrc(ci *config.Instance) (netip.Addr, bool) {
	switch {
	case ci.UnicastSrcIP.IsValid():
		return ci.UnicastSrcIP, true
	case ci.MCastSrcIP.IsValid():
		return ci.MCastSrcIP, true
	}
	return netip.Addr{}, false
}

// advertSettings is what an instance sends and accepts, once its source
// address (primary) is known.
type advertSettings struct {
	Params Params
	Expect Expect
	// Dsts are where its adverts go: the group, or the unicast peers but
	// itself (one configuration often serves both peers).
	Dsts []netip.Addr
	// MCast is the group it listens to; none when unicast.
	MCast netip.Addr
	// VIPs are the addresses its adverts carry.
	VIPs []netip.Addr
	// AHKey is the HMAC key of auth_type AH (S.AH); the advert's
	// authentication field then stays zero.
	AHKey AHKey
	// AHTTL is the TTL the AH header's checksum is computed with: 255,
	// unicast_ttl for unicast.
	AHTTL uint8
	// Mode is its adverts' checksum: v3_checksum_as_v2 sums the message
	// alone, as VRRPv2 does.
	Mode ChecksumMode
}

// newAdvert is the advert with priority prio of an instance with the
// Params p and receive rules e (its interval and authentication), which
// carries the addresses vips.
func newAdvert(p *Params, e *Expect, vips []netip.Addr, prio uint8) Advert {
	return Advert{Version: p.Version, VRID: p.VRID, Priority: prio, Interval: e.Interval,
		AuthType: e.AuthType, AuthData: e.AuthData, Addrs: vips}
}

// expectFrom is what the instance expects of an advert from src, backup
// telling whether it is one: keepalived checks the addresses (and the
// unicast source and TTL range) of every advert, except, with
// skip_check_adv_addr, a backup's adverts from the master it heard last
// (last).
func expectFrom(e Expect, skipCheckAdvAddr, backup bool, src, last netip.Addr) Expect {
	if skipCheckAdvAddr && backup && src == last {
		e.CheckAddrs, e.CheckSource, e.MinTTL, e.MaxTTL = false, false, 0, 0
	}
	return e
}

// advertOf translates what ci sends and accepts on the socket s, its
// adverts coming from primary.
func advertOf(ci *config.Instance, s sockSettings, primary netip.Addr) advertSettings {
	var a advertSettings
	if s.Unicast {
		for _, p := range ci.UnicastPeers {
			if p.Addr != primary {
				a.Dsts = append(a.Dsts, p.Addr)
			}
		}
	} else {
		a.Dsts = []netip.Addr{s.Group}
		a.MCast = s.Group
	}
	for _, v := range ci.VIPs {
		a.VIPs = append(a.VIPs, v.Prefix.Addr())
	}
	a.Params = Params{
		Version: uint8(ci.Version), VRID: uint8(ci.VRID), Priority: uint8(ci.Priority),
		AdvertInt: ci.AdvertInt, Preempt: ci.Preempt, PreemptDelay: ci.PreemptDelay,
		Primary: primary, LowerPrioNoAdvert: ci.LowerPrioNoAdvert, HigherPrioSendAdvert: ci.HigherPrioSendAdvert,
		InitMaster: ci.State == config.Master,
		Garp: GarpParams{Repeat: ci.Garp.MasterRepeat, Delay: ci.Garp.MasterDelay,
			LowerPrioDelay: ci.Garp.LowerPrioDelay, LowerPrioRep: ci.Garp.LowerPrioRepeat,
			Refresh: ci.Garp.MasterRefresh, RefreshRepeat: ci.Garp.MasterRefreshRepeat},
	}
	a.Expect = Expect{Version: uint8(ci.Version), Interval: advertInterval(ci), Unicast: s.Unicast,
		CheckSource: ci.CheckUnicastSrc && s.Unicast, Addrs: a.VIPs, CheckAddrs: true}
	if ci.ChecksumAsV2 {
		a.Mode = MessageOnly
	}
	switch {
	case s.AH:
		a.Expect.AuthType = AuthAH
		a.AHKey = NewAHKey(ci.Auth.Pass)
		a.AHTTL = 255
		if s.Unicast {
			a.AHTTL = uint8(ci.UnicastTTL)
		}
	case ci.Auth != nil && ci.Version == 2:
		a.Expect.AuthType = AuthSimple
		copy(a.Expect.AuthData[:], ci.Auth.Pass)
	}
	for _, p := range ci.UnicastPeers {
		a.Expect.Peers = append(a.Expect.Peers, p.Addr)
		a.Expect.MinTTL = max(a.Expect.MinTTL, uint8(p.MinTTL))
		if p.MaxTTL > 0 {
			a.Expect.MaxTTL = uint8(p.MaxTTL)
		}
	}
	return a
}

// advertInterval is ci's advert interval in its version's unit: seconds
// for VRRPv2, centiseconds for VRRPv3.
func advertInterval(ci *config.Instance) uint16 {
	if ci.Version == 2 {
		return uint16(ci.AdvertInt / time.Second)
	}
	return uint16(ci.AdvertInt / (10 * time.Millisecond))
}

// devAddr is one of an instance's addresses with the device it goes on.
type devAddr struct {
	Dev string
	VIP config.VIP
}

// instanceAddrs lists ci's virtual_ipaddress and
// virtual_ipaddress_excluded, in that order, each with its device
// (config.Instance.AddrDev: its dev, else the instance's interface, its
// macvlan with use_vmac).
func instanceAddrs(ci *config.Instance) []devAddr {
	out := make([]devAddr, 0, len(ci.VIPs)+len(ci.ExcludedVIPs))
	for _, list := range [][]config.VIP{ci.VIPs, ci.ExcludedVIPs} {
		for _, v := range list {
			out = append(out, devAddr{Dev: ci.AddrDev(v), VIP: v})
		}
	}
	return out
}

// addrsByDev groups ci's addresses by their device: each is announced
// where it was added.
func addrsByDev(ci *config.Instance) map[string][]netip.Addr {
	out := map[string][]netip.Addr{}
	for _, a := range instanceAddrs(ci) {
		out[a.Dev] = append(out[a.Dev], a.VIP.Prefix.Addr())
	}
	return out
}
