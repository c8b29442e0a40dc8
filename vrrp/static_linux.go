package vrrp

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/directord/directord/config"
)

// Statics holds a configuration's static_ipaddress, static_routes and
// static_rules from start to stop, whatever the VRRP instances' states, as
// keepalived 2.2.7's VRRP process holds them:
//
//   - at start, the rules are first removed (a leftover of a run that
//     ended without its stop), then addresses, routes and rules are added;
//     an address or route already there is left alone and not claimed, as
//     keepalived leaves it;
//   - a static address deleted by someone else is added again at once,
//     unless no_track;
//   - when an interface comes up (IFF_UP and IFF_RUNNING), the static
//     addresses and routes on it (those that name it as dev) are added
//     again, unless no_track: a link that went down took its routes, and
//     its IPv6 addresses, with it;
//   - a static route or rule deleted by someone else stays deleted, as in
//     keepalived, which follows those only for a track_group;
//   - a reload (Apply) removes those the new file no longer has and adds
//     the new ones; an entry written in both stays untouched;
//   - at stop (Close), the rules, then routes, then addresses it added are
//     removed.
//
// The interfaces the entries name must exist (CheckInterfaces): an entry
// that cannot be added all the same (its interface deleted in between) is
// logged, and an address or a route with dev is added when its interface
// comes up.
//
// # Network namespaces
//
// NewStatics must run on a thread inside the namespace whose netlink
// handle it is given: its subscription belongs to the calling thread's
// namespace (see linkWatch).
type Statics struct {
	log    *slog.Logger
	addrs  *Addrs
	routes *Routes
	rules  *Rules

	mu      sync.Mutex // Apply, repair and Close, one at a time
	cfg     staticSet
	started bool
	closed  bool

	sock *nl.NetlinkSocket
	// What the reader saw that calls for a repair, taken by repairs.
	pendMu    sync.Mutex
	pendAddrs bool            // a static address may have been deleted
	pendLinks map[string]bool // interfaces that came up
	pendAll   bool            // messages were lost: everything
	up        map[int32]bool  // the reader's view of each link
	kick      chan struct{}
	stop      chan struct{}
	done      chan struct{}
}

// staticGroups are the rtnetlink groups Statics follows.
var staticGroups = []uint{unix.RTNLGRP_LINK, unix.RTNLGRP_IPV4_IFADDR, unix.RTNLGRP_IPV6_IFADDR}

