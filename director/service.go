package director

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/directord/directord/config"
	"github.com/directord/directord/ipvs"
)

// serviceOf is the IPVS service a virtual server asks for, without its key.
func serviceOf(vs *config.VirtualServer) (ipvs.Service, error) {
	s := ipvs.Service{Scheduler: vs.Scheduler}
	for _, f := range vs.SchedFlags {
		switch f {
		case "flag-1", "sh-fallback", "mh-fallback":
			s.Flags |= ipvs.SchedFlag1
		case "flag-2", "sh-port", "mh-port":
			s.Flags |= ipvs.SchedFlag2
		case "flag-3":
			s.Flags |= ipvs.SchedFlag3
		default:
			return s, fmt.Errorf("scheduler flag %q", f)
		}
	}
	if vs.OPS {
		s.Flags |= ipvs.OnePacket
	}
	if p := vs.Persistence; p != nil {
		s.Flags |= ipvs.Persistent
		s.Timeout = p.Timeout
		s.PersistenceEngine = p.Engine
		if g := p.Granularity; g != "" {
			bits, err := granularity(g)
			if err != nil {
				return s, err
			}
			s.Netmask = bits
		}
	}
	return s, nil
}

// granularity is a persistence_granularity as a prefix length: a dotted
// IPv4 netmask or an IPv6 prefix length.
func granularity(g string) (int, error) {
	if strings.Contains(g, ".") {
		m, err := netip.ParseAddr(g)
		if err != nil || !m.Is4() {
			return 0, fmt.Errorf("persistence_granularity %q", g)
		}
		b := m.As4()
		v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
		n := 0
		for v&0x80000000 != 0 {
			n++
			v <<= 1
		}
		if v != 0 {
			return 0, fmt.Errorf("persistence_granularity %s is not a contiguous netmask", g)
		}
		return n, nil
	}
	n, err := strconv.Atoi(g)
	if err != nil || n < 1 || n > 128 {
		return 0, fmt.Errorf("persistence_granularity %q", g)
	}
	return n, nil
}

func protocolOf(p config.Protocol) ipvs.Protocol {
	switch p {
	case config.UDP:
		return ipvs.UDP
	case config.SCTP:
		return ipvs.SCTP
	}
	return ipvs.TCP
}

func familyOf(f config.Family) ipvs.Family {
	if f == config.Inet6 {
		return ipvs.IPv6
	}
	return ipvs.IPv4
}

// keysOf are the services a virtual server makes: one, or one per address
// of each range and per fwmark of its group.
func keysOf(cfg *config.Config, vs *config.VirtualServer) ([]ipvs.ServiceKey, error) {
	proto := protocolOf(vs.Protocol)
	switch {
	case vs.FWMark != 0:
		return []ipvs.ServiceKey{ipvs.MarkKey(familyOf(vs.Family), vs.FWMark)}, nil
	case vs.Group == "":
		return []ipvs.ServiceKey{ipvs.AddrKey(proto, vs.Addr)}, nil
	}
	var g *config.VirtualServerGroup
	for _, x := range cfg.VirtualServerGroups {
		if x.Name == vs.Group {
			g = x
		}
	}
	if g == nil {
		return nil, fmt.Errorf("virtual_server_group %s is not defined", vs.Group)
	}
	var keys []ipvs.ServiceKey
	for _, e := range g.Entries {
		if e.FWMark != 0 {
			f := familyOf(vs.Family)
			if e.Family != config.FamilyUnset {
				f = familyOf(e.Family)
			}
			keys = append(keys, ipvs.MarkKey(f, e.FWMark))
			continue
		}
		last := e.Last
		if !last.IsValid() {
			last = e.First
		}
		for a := e.First; a.IsValid() && a.Compare(last) <= 0; a = a.Next() {
			keys = append(keys, ipvs.AddrKey(proto, netip.AddrPortFrom(a, e.Port)))
			if len(keys) > 1<<16 {
				return nil, fmt.Errorf("virtual_server_group %s has more than 65536 services", vs.Group)
			}
		}
	}
	return keys, nil
}

// destOf is the destination a real server (or a sorry server) makes, at
// the given weight. A destination of a fwmark service has port 0 unless
// it was given one, as the kernel keeps what it is told.
func destOf(addr netip.AddrPort, m config.Method, weight int, uthr, lthr uint32) ipvs.Destination {
	d := ipvs.Destination{
		Addr:           addr.Addr().Unmap(),
		Port:           addr.Port(),
		Weight:         int32(weight),
		UpperThreshold: uthr,
		LowerThreshold: lthr,
	}
	switch m.Kind {
	case config.NAT:
		d.Forward = ipvs.Masquerade
	case config.TUN:
		d.Forward = ipvs.Tunnel
		switch m.TunType {
		case config.TunnelGUE:
			d.TunnelType, d.TunnelPort = 1, m.TunPort
		case config.TunnelGRE:
			d.TunnelType = 2
		}
		switch m.TunCsum {
		case config.Csum:
			d.TunnelFlags = 1
		case config.RemCsum:
			d.TunnelFlags = 2
		}
	default:
		d.Forward = ipvs.Route
	}
	return d
}

func netipPort(a netip.AddrPort, port uint16) netip.AddrPort {
	return netip.AddrPortFrom(a.Addr(), port)
}
