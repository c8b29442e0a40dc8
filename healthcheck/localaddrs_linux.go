package healthcheck

import (
	"context"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
)

// LocalAddrs follows the addresses of this host's interfaces through
// netlink address events, as keepalived's checker process does for
// ha_suspend (its netlink reflector). An address on two interfaces
// counts until it has left both.
type LocalAddrs struct {
	log     *slog.Logger
	mu      sync.Mutex
	set     map[localAddr]bool
	updates chan netlink.AddrUpdate
	done    chan struct{}
}

type localAddr struct {
	addr netip.Addr
	link int
}

// WatchLocalAddrs subscribes to the address events, then reads the
// addresses there are (an event that came in between is applied after,
// and so is not lost).
func WatchLocalAddrs(log *slog.Logger) (*LocalAddrs, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	l := &LocalAddrs{log: log, done: make(chan struct{})}
	if err := l.subscribe(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *LocalAddrs) subscribe() error {
	l.updates = make(chan netlink.AddrUpdate, 256)
	opts := netlink.AddrSubscribeOptions{ErrorCallback: func(err error) {
		l.log.Warn("ha_suspend: address subscription", "err", err)
	}}
	if err := netlink.AddrSubscribeWithOptions(l.updates, l.done, opts); err != nil {
		return err
	}
	list, err := netlink.AddrList(nil, netlink.FAMILY_ALL)
	if err != nil {
		return err
	}
	set := map[localAddr]bool{}
	for _, a := range list {
		if ip, ok := netip.AddrFromSlice(a.IP); ok {
			set[localAddr{ip.Unmap(), a.LinkIndex}] = true
		}
	}
	l.mu.Lock()
	l.set = set
	l.mu.Unlock()
	return nil
}

// Addrs are the host's addresses now.
func (l *LocalAddrs) Addrs() []netip.Addr {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []netip.Addr
	for k := range l.set {
		out = append(out, k.addr)
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return slices.Compact(out)
}

// Run applies the events until ctx ends, calling changed after each
// batch of them. A subscription that fails is made again a second later,
// with the addresses read afresh.
func (l *LocalAddrs) Run(ctx context.Context, changed func()) {
	defer close(l.done)
	for {
		select {
		case <-ctx.Done():
			return
		case u, ok := <-l.updates:
			if !ok {
				l.log.Warn("ha_suspend: address events lost; subscribing again")
				select {
				case <-ctx.Done():
					return
				case <-time.After(time.Second):
				}
				if err := l.subscribe(); err != nil {
					l.log.Error("ha_suspend: address subscription", "err", err)
					l.updates = nil // no events rather than a spinning loop
				}
				changed()
				continue
			}
			l.apply(u)
			// The rest of a burst (a VRRP master adds its VIPs together).
			for more := true; more; {
				select {
				case u, ok = <-l.updates:
					if !ok {
						more = false
						break
					}
					l.apply(u)
				default:
					more = false
				}
			}
			changed()
		}
	}
}

func (l *LocalAddrs) apply(u netlink.AddrUpdate) {
	ip, ok := netip.AddrFromSlice(u.LinkAddress.IP)
	if !ok {
		return
	}
	k := localAddr{ip.Unmap(), u.LinkIndex}
	l.mu.Lock()
	defer l.mu.Unlock()
	if u.NewAddr {
		l.set[k] = true
	} else {
		delete(l.set, k)
	}
}