// NewStatics returns a Statics working through h, holding nothing yet.
func NewStatics(h *netlink.Handle, log *slog.Logger) (*Statics, error) {
	s := &Statics{log: log, addrs: NewAddrs(h), routes: NewRoutes(h), rules: NewRules(h),
		pendLinks: map[string]bool{}, up: map[int32]bool{},
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	sock, err := nl.Subscribe(unix.NETLINK_ROUTE, staticGroups...)
	if err != nil {
		return nil, fmt.Errorf("static entries: subscribe: %w", err)
	}
	sock.SetReceiveBufferSize(linkWatchBuffer, false)
	s.sock = sock
	// The links' state now, so that only a change to up counts.
	if links, err := h.LinkList(); err == nil || errors.Is(err, netlink.ErrDumpInterrupted) {
		for _, l := range links {
			s.up[int32(l.Attrs().Index)] = flagsUp(l.Attrs().RawFlags)
		}
	}
	go s.read()
	go s.repairs()
	return s, nil
}

func flagsUp(f uint32) bool { return f&(unix.IFF_UP|unix.IFF_RUNNING) == unix.IFF_UP|unix.IFF_RUNNING }

// read notes every address deletion and every link coming up.
func (s *Statics) read() {
	defer close(s.kick)
	for {
		msgs, from, err := s.sock.Receive()
		select {
		case <-s.stop:
			return
		default:
		}
		if err != nil {
			if errors.Is(err, os.ErrClosed) {
				return
			}
			s.note(func() { s.pendAll = true }) // ENOBUFS: something was lost
			continue
		}
		if from.Pid != nl.PidKernel {
			continue
		}
		for _, m := range msgs {
			switch m.Header.Type {
			case unix.RTM_DELADDR:
				s.note(func() { s.pendAddrs = true })

			case unix.RTM_NEWLINK, unix.RTM_DELLINK:
				h := unix.NlMsghdr(m.Header)
				l, err := netlink.LinkDeserialize(&h, m.Data)
				if err != nil {
					continue
				}
				a := l.Attrs()
				up := m.Header.Type == unix.RTM_NEWLINK && flagsUp(a.RawFlags)
				was := s.up[int32(a.Index)]
				s.up[int32(a.Index)] = up
				if m.Header.Type == unix.RTM_DELLINK {
					delete(s.up, int32(a.Index))
				}
				if up && !was {
					s.note(func() { s.pendLinks[a.Name] = true })
				}
			}
		}
	}
}

func (s *Statics) note(f func()) {
	s.pendMu.Lock()
	f()
	s.pendMu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

func (s *Statics) repairs() {
	defer close(s.done)
	for range s.kick {
		s.pendMu.Lock()
		addrs, links, all := s.pendAddrs, s.pendLinks, s.pendAll
		s.pendAddrs, s.pendLinks, s.pendAll = false, map[string]bool{}, false
		s.pendMu.Unlock()
		s.repair(addrs || all, func(dev string) bool { return all || links[dev] })
	}
}

// repair adds again the tracked static addresses (addrs), and the
// tracked addresses and routes on the interfaces that came up (onLink).
func (s *Statics) repair(addrs bool, onLink func(dev string) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started || s.closed {
		return
	}
	for _, v := range s.cfg.addrs {
		if !v.NoTrack && (addrs || onLink(v.Dev)) {
			s.logErr("static address", s.addrs.Add(v.Dev, v))
		}
	}
	// keepalived tracks no route without dev ("cannot track route with
	// no interface specified").
	for _, r := range s.cfg.routes {
		if !r.NoTrack && r.Dev != "" && onLink(r.Dev) {
			s.logErr("static route", s.routes.Add(r, ""))
		}
	}
}

// Apply makes the held entries those of cfg (at the first call, as at
// start; then as a reload).
func (s *Statics) Apply(cfg *config.Config) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	next := staticSet{addrs: cfg.StaticAddresses, routes: cfg.StaticRoutes, rules: cfg.StaticRules}
	if !s.started {
		for _, r := range next.rules {
			if err := s.rules.Clear(r); err != nil {
				s.log.Warn("static rule: clearing a leftover", "err", err)
			}
		}
	} else {
		s.removeGone(next)
	}
	s.cfg, s.started = next, true
	s.addAll()
}

// removeGone removes what Apply added that next does not have (or has
// otherwise), rules first, and re-keys the routes that only moved.
func (s *Statics) removeGone(next staticSet) {
	p := planStatics(s.cfg, next)
	for _, r := range p.removeRules {
		s.logErr("static rule", s.rules.Remove(r))
	}
	for _, r := range p.routes {
		if r.moved {
			s.routes.take(s.routes, r.old, r.cur)
		} else {
			s.logErr("static route", s.routes.Remove(r.old))
		}
	}
	for _, v := range p.removeAddrs {
		s.logErr("static address", s.addrs.Remove(v.Dev, v))
	}
}

// addAll adds the entries, addresses first (routes may use them as their
// source), then routes, then rules; an entry already there is left as it
// is.
func (s *Statics) addAll() {
	for _, v := range s.cfg.addrs {
		s.logErr("static address", s.addrs.Add(v.Dev, v))
	}
	for _, r := range s.cfg.routes {
		s.logErr("static route", s.routes.Add(r, ""))
	}
	for _, r := range s.cfg.rules {
		s.logErr("static rule", s.rules.Add(r))
	}
}

func (s *Statics) logErr(what string, err error) {
	if err != nil {
		s.log.Error(what, "err", err)
	}
}

// Close stops following changes and removes every entry Statics added:
// rules, then routes, then addresses.
func (s *Statics) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	close(s.stop)
	s.sock.Close()
	<-s.done
	return errors.Join(s.rules.RemoveAll(), s.routes.RemoveAll(), s.addrs.RemoveAll())
}

// CheckInterfaces reports the interfaces that cfg's static entries and
// virtual rules name and that h's namespace lacks, each with the line
// that names it. keepalived (without dynamic_interfaces) refuses such a
// configuration whole: "Non-existent interface specified in
// configuration", its VRRP process exits; directord refuses to start
// with it, and refuses a reload to it.
func CheckInterfaces(h *netlink.Handle, cfg *config.Config) error {
	var errs []error
	seen := map[string]bool{}
	check := func(pos config.Pos, what, dev string) {
		if dev == "" || seen[dev] {
			return
		}
		if _, err := h.LinkByName(dev); err != nil {
			seen[dev] = true
			errs = append(errs, fmt.Errorf("%s: %s: interface %s does not exist", pos, what, dev))
		}
	}
	for _, v := range cfg.StaticAddresses {
		check(v.Pos, "static_ipaddress", v.Dev)
	}
	for _, r := range cfg.StaticRoutes {
		check(r.Pos, "static_routes", r.Dev)
	}
	for _, r := range cfg.StaticRules {
		check(r.Pos, "static_rules", r.IIf)
		check(r.Pos, "static_rules", r.OIf)
	}
	for _, in := range cfg.Instances {
		for _, r := range in.Rules {
			check(r.Pos, "virtual_rules", r.IIf)
			check(r.Pos, "virtual_rules", r.OIf)
		}
	}
	return errors.Join(errs...)
}
