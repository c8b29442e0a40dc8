package vrrp

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/directord/directord/config"
)

// Routes installs an instance's virtual_routes while it is master and
// removes exactly those it installed.
type Routes struct {
	h     *netlink.Handle
	added *installed[string, *netlink.Route]
}

// NewRoutes returns a Routes working through h.
func NewRoutes(h *netlink.Handle) *Routes {
	return &Routes{h: h, added: newInstalled[string, *netlink.Route]()}
}

var routeTypes = map[string]int{
	"": unix.RTN_UNICAST, "unicast": unix.RTN_UNICAST, "local": unix.RTN_LOCAL, "broadcast": unix.RTN_BROADCAST,
	"anycast": unix.RTN_ANYCAST, "multicast": unix.RTN_MULTICAST, "blackhole": unix.RTN_BLACKHOLE,
	"unreachable": unix.RTN_UNREACHABLE, "prohibit": unix.RTN_PROHIBIT, "throw": unix.RTN_THROW,
	"nat": unix.RTN_NAT, "xresolve": unix.RTN_XRESOLVE,
}

var routeProtocols = map[string]int{"kernel": 2, "boot": 3, "static": 4, "ra": 9, "dhcp": 16, "keepalived": 18}

var routeScopes = map[string]netlink.Scope{"global": netlink.SCOPE_UNIVERSE, "site": netlink.SCOPE_SITE,
	"link": netlink.SCOPE_LINK, "host": netlink.SCOPE_HOST, "nowhere": netlink.SCOPE_NOWHERE}

// toRoute converts a configured route; dev is the instance's interface when
// the route names none.
func (r *Routes) toRoute(cr config.Route, dev string) (*netlink.Route, error) {
	rt := &netlink.Route{Dst: &net.IPNet{IP: cr.Dst.Addr().AsSlice(), Mask: net.CIDRMask(cr.Dst.Bits(), cr.Dst.Addr().BitLen())},
		Table: cr.Table, Priority: cr.Metric, Type: routeTypes[cr.Type]}
	if cr.Src.IsValid() {
		rt.Src = cr.Src.AsSlice()
	}
	if cr.Via.IsValid() {
		rt.Gw = cr.Via.AsSlice()
	}
	if cr.Dev != "" {
		dev = cr.Dev
	}
	if rt.Type == unix.RTN_UNICAST && dev != "" {
		l, err := r.h.LinkByName(dev)
		if err != nil {
			return nil, err
		}
		rt.LinkIndex = l.Attrs().Index
	}
	if s, ok := routeScopes[cr.Scope]; ok {
		rt.Scope = s
	} else if n, err := strconv.Atoi(cr.Scope); err == nil {
		rt.Scope = netlink.Scope(n)
	}
	if cr.Protocol == "" {
		// keepalived's netlink_route: RTPROT_KEEPALIVED unless given.
		rt.Protocol = netlink.RouteProtocol(routeProtocols["keepalived"])
	} else if p, ok := routeProtocols[cr.Protocol]; ok {
		rt.Protocol = netlink.RouteProtocol(p)
	} else if n, err := strconv.Atoi(cr.Protocol); err == nil {
		rt.Protocol = netlink.RouteProtocol(n)
	}
	if cr.OnLink {
		rt.Flags |= int(netlink.FLAG_ONLINK)
	}
	return rt, nil
}

// Add installs cr; a route already there is left alone and not claimed.
func (r *Routes) Add(cr config.Route, dev string) error {
	return r.added.add(routeKey(cr), func() (*netlink.Route, bool, error) {
		rt, err := r.toRoute(cr, dev)
		if err != nil {
			return nil, false, fmt.Errorf("route %s: %w", cr.Dst, err)
		}
		err = r.h.RouteAdd(rt)
		if errors.Is(err, syscall.EEXIST) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, fmt.Errorf("add route %s: %w", cr.Dst, err)
		}
		return rt, true, nil
	})
}

// Remove removes cr if Add installed it.
func (r *Routes) Remove(cr config.Route) error {
	return r.added.remove(routeKey(cr), func(rt *netlink.Route) error {
		if err := r.h.RouteDel(rt); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("remove route %s: %w", cr.Dst, err)
		}
		return nil
	})
}

// RemoveAll removes every route Add installed.
func (r *Routes) RemoveAll() error {
	return r.added.removeAll(func(_ string, rt *netlink.Route) error {
		if err := r.h.RouteDel(rt); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("remove route %s: %w", rt.Dst, err)
		}
		return nil
	})
}

// take moves the claim on the route old (as another Routes installed it)
// to r, as the route cur: the route stays and r will remove it. It reports
// whether from had installed it.
func (r *Routes) take(from *Routes, old, cur config.Route) bool {
	return r.added.take(from.added, routeKey(old), routeKey(cur))
}
