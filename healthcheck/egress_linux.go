package healthcheck

import (
	"errors"
	"net"
	"net/netip"
	"syscall"

	"github.com/vishvananda/netlink"
)

// EgressDown tells whether this director's own way to addr is broken: no
// route to it, or the route's interface down or without carrier. A probe
// that failed so proves nothing of the real server. It asks the kernel,
// in the calling thread's network namespace.
func EgressDown(addr netip.Addr) (string, bool) {
	routes, err := netlink.RouteGet(net.IP(addr.Unmap().AsSlice()))
	if err != nil {
		if errors.Is(err, syscall.ENETUNREACH) || errors.Is(err, syscall.EHOSTUNREACH) {
			return "this director has no route to " + addr.String(), true
		}
		return "", false
	}
	if len(routes) == 0 {
		return "this director has no route to " + addr.String(), true
	}
	link, err := netlink.LinkByIndex(routes[0].LinkIndex)
	if err != nil {
		return "", false
	}
	a := link.Attrs()
	switch {
	case a.Flags&net.FlagUp == 0:
		return "this director's interface " + a.Name + " is down", true
	case a.Name != "lo" && a.RawFlags&syscall.IFF_RUNNING == 0:
		return "this director's interface " + a.Name + " has no carrier", true
	}
	return "", false
}
