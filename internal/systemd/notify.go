package systemd

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	"golang.org/x/sys/unix"
)

// Ready tells systemd that directord has started, or finished a reload.
func Ready() error {
	return notify(daemon.SdNotifyReady)
}

// Reloading tells systemd that directord is reloading its configuration;
// Ready must follow when the reload is over, whether it succeeded or kept
// the running configuration. The message carries MONOTONIC_USEC, the time
// of the reload on CLOCK_MONOTONIC, which Type=notify-reload requires (so
// that systemd can tell this reload from an earlier one) and Type=notify
// accepts.
func Reloading() error {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return fmt.Errorf("systemd: read CLOCK_MONOTONIC: %w", err)
	}
	usec := ts.Sec*1_000_000 + ts.Nsec/1_000
	return notify(daemon.SdNotifyReloading + "\nMONOTONIC_USEC=" + strconv.FormatInt(usec, 10))
}

// Stopping tells systemd that directord has begun its shutdown (priority 0
// adverts, removing its addresses), so that systemctl shows it as
// deactivating rather than dead or hung.
func Stopping() error {
	return notify(daemon.SdNotifyStopping)
}

// Status sets the one-line status that systemctl status shows. Newlines,
// which would end the message's field, become blanks.
func Status(msg string) error {
	msg = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(msg)
	return notify("STATUS=" + msg)
}

// Watchdog sends systemd's keep-alive pings until ctx ends, if the unit
// has a watchdog (WatchdogSec=, seen as WATCHDOG_USEC for this process);
// without one it returns at once. It pings at half the watchdog's interval,
// and only when healthy returns true: a daemon whose main loop is stuck
// must stop pinging so that systemd kills and restarts it, and healthy is
// how the daemon says its loop still turns. Pings resume when healthy is
// true again, so a stall shorter than the watchdog's interval costs
// nothing.
//
// A ping that cannot be sent is tried again at the next tick: missed pings
// are what systemd's watchdog judges. Watchdog returns nil when ctx ends,
// and an error only when the watchdog's settings cannot be read.
func Watchdog(ctx context.Context, healthy func() bool) error {
	interval, err := daemon.SdWatchdogEnabled(false)
	if err != nil {
		return fmt.Errorf("systemd: watchdog: %w", err)
	}
	if interval <= 0 {
		return nil
	}
	tick := time.NewTicker(interval / 2)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if healthy() {
				_ = notify(daemon.SdNotifyWatchdog)
			}
		}
	}
}

// notify sends one message; daemon.SdNotify sends nothing and reports no
// error when NOTIFY_SOCKET is unset.
func notify(state string) error {
	if _, err := daemon.SdNotify(false, state); err != nil {
		return fmt.Errorf("systemd: notify %q: %w", firstLine(state), err)
	}
	return nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
