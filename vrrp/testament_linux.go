package vrrp

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"slices"

	"github.com/vishvananda/netlink"
)

// A Testament is what must happen if this directord dies without its
// shutdown (SIGKILL, the OOM killer, a crash): each master instance's
// priority 0 adverts, ready to send, and the addresses directord added,
// to remove. A guardian process holds the latest one and carries it out
// the moment the daemon is gone (RunGuardian), so that the peer takes
// over within Skew_Time instead of Master_Down_Interval and no stale VIP
// stays behind.
type Testament struct {
	Adverts []WillAdvert `json:"adverts"`
	Addrs   []WillAddr   `json:"addrs"`
}

// WillAdvert is one priority 0 advert: its bytes, and where they go.
type WillAdvert struct {
	Instance  string     `json:"instance"`
	Interface string     `json:"interface"`
	IPv6      bool       `json:"ipv6"`
	Src       netip.Addr `json:"src"`
	Dst       netip.Addr `json:"dst"`
	Packet    []byte     `json:"packet"`
}

// WillAddr is an address directord added.
type WillAddr struct {
	Link   string       `json:"link"`
	Prefix netip.Prefix `json:"prefix"`
	Peer   netip.Addr   `json:"peer,omitzero"`
}

// OnTestament makes the Node call f with a new Testament after every
// change of what it holds (a transition to or from master); f must not
// block. Call it before Run.
func (n *Node) OnTestament(f func(Testament)) { n.will = f }

// bequeath hands the current Testament to OnTestament's function. The
// lock keeps two instances' transitions from handing over in the wrong
// order.
func (n *Node) bequeath() {
	n.willMu.Lock()
	defer n.willMu.Unlock()
	if n.will == nil {
		return
	}
	var t Testament
	for _, in := range n.insts {
		if State(in.state.Load()) != Master {
			continue
		}
		if in.ah != nil {
			// An AH advert needs a sequence number above the last one
			// sent, which the testament, written at transitions, cannot
			// know: the peer takes over after Master_Down_Interval.
			continue
		}
		a := newAdvert(&in.params, &in.expect, in.vips, 0)
		for _, dst := range in.dsts {
			b, err := a.AppendMarshal(nil, in.primary, dst, in.mode)
			if err != nil {
				continue
			}
			t.Adverts = append(t.Adverts, WillAdvert{Instance: in.cfg.Name, Interface: sendIf(in.cfg),
				IPv6: in.sock.ipv6, Src: in.primary, Dst: dst, Packet: b})
		}
	}
	t.Addrs = n.addrs.will()
	n.will(t)
}

// will lists the addresses Add added.
func (m *Addrs) will() []WillAddr {
	var out []WillAddr
	m.added.each(func(k addrKey, a *netlink.Addr) {
		w := WillAddr{Link: k.link, Prefix: k.prefix}
		if a.Peer != nil {
			w.Peer, _ = netip.AddrFromSlice(a.Peer.IP)
			w.Peer = w.Peer.Unmap()
		}
		out = append(out, w)
	})
	slices.SortFunc(out, func(a, b WillAddr) int { return a.Prefix.Addr().Compare(b.Prefix.Addr()) })
	return out
}

// GuardianMessage is one line from the daemon to its guardian: a new
// Testament, or Bye for a clean stop (the guardian then leaves without
// doing anything).
type GuardianMessage struct {
	Testament *Testament `json:"testament,omitempty"`
	Bye       bool       `json:"bye,omitempty"`
}

// ErrDaemonDied is RunGuardian's answer when the pipe ended without Bye,
// wrapping any failure of what it did then.
var ErrDaemonDied = errors.New("directord died without its shutdown")

// RunGuardian reads the daemon's messages from r (a pipe whose other end
// only the daemon holds) until it ends. A Bye, or no testament, ends it
// quietly; an end without Bye means the daemon died: the last Testament
// is carried out at once (adverts first: they decide how soon the peer
// takes over). The sockets are opened as each testament arrives, so that
// nothing is left to open when time counts. It runs in the daemon's
// network namespace, with its privileges.
func RunGuardian(r io.Reader, h *netlink.Handle, log *slog.Logger) error {
	var last *Testament
	conns := map[string]*Conn{}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	// A decoder has no line limit: only the pipe's end stops it, and
	// only a clean end (EOF) is the daemon's death.
	dec := json.NewDecoder(bufio.NewReader(r))
	for {
		var m GuardianMessage
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break // the daemon is gone, maybe in the middle of a message
		}
		if err != nil {
			// Not a death: a guardian that cannot follow the daemon
			// must not act for it. The daemon restarts one that ends.
			return fmt.Errorf("guardian: cannot read the daemon's messages, leaving without acting: %w", err)
		}
		if m.Bye {
			return nil
		}
		if m.Testament != nil {
			last = m.Testament
			for _, a := range last.Adverts {
				k := fmt.Sprint(a.Interface, a.IPv6)
				if conns[k] != nil {
					continue
				}
				c, err := OpenConn(a.Interface, a.IPv6, netip.Addr{})
				if err != nil {
					log.Error("guardian: cannot open a VRRP socket", "interface", a.Interface, "err", err)
					continue
				}
				conns[k] = c
			}
		}
	}
	// The pipe ended without Bye: the daemon is gone.
	if last == nil || (len(last.Adverts) == 0 && len(last.Addrs) == 0) {
		return ErrDaemonDied
	}
	var errs []error
	for _, a := range last.Adverts {
		c := conns[fmt.Sprint(a.Interface, a.IPv6)]
		if c == nil {
			continue
		}
		if err := c.Write(a.Packet, a.Src, a.Dst); err != nil {
			errs = append(errs, fmt.Errorf("priority 0 advert of %s to %s: %w", a.Instance, a.Dst, err))
		}
	}
	for _, a := range last.Addrs {
		l, err := h.LinkByName(a.Link)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		na := &netlink.Addr{IPNet: &net.IPNet{IP: a.Prefix.Addr().AsSlice(), Mask: net.CIDRMask(a.Prefix.Bits(), a.Prefix.Addr().BitLen())}}
		if a.Peer.IsValid() {
			na.Peer = &net.IPNet{IP: a.Peer.AsSlice(), Mask: net.CIDRMask(a.Peer.BitLen(), a.Peer.BitLen())}
		}
		if err := h.AddrDel(l, na); err != nil {
			errs = append(errs, fmt.Errorf("remove %s from %s: %w", a.Prefix, a.Link, err))
		}
	}
	log.Warn("guardian: directord died without its shutdown: its master instances handed over with priority 0 adverts and its addresses removed",
		"adverts", len(last.Adverts), "addresses", len(last.Addrs), "err", errors.Join(errs...))
	return errors.Join(append([]error{ErrDaemonDied}, errs...)...)
}
