package main

import (
	"context"
	"log/slog"
	"time"
)

// autoPriority is keepalived's max_auto_priority: each time directord's
// timers run more than minDelay late (the host did not schedule it),
// one step more of real-time priority: SCHED_RR 1 the first time (or
// vrrp_rt_priority's value + 1, when set), up to max.
type autoPriority struct {
	max      int
	minDelay time.Duration
	cur      int // the SCHED_RR priority now; 0 when not real-time
}

// late takes how late a timer ran and returns the SCHED_RR priority to
// set, if one is.
func (a *autoPriority) late(late time.Duration) (int, bool) {
	if a.max <= 0 || late <= a.minDelay {
		return 0, false
	}
	switch {
	case a.cur == 0:
		a.cur = 1 // sched_get_priority_min(SCHED_RR)
	case a.cur >= a.max:
		return 0, false
	default:
		a.cur++
	}
	return a.cur, true
}

// autoPriorityTick is how often the watch measures its own lateness.
const autoPriorityTick = 100 * time.Millisecond

// runAutoPriority watches its own timer's lateness until ctx ends and
// raises the process's priority as autoPriority says; rt is the priority
// vrrp_rt_priority set (0 if none).
func runAutoPriority(ctx context.Context, a *autoPriority, rt int, log *slog.Logger) {
	a.cur = rt
	t := time.NewTimer(autoPriorityTick)
	defer t.Stop()
	due := time.Now().Add(autoPriorityTick)
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			late := now.Sub(due)
			if p, ok := a.late(late); ok {
				log.Info("timers ran late: real-time priority raised", "late", late, "max_auto_priority", a.max, "sched_rr_priority", p)
				if err := setRealtime(p); err != nil {
					log.Warn("could not set real-time scheduling", "max_auto_priority", a.max, "err", err)
				}
			}
			due = time.Now().Add(autoPriorityTick)
			t.Reset(autoPriorityTick)
		}
	}
}
