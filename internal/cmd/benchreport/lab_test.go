package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLabRows reads the lab benchmarks' lines (make bench-lab) and makes
// their rows: the active lab's figure beside the pair's, with the ratio;
// the failed new connections as counts; the remap beside the ideal 1/N,
// the pair's rr said not meaningful.
func TestLabRows(t *testing.T) {
	out := `BenchmarkDirectorLoss/pair   	       1	  3.000 converged-s	  4.000 failed-new	 2.500 last-failure-s	  15.00 lost-cpu-%	  300.0 new	 1.200 slowest-new-s	  95.00 survived-%	 0 ns/op
BenchmarkDirectorLoss/active 	       1	  0.020 converged-s	  2.000 failed-new	 0.500 last-failure-s	  20.00 lost-cpu-%	  300.0 new	 1.100 slowest-new-s	  100.0 survived-%	 0 ns/op
BenchmarkRemap/pair          	       1	  44.64 between-old-%	  112.0 flows	  25.00 ideal-%	  70.54 remapped-%	  68.75 repeat-remapped-%	  25.89 to-new-%	 0 ns/op
BenchmarkRemap/active        	       1	  0 between-old-%	  120.0 flows	  25.00 ideal-%	  25.00 remapped-%	  0 repeat-remapped-%	  25.00 to-new-%	 0 ns/op
`
	r := &results{m: map[string]map[string]float64{}}
	if err := r.parse(strings.NewReader(out)); err != nil {
		t.Fatal(err)
	}
	rows := r.labRows()
	want := []struct{ figure, directord, reference, ratio, verdict string }{
		{"surviving on their real server", "100 %", "VRRP pair, master killed: 95.0 %", "1.05", "yes"},
		{"last new connection that failed", "0.50 s", "VRRP pair, master killed: 2.50 s", "0.20", ""},
		{"begun after the kill that failed", "2 of 300", "VRRP pair, master killed: 4 of 300", "0.50", ""},
		{"slowest new connection", "1.10 s", "VRRP pair, master killed: 1.20 s", "0.92", ""},
		{"route without that director", "0.02 s", "VRRP pair, master killed: 3.00 s", "0.01", ""},
		{"mh with mh-port", "25.0 %", "ideal, 1/N: 25.0 %", "1.00", ""},
		{"VRRP pair, rr", "70.5 %", "ideal, 1/N: 25.0 %", "2.82", ""},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d:\n%s", len(rows), len(want), r.table())
	}
	for i, w := range want {
		x := rows[i]
		if !strings.Contains(x.figure, w.figure) || x.directord != w.directord || x.reference != w.reference ||
			x.ratio != w.ratio || x.verdict != w.verdict || !x.guest {
			t.Errorf("row %d: %+v\nwant %+v", i, x, w)
		}
	}
	r.m["DirectorLoss/active"]["survived-%"] = 95
	if x := r.labRows(); !strings.Contains(x[0].verdict, "**no**: the machine withheld 20 % of the time") {
		t.Errorf("a survival short of all: %+v", x[0])
	}
	if !strings.Contains(rows[6].figure, "nothing changed: 68.8 % moved") || !strings.Contains(rows[6].aim, "not meaningful") {
		t.Errorf("the pair's remap row: %+v", rows[6])
	}
	if !strings.Contains(rows[5].figure, "25.0 % to the new one, 0 % among the old") {
		t.Errorf("the active lab's remap row: %+v", rows[5])
	}
}

// TestLabRowsOfRecord reads the committed run that docs/benchmarks.md
// quotes: every lab row has directord's figure and the reference's.
func TestLabRowsOfRecord(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile("../../../docs/bench-data/lab-2026-12-02.txt")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "lab.txt"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := load(dir)
	if err != nil {
		t.Fatal(err)
	}
	rows := r.labRows()
	if len(rows) != 7 {
		t.Fatalf("%d rows, want 7", len(rows))
	}
	for i, x := range rows {
		if !x.haveD || !x.hvR {
			t.Errorf("row %d without a figure: %+v", i, x)
		}
	}
}
