package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestChecksRowsAndPlot reads committed health-check runs: every size
// gives its rows, whichever daemons ran it (one run has directord with
// reuse_connection alone), and the plot is drawn, from the whole guest's
// CPU where the run has it.
func TestChecksRowsAndPlot(t *testing.T) {
	for _, c := range []struct {
		file  string
		sizes int
		rows  string // a figure every size must have
	}{
		{"checks-spinner-2026-12-01-8700d3b.txt", 4, "(SSL_GET every 2 s): the whole guest's CPU per check served"},
		{"checks-reuse-2026-12-01-feedef5.txt", 5, "directord with reuse_connection 60 (keepalived: a connection per probe): CPU per check served"},
		{"checks-2026-12-01-cdc673f.txt", 5, "(SSL_GET every 2 s): CPU per check served"},
	} {
		t.Run(c.file, func(t *testing.T) {
			r, dir := loadRun(t, c.file)
			if n := len(r.checkSizes()); n != c.sizes {
				t.Errorf("%d sizes, want %d", n, c.sizes)
			}
			if n := strings.Count(r.table(), c.rows); n != c.sizes {
				t.Errorf("%d rows of %q, want one a size, %d", n, c.rows, c.sizes)
			}
			if err := r.checksPlot(filepath.Join(dir, "checks.png")); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// loadRun loads the committed run docs/bench-data/FILE alone, from a
// folder of its own (returned, for what the test writes beside it).
func loadRun(t *testing.T, file string) (*results, string) {
	t.Helper()
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join("../../../docs/bench-data", file))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "run.txt"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r, dir
}
