package bgp

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/directord/directord/config"
)

// StartOnly names the settings GoBGP takes at start only (local_as,
// router_id, listen_port) that differ between the running speaker,
// started with old and running as router ID running, and next ("" when
// none does), and gives the router ID next runs with: its router_id;
// without one, the running one if old had none either (derived once, it
// stays), else derived again (RouterID).
func StartOnly(old, next *config.BGP, running netip.Addr) (string, netip.Addr, error) {
	rid := next.RouterID
	switch {
	case rid.IsValid():
	case !old.RouterID.IsValid():
		rid = running
	default:
		var err error
		if rid, err = RouterID(next); err != nil {
			return "", running, fmt.Errorf("bgp: %w", err)
		}
	}
	var what []string
	if old.LocalAS != next.LocalAS {
		what = append(what, "local_as")
	}
	if rid != running {
		what = append(what, "router_id")
	}
	if old.ListenPort != next.ListenPort {
		what = append(what, "listen_port")
	}
	return strings.Join(what, ", "), rid, nil
}

// ErrOldSettings is in Reconfigure's error when the new start-only
// settings did not start and the speaker runs the old ones again.
var ErrOldSettings = errors.New("the old settings run again")

// Reconfigure moves the running speaker sp of announcer a from old (run
// as router ID running) to next, a reload's bgp block, and returns the
// router ID it runs with. A change to local_as, router_id or listen_port
// restarts the speaker (Announcer.Restart: every route withdrawn first,
// the addresses kept, then the sessions closed and opened again under
// the new identity); if the new settings do not start, the old ones are
// started again and the error says so. Otherwise only the neighbors that
// changed are added, removed or replaced (Speaker.Configure), the others'
// sessions untouched. in is the announcer's latest inputs; the caller
// then gives it the inputs of the new configuration (Set), which announce
// again.
func Reconfigure(ctx context.Context, sp Speaker, a *Announcer, in Inputs, old, next *config.BGP, running netip.Addr) (netip.Addr, error) {
	what, rid, err := StartOnly(old, next, running)
	if err != nil {
		return running, err
	}
	c := *next
	c.RouterID = rid
	if what == "" {
		if config.Canonical(old) == config.Canonical(next) {
			return running, nil
		}
		return running, sp.Configure(ctx, &c)
	}
	var restartErr error
	err = a.Restart(ctx, in, what, func(ctx context.Context) error {
		if err := sp.Stop(ctx); err != nil {
			a.log.Warn("bgp: restart: stopping the speaker", "err", err)
		}
		err := sp.Start(ctx, &c)
		if err == nil {
			return nil
		}
		o := *old
		o.RouterID = running
		if err2 := sp.Start(ctx, &o); err2 != nil {
			restartErr = fmt.Errorf("bgp: restart for %s: %w; and the old settings did not start again: %w", what, err, err2)
		} else {
			restartErr = fmt.Errorf("bgp: restart for %s: %w; %w", what, err, ErrOldSettings)
		}
		return restartErr
	})
	if restartErr != nil {
		return running, err
	}
	return rid, err
}
