package vrrp

// LinkSeen is what the kernel says of an interface a VRRP socket is on:
// whether it exists, its index (for a deletion, the deleted link's), and
// its kind (a macvlan or not, and on which parent).
type LinkSeen struct {
	Exists  bool
	Index   int
	Macvlan bool
	Parent  string // a macvlan's parent, by name
}

// SockStep is what a VRRP socket does when its interface changes.
type SockStep int

const (
	// SockKeep: nothing to do.
	SockKeep SockStep = iota
	// SockClose: the interface is gone; the socket closes and its
	// instances are in FAULT until it comes back.
	SockClose
	// SockOpen: the interface is there and the socket is not open.
	SockOpen
	// SockReopen: the interface was made again (another index) and its
	// deletion was not seen (link updates lost): the socket closes, its
	// instances go through FAULT (what they held went with the old
	// interface), and it opens on the new one.
	SockReopen
	// SockRefuse: the interface came back as another kind (a macvlan
	// where there was none, or the other way round, or a macvlan on
	// another parent) without allow_if_changes: the socket stays closed,
	// its instances in FAULT, as keepalived's netlink_if_link_populate
	// refuses such an interface.
	SockRefuse
)

func (s SockStep) String() string {
	switch s {
	case SockKeep:
		return "keep"
	case SockClose:
		return "close"
	case SockOpen:
		return "open"
	case SockReopen:
		return "reopen"
	case SockRefuse:
		return "refuse"
	}
	return "unknown"
}

// sockStep decides what a socket does on a change of its interface, as
// keepalived 2.2.7's cleanup_lost_interface and update_added_interface:
// openIndex is the index the socket is open on (0: not open), first what
// the interface was when the socket first opened (Exists false: never),
// now what the kernel says of it now.
func sockStep(openIndex int, first, now LinkSeen, allowChanges bool) SockStep {
	if !now.Exists {
		// now.Index: the link deleted (0: none of that name now). A
		// deletion of an older link of the name, seen after the socket
		// opened on the new one, changes nothing.
		if openIndex != 0 && (now.Index == 0 || now.Index == openIndex) {
			return SockClose
		}
		return SockKeep
	}
	if openIndex != 0 && openIndex == now.Index {
		return SockKeep
	}
	if first.Exists && !allowChanges &&
		(first.Macvlan != now.Macvlan || (now.Macvlan && first.Parent != now.Parent)) {
		return SockRefuse
	}
	if openIndex != 0 {
		return SockReopen
	}
	return SockOpen
}
