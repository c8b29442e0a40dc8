package vrrp

import (
	"errors"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestNoticeOf checks what notify scripts are told (notify_deleted and
// notify_stop otherwise seen in TestNamespaceReload* and
// TestNotifyFIFOLines, as root).
func TestNoticeOf(t *testing.T) {
	tests := []struct {
		name                   string
		from, to               State
		deleted, notifyDeleted bool
		want                   string // "" for not told
	}{
		{"master", Backup, Master, false, false, "MASTER"},
		{"fault", Master, Fault, false, false, "FAULT"},
		{"stop", Master, Initialize, false, false, "STOP"},
		{"removed by a reload with notify_deleted", Master, Initialize, true, true, "DELETED"},
		{"removed by a reload: FAULT", Backup, Initialize, true, false, "FAULT"},
		{"removed while in fault: not told again", Fault, Initialize, true, false, ""},
		{"removed while in fault with notify_deleted", Fault, Initialize, true, true, "DELETED"},
		{"a removed instance's other transitions as ever", Backup, Master, true, true, "MASTER"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, tell := noticeOf(tt.from, tt.to, tt.deleted, tt.notifyDeleted)
			if !tell {
				got = ""
			} else if got == "" {
				t.Error("told an empty state")
			}
			if got != tt.want {
				t.Errorf("noticeOf = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestYieldTargets checks which instances a hand-over applies to (Node's
// Yield, which no test covered before).
func TestYieldTargets(t *testing.T) {
	cfg := planConf(t, "vrrp_sync_group G {\n group {\n VI_1\n VI_3\n }\n}\n"+
		inst("VI_1", "eth0", 51, 100, "")+inst("VI_2", "eth0", 52, 100, "")+
		inst("VI_3", "eth0", 53, 100, "")+inst("OWNER", "eth0", 54, 255, ""))
	members, _ := newSyncGroups(cfg.SyncGroups, cfg.Instances)
	tests := []struct {
		name string
		on   bool
		want []int
		err  string
	}{
		{"VI_1", true, []int{0, 2}, ""},
		{"VI_3", true, []int{2, 0}, ""},
		{"VI_2", true, []int{1}, ""},
		{"OWNER", true, nil, "OWNER owns its addresses (priority 255): it cannot hand them over"},
		{"OWNER", false, []int{3}, ""},
		{"", false, []int{0, 1, 2, 3}, ""},
		{"", true, nil, "OWNER owns its addresses (priority 255): it cannot hand them over"},
		{"nope", true, nil, "nope: no such VRRP instance"},
	}
	for _, tt := range tests {
		got, err := yieldTargets(cfg.Instances, members, tt.name, tt.on)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("%q on=%v: error %v, want %q", tt.name, tt.on, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q on=%v: %v", tt.name, tt.on, err)
		}
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("%q on=%v (-want +got):\n%s", tt.name, tt.on, d)
		}
	}
	if _, err := yieldTargets(cfg.Instances, members, "nope", false); !errors.Is(err, ErrNoInstance) {
		t.Errorf("unknown name: %v, want ErrNoInstance", err)
	}
}

// TestReportOf checks what Status reports of an instance: its machine's
// state, its counters, and its drops with its socket's added by reason.
func TestReportOf(t *testing.T) {
	var c counters
	c.sent.Store(7)
	c.received.Store(5)
	c.transitions.Store(2)
	c.since.Store(time.Unix(1000, 0).UnixNano())
	var own, sock [dropReasons]atomic.Uint64
	own[DropAuth].Store(3)
	own[DropAddrs].Store(1)
	sock[DropAuth].Store(2)
	sock[DropVRID].Store(4)
	primary := netip.MustParseAddr("192.0.2.1")
	master := netip.MustParseAddr("192.0.2.2")
	st := Status{State: Backup, Priority: 90, MasterAddr: master, Yielding: true}
	got := reportOf("VI_1", st, &c, primary, &own, &sock)
	want := InstanceStatus{Name: "VI_1", State: Backup, Priority: 90, MasterAddr: master, Yielding: true,
		Sent: 7, Received: 5, Transitions: 2, Since: time.Unix(1000, 0), Primary: primary,
		Drops: map[string]uint64{DropAuth.String(): 5, DropAddrs.String(): 1, DropVRID.String(): 4}}
	if d := cmp.Diff(want, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); d != "" {
		t.Errorf("reportOf (-want +got):\n%s", d)
	}

	// Before its first transition, its primary address unknown, no drops.
	got = reportOf("VI_2", Status{State: Initialize}, new(counters), netip.Addr{},
		new([dropReasons]atomic.Uint64), new([dropReasons]atomic.Uint64))
	want = InstanceStatus{Name: "VI_2", State: Initialize, Drops: map[string]uint64{}}
	if d := cmp.Diff(want, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); d != "" {
		t.Errorf("reportOf, fresh (-want +got):\n%s", d)
	}
}
