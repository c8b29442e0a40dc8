package vrrp

import "testing"

func TestCheckRiseFall(t *testing.T) {
	c := NewCheck(2, 3, false)
	steps := []struct {
		success bool
		good    bool
		changed bool
	}{
		{false, true, false}, {false, true, false}, {true, true, false}, // a success resets the count
		{false, true, false}, {false, true, false}, {false, false, true}, // 3 failures: bad
		{true, false, false}, {false, false, false}, {true, false, false}, {true, true, true}, // 2 successes: good
	}
	for i, s := range steps {
		changed := c.Result(s.success)
		if changed != s.changed || c.Good() != s.good {
			t.Fatalf("step %d: changed %v good %v, want %v %v", i, changed, c.Good(), s.changed, s.good)
		}
	}
	if NewCheck(1, 1, true).Good() {
		t.Error("init_fail starts good")
	}
}

func TestEffective(t *testing.T) {
	tests := []struct {
		name    string
		prio    uint8
		tracked []Tracked
		want    uint8
		fault   bool
	}{
		{"nothing", 100, nil, 100, false},
		{"weight 0 up", 100, []Tracked{{Weight: 0, Good: true}}, 100, false},
		{"weight 0 down", 100, []Tracked{{Weight: 0, Good: false}}, 100, true},
		{"weight 0 reverse up", 100, []Tracked{{Weight: 0, Reverse: true, Good: true}}, 100, true},
		{"positive up", 100, []Tracked{{Weight: 20, Good: true}}, 120, false},
		{"positive down", 100, []Tracked{{Weight: 20, Good: false}}, 100, false},
		{"negative down", 100, []Tracked{{Weight: -60, Good: false}}, 40, false},
		{"negative up", 100, []Tracked{{Weight: -60, Good: true}}, 100, false},
		// Reversed weights are negated, as keepalived 2.2.7 does it
		// (measured: track_interface { IF weight 10 reverse } with IF up
		// takes priority 100 to 90).
		{"positive reverse up", 100, []Tracked{{Weight: 10, Reverse: true, Good: true}}, 90, false},
		{"positive reverse down", 100, []Tracked{{Weight: 10, Reverse: true, Good: false}}, 100, false},
		{"negative reverse up", 100, []Tracked{{Weight: -60, Reverse: true, Good: true}}, 100, false},
		{"negative reverse down", 100, []Tracked{{Weight: -60, Reverse: true, Good: false}}, 160, false},
		{"sum", 100, []Tracked{{Weight: 20, Good: true}, {Weight: -30, Good: false}, {Weight: 5, Good: true}}, 95, false},
		{"clamp high", 250, []Tracked{{Weight: 50, Good: true}}, 254, false},
		{"clamp low", 10, []Tracked{{Weight: -253, Good: false}}, 1, false},
		{"owner not adjusted", 255, []Tracked{{Weight: -50, Good: false}}, 255, false},
		{"owner in fault", 255, []Tracked{{Weight: 0, Good: false}}, 255, true},
	}
	for _, tt := range tests {
		p, f := Effective(tt.prio, tt.tracked)
		if p != tt.want || f != tt.fault {
			t.Errorf("%s: %d %v, want %d %v", tt.name, p, f, tt.want, tt.fault)
		}
	}
}
