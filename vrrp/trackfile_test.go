package vrrp

import (
	"testing"

	"github.com/directord/directord/config"
)

// TestFileStatus: keepalived's arithmetic for a tracked file's value.
func TestFileStatus(t *testing.T) {
	tests := []struct {
		value   int64
		weight  int
		reverse bool
		delta   int
		fault   bool
	}{
		{0, 0, false, 0, false},
		{1, 0, false, 0, true},
		{-3, 0, false, 0, true},
		{0, 0, true, 0, true}, // reversed: zero is the failure
		{5, 0, true, 0, false},
		{10, 1, false, 10, false},
		{10, -2, false, -20, false},
		{10, 2, true, -20, false},
		{-253, 1, false, -253, false},
		{-254, 1, false, 0, true}, // -254 and below: FAULT
		{127, -2, false, 0, true},
		{300, 1, false, 253, false}, // above 253 counts as 253
		{1 << 31, 254, false, 253, false},
		{-(1 << 31), 254, false, 0, true},
	}
	for _, tt := range tests {
		d, f := FileStatus(tt.value, tt.weight, tt.reverse)
		if d != tt.delta || f != tt.fault {
			t.Errorf("FileStatus(%d, weight %d, reverse %v) = %d, fault %v; want %d, fault %v", tt.value, tt.weight, tt.reverse, d, f, tt.delta, tt.fault)
		}
	}
}

// TestFileEffectivePriority: the file's delta is summed with the other
// tracked things before the priority is held within 1..254.
func TestFileEffectivePriority(t *testing.T) {
	tests := []struct {
		name    string
		prio    uint8
		value   int64
		weight  int
		reverse bool
		want    uint8
		fault   bool
	}{
		{"raised", 100, 20, 1, false, 120, false},
		{"lowered", 100, 3, -10, false, 70, false},
		{"zero adds nothing", 100, 0, 5, false, 100, false},
		{"held at 254", 200, 100, 1, false, 254, false},
		{"held at 1", 100, -200, 1, false, 1, false},
		{"fault", 100, 1, 0, false, 100, true},
	}
	for _, tt := range tests {
		p, f := Effective(tt.prio, []Tracked{fileTracked(tt.value, tt.weight, tt.reverse), {Weight: -5, Good: true}})
		if p != tt.want || f != tt.fault {
			t.Errorf("%s: priority %d fault %v, want %d %v", tt.name, p, f, tt.want, tt.fault)
		}
	}
}

// TestParseFileValue: strtol(buf, NULL, 0) as keepalived calls it.
func TestParseFileValue(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"", 0, true},
		{"5\n", 5, true},
		{"  -12 trailing", -12, true},
		{"+7", 7, true},
		{"0x1f", 31, true},
		{"0X1F\n", 31, true},
		{"010", 8, true},
		{"0x", 0, true}, // "0" then junk
		{"09", 0, true}, // octal 0, then 9 is not a digit
		{"abc", 0, true},
		{"2147483648", 1 << 31, true}, // keepalived's INT32_MAX + 1 is allowed
		{"2147483649", 0, false},
		{"-2147483648", -(1 << 31), true},
		{"-2147483649", 0, false},
		{"99999999999999999999999", 0, false},
	}
	for _, tt := range tests {
		got, ok := ParseFileValue([]byte(tt.in))
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseFileValue(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

// TestFileUses: a sync group's entries merged into a member's.
func TestFileUses(t *testing.T) {
	in := &config.Instance{TrackFiles: []config.TrackFileUse{{Name: "a", Weight: 0}, {Name: "b", Weight: 3}}}
	g := &config.SyncGroup{TrackFiles: []config.TrackFileUse{{Name: "a", Weight: 7}, {Name: "b", Weight: -2, Reverse: true}, {Name: "c", Weight: 1}}}
	got := FileUses(in, g)
	want := []config.TrackFileUse{{Name: "a", Weight: 0}, {Name: "b", Weight: -2, Reverse: true}, {Name: "c", Weight: 1}}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].Name != want[i].Name || got[i].Weight != want[i].Weight || got[i].Reverse != want[i].Reverse {
			t.Errorf("entry %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	if len(in.TrackFiles) != 2 || in.TrackFiles[1].Weight != 3 {
		t.Error("FileUses changed the instance's own list")
	}
}
