package vrrp

import (
	"net"
	"net/netip"
)

// srcAbsent reports whether a is no address of this host (the thread's
// namespace): keepalived binds its unicast receive socket to the
// configured source, fails, and holds the instance in FAULT ("src address
// not configured"), with or without track_src_ip.
func srcAbsent(a netip.Addr) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false // cannot tell: as before, try to run
	}
	for _, x := range addrs {
		if ipn, ok := x.(*net.IPNet); ok {
			if b, ok := netip.AddrFromSlice(ipn.IP); ok && b.Unmap() == a.WithZone("") {
				return false
			}
		}
	}
	return true
}
