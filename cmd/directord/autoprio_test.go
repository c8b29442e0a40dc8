package main

import (
	"testing"
	"time"
)

// TestAutoPriority steps as keepalived's increment_process_priority: to
// SCHED_RR 1 at the first lateness over min_auto_priority_delay, one more
// at each next, never above max_auto_priority, never for lateness at or
// under the delay, never when max_auto_priority is 0; from
// vrrp_rt_priority's value when set.
func TestAutoPriority(t *testing.T) {
	type step struct {
		late time.Duration
		want int // 0: no change
	}
	tests := []struct {
		name  string
		max   int
		rt    int
		steps []step
	}{
		{"off", 0, 0, []step{{5 * time.Second, 0}}},
		{"up to max", 3, 0, []step{{time.Second, 0}, {1001 * time.Millisecond, 1}, {2 * time.Second, 2},
			{10 * time.Millisecond, 0}, {3 * time.Second, 3}, {3 * time.Second, 0}}},
		{"from vrrp_rt_priority", 10, 8, []step{{2 * time.Second, 9}, {2 * time.Second, 10}, {2 * time.Second, 0}}},
		{"vrrp_rt_priority above max", 5, 20, []step{{2 * time.Second, 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &autoPriority{max: tt.max, minDelay: time.Second, cur: tt.rt}
			for i, s := range tt.steps {
				p, ok := a.late(s.late)
				if !ok {
					p = 0
				}
				if p != s.want {
					t.Errorf("step %d (%v late): priority %d, want %d", i, s.late, p, s.want)
				}
			}
		})
	}
}
