package healthcheck

import (
	"fmt"
	"strings"
	"testing"
)

// run feeds outcomes (u, d, ?) to a verdict and writes, per step, the
// state after it (U/D), a * where it changed, and r where the next probe
// is a retry.
func run(v *Verdict, outcomes string) string {
	var sb strings.Builder
	for _, c := range outcomes {
		o := map[rune]Outcome{'u': Up, 'd': Down, '?': Unknown}[c]
		changed, retry := v.Next(o)
		state := "D"
		if v.Up() {
			state = "U"
		}
		if changed {
			state += "*"
		}
		if retry {
			state += "r"
		}
		sb.WriteString(state + " ")
	}
	return strings.TrimSpace(sb.String())
}

func TestVerdict(t *testing.T) {
	tests := []struct {
		name              string
		retry, rise, fall int
		alpha             bool
		outcomes, want    string
	}{
		// keepalived: retry 2 means three failures in a row, the two
		// after the first spaced by delay_before_retry, once a success
		// has shown the real server works.
		{"down after retry+1", 2, 0, 0, false, "uddd", "U Ur Ur D*"},
		{"a success resets the count", 2, 0, 0, false, "uddudd", "U Ur Ur U Ur Ur"},
		{"down stays down without retries", 2, 0, 0, false, "uddddd", "U Ur Ur D* D D"},
		{"one success brings it back", 2, 0, 0, false, "udddu", "U Ur Ur D* U*"},
		{"retry 0: one failure", 0, 0, 0, false, "ud", "U D*"},
		// keepalived's start (check_data.c: retry_it = retry before the
		// first run): up on no evidence, down at the first failure.
		{"start: the first failure takes it down", 3, 0, 0, false, "d", "D*"},
		{"start: then one success brings it back", 3, 0, 0, false, "dudd", "D* U* Ur Ur"},
		{"start: unknown proves nothing", 3, 0, 0, false, "??d", "Ur Ur D*"},
		{"start with fall: the first failure too", 0, 0, 3, false, "d", "D*"},
		{"alpha starts down", 1, 0, 0, true, "du", "D U*"},
		{"unknown counts for nothing", 1, 0, 0, false, "ud??d", "U Ur Ur Ur D*"},
		{"unknown while down", 1, 0, 0, true, "??u", "Dr Dr U*"},
		// directord's rise and fall.
		{"fall 3 overrides retry", 0, 0, 3, false, "uddd", "U Ur Ur D*"},
		{"rise 2", 0, 2, 0, false, "duduuu", "D* Dr D Dr U* U"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := NewVerdict(tt.retry, tt.rise, tt.fall, tt.alpha)
			in := strings.ReplaceAll(tt.outcomes, " ", "")
			want := strings.Join(strings.Fields(tt.want), " ")
			if got := run(v, in); got != want {
				t.Errorf("%s:\n got %s\nwant %s", in, got, want)
			}
		})
	}
}

func ExampleVerdict() {
	v := NewVerdict(1, 0, 0, false)
	for _, o := range []Outcome{Up, Down, Down, Up} {
		changed, retry := v.Next(o)
		fmt.Println(o, "→ up:", v.Up(), "changed:", changed, "retry:", retry)
	}
	// Output:
	// up → up: true changed: false retry: false
	// down → up: true changed: false retry: true
	// down → up: false changed: true retry: false
	// up → up: true changed: true retry: false
}
