// Package systemd tells systemd how directord is doing, for a unit of
// Type=notify (dist/directord.service): when it is ready, when it reloads
// and is ready again, when it stops, a one-line status, and the watchdog's
// keep-alive pings.
//
// Every function is a no-op when NOTIFY_SOCKET is unset, so the daemon
// calls them unconditionally, whether systemd started it or not:
//
//	systemd.Ready()
//	go systemd.Watchdog(ctx, loopAlive)
//	...
//	case <-sighup:
//		systemd.Reloading()
//		reload()
//		systemd.Ready()
//	...
//	systemd.Stopping()
//
// The messages go through go-systemd's daemon package, which reads the
// environment at each call. Child processes (check and notify scripts)
// inherit NOTIFY_SOCKET, WATCHDOG_USEC and WATCHDOG_PID; the unit's
// NotifyAccess=main makes systemd ignore anything they send, and
// WATCHDOG_PID tells them the watchdog is not theirs.
package systemd
