package main

import (
	"strings"
	"testing"
)

// TestBGPFailoverRows reads a committed run of the BGP+BFD benchmark and
// VRRP's failover: two rows, BGP+BFD over each VRRP version, each with
// its ratio and both bounds.
func TestBGPFailoverRows(t *testing.T) {
	r, _ := loadRun(t, "failover-bgp-2026-12-02.txt")
	var rows []row
	for _, x := range r.rows() {
		if strings.HasPrefix(x.figure, "failover, BGP+BFD") && x.haveD {
			rows = append(rows, x)
		}
	}
	if len(rows) != 2 {
		t.Fatalf("%d BGP rows, want 2:\n%s", len(rows), r.table())
	}
	for i, want := range []string{"VRRPv3, advert 100 ms", "VRRPv2, advert 1 s"} {
		x := rows[i]
		if !strings.Contains(x.figure, want) || !strings.Contains(x.figure, "Master_Down_Interval") || x.ratio == "" ||
			!strings.Contains(x.aim, "300 ms") || x.verdict == "" {
			t.Errorf("row %d: %+v", i, x)
		}
	}
}
