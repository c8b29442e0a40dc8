package lab

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/directord/directord/ipvs"
)

// WaitAnnounced waits, in the active lab, until the router's route to the
// VIP has exactly the directors ds as next hops, and each of them holds
// the service with every real server at weight 1 and runs both sync
// daemons (master and backup); it returns how long that took.
func (l *Lab) WaitAnnounced(ds []*Director, limit time.Duration) time.Duration {
	l.t.Helper()
	var want []netip.Addr
	var names []string
	for _, d := range ds {
		want = append(want, d.Addr)
		names = append(names, d.Name)
	}
	slices.SortFunc(want, netip.Addr.Compare)
	// Every 100 ms: the router and the directors are asked over netlink,
	// but BGP's pace is seconds, and the guest's one CPU is the lab's.
	return waitEvery(l.t, limit, askEvery, fmt.Sprintf("the router's next hops to the VIP %v, each with the whole table and both sync daemons", names), func() bool {
		if !slices.Equal(l.NextHops(), want) {
			return false
		}
		for _, d := range ds {
			if !d.Complete() || !d.SyncsBothWays() {
				return false
			}
		}
		return true
	})
}

// NextHops are the next hops of the router's kernel route to the VIP,
// sorted; none without a route (the active lab). Asked over netlink, not
// with frrtest's ip route: starting a program costs the guest tens of
// milliseconds of its one CPU, and a wait asks many times.
func (l *Lab) NextHops() []netip.Addr {
	routes, err := l.Router.NL.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Dst: hostNet(VIP), Table: unix.RT_TABLE_MAIN},
		netlink.RT_FILTER_DST|netlink.RT_FILTER_TABLE)
	if err != nil {
		return nil
	}
	var hops []netip.Addr
	add := func(ip net.IP) {
		if a, ok := netip.AddrFromSlice(ip); ok {
			hops = append(hops, a.Unmap())
		}
	}
	for _, r := range routes {
		if r.Dst == nil || r.Dst.String() != VIPPrefix.String() {
			continue
		}
		if r.Gw != nil {
			add(r.Gw)
		}
		for _, nh := range r.MultiPath {
			add(nh.Gw)
		}
	}
	slices.SortFunc(hops, netip.Addr.Compare)
	return hops
}

// Complete reports whether the director's kernel holds the service with
// every real server of its configuration, each at weight 1.
func (d *Director) Complete() bool {
	w := d.Weights()
	if len(w) != len(d.reals) {
		return false
	}
	for _, a := range d.reals {
		if w[a] != 1 {
			return false
		}
	}
	return true
}

// SyncsBothWays reports whether the director's kernel runs the master and
// the backup sync daemons, both with the lab's syncid (51): it sends the
// connections it schedules and hears the others'.
func (d *Director) SyncsBothWays() bool {
	var master, backup bool
	for _, s := range d.SyncDaemons() {
		if s.SyncID != 51 || s.Interface != "eth0" {
			continue
		}
		master = master || s.State == ipvs.SyncMaster
		backup = backup || s.State == ipvs.SyncBackup
	}
	return master && backup
}

// Scheduled is how many connections the director's kernel has scheduled
// on the service (not those it learnt by sync).
func (d *Director) Scheduled() uint64 {
	var err error
	for range 3 {
		var s ipvs.Service
		if s, err = d.ipvs.Service(ipvs.AddrKey(ipvs.TCP, ServiceAddress)); err == nil {
			return s.Stats.Connections
		}
		// Said, so that a count of 0 is told from a failed read.
		d.l.t.Logf("%s: reading the service's counters: %v", d.Name, err)
	}
	return 0
}

// CutLink pulls the director's cable out of the switch: its carrier goes
// (the router's does not), nothing it sends reaches anyone, and
// directord runs on.
func (d *Director) CutLink() { d.l.Switch.SetPort(d.l.t, d.Port, false) }

// MendLink plugs the cable back in.
func (d *Director) MendLink() { d.l.Switch.SetPort(d.l.t, d.Port, true) }

// Stopped waits up to limit for directord to end, and reports whether it
// did.
func (d *Director) Stopped(limit time.Duration) bool { return d.proc == nil || d.proc.Wait(limit) }
