package bgp

import (
	"errors"
	"net"
	"net/netip"

	"github.com/directord/directord/config"
)

// RouterID is cfg's router_id, else the IPv4 address this host reaches
// the first IPv4 neighbor from (its source_address if it has one; no
// packet is sent), else the first IPv4 address of an interface that is up
// and not loopback.
func RouterID(cfg *config.BGP) (netip.Addr, error) {
	if cfg.RouterID.IsValid() {
		return cfg.RouterID, nil
	}
	for _, n := range cfg.Neighbors {
		if !n.Addr.Is4() {
			continue
		}
		if n.SourceAddress.IsValid() {
			return n.SourceAddress, nil
		}
		c, err := net.Dial("udp4", netip.AddrPortFrom(n.Addr, 179).String())
		if err != nil {
			continue
		}
		a := c.LocalAddr().(*net.UDPAddr).AddrPort().Addr().Unmap()
		c.Close()
		return a, nil
	}
	ifs, err := net.Interfaces()
	if err != nil {
		return netip.Addr{}, err
	}
	for _, ifi := range ifs {
		if ifi.Flags&net.FlagUp == 0 || ifi.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, _ := ifi.Addrs()
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Is4() {
				return p.Addr(), nil
			}
		}
	}
	return netip.Addr{}, errors.New("no router_id given and no IPv4 address to take one from")
}
