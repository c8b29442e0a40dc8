package config

import (
	"encoding/json"
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// mustParse parses text as /k.conf with opts, and fails the test on an
// error.
func mustParse(t testing.TB, text string, opts Options) *Config {
	t.Helper()
	cfg, diags := Parse("/k.conf", text, nil, opts)
	if diags.HasErrors() {
		t.Fatalf("diagnostics:\n%s", diags)
	}
	return cfg
}

// parseDiags parses text as /k.conf, with the default options, and
// checks that its diagnostics are want, one a line.
func parseDiags(t *testing.T, text, want string) *Config {
	t.Helper()
	cfg, diags := Parse("/k.conf", text, nil, Options{})
	if got := strings.TrimSpace(diags.String()); got != want {
		t.Errorf("diagnostics:\n%s\nwant:\n%s", got, want)
	}
	return cfg
}

// parseKeywordDiags parses text as /k.conf, with the default options,
// and checks that its diagnostics about keyword are want, one a line
// (others may come too).
func parseKeywordDiags(t *testing.T, text, keyword, want string) (*Config, Diagnostics) {
	t.Helper()
	cfg, diags := Parse("/k.conf", text, nil, Options{})
	var got []string
	for _, d := range diags {
		if d.Keyword == keyword {
			got = append(got, d.String())
		}
	}
	if strings.Join(got, "\n") != want {
		t.Errorf("diagnostics of %s:\n%s\nwant:\n%s\nall:\n%s", keyword, strings.Join(got, "\n"), want, diags)
	}
	return cfg, diags
}

// trackCase is a configuration, its diagnostics and what it leaves
// tracked: instance VI_1's entries (want) and sync group G's (group),
// NAME:WEIGHT with r when reversed.
type trackCase struct {
	name, conf  string
	want, group string
	diags       string
}

// testTracked runs tests for the entries of keyword, which inst and
// group read from the first instance and sync group, and use shows.
func testTracked[U any](t *testing.T, keyword string, tests []trackCase, inst, group func(*Config) []U, use func(U) (name string, weight int, reverse bool)) {
	t.Helper()
	show := func(us []U) string {
		var out []string
		for _, u := range us {
			name, weight, reverse := use(u)
			s := name + ":" + itoa(weight)
			if reverse {
				s += "r"
			}
			out = append(out, s)
		}
		return strings.Join(out, " ")
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := parseDiags(t, tt.conf, tt.diags)
			if got := show(inst(cfg)); got != tt.want {
				t.Errorf("VI_1 %s = %q, want %q", keyword, got, tt.want)
			}
			var g string
			if len(cfg.SyncGroups) > 0 {
				g = show(group(cfg))
			}
			if g != tt.group {
				t.Errorf("G %s = %q, want %q", keyword, g, tt.group)
			}
		})
	}
}

// golden compares got with the file, or rewrites the file under -update.
func golden(t *testing.T, file, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run go test ./config -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test ./config -update rewrites it after review):\n%s", file, lineDiff(string(want), got))
	}
}

// lineDiff shows the lines that differ, with their numbers.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			b.WriteString("line " + itoa(i+1) + ":\n  want: " + wl + "\n  got:  " + gl + "\n")
		}
	}
	return b.String()
}

func itoa(i int) string { return strings.TrimSpace(strings.Repeat(" ", 0) + jsonNumber(i)) }

func jsonNumber(i int) string { b, _ := json.Marshal(i); return string(b) }

// TestEveryKeyword reads a configuration that uses every supported keyword
// and compares the resolved model and the diagnostics with golden files.
func TestEveryKeyword(t *testing.T) {
	cfg, diags := Load("testdata/every_keyword.conf", Options{Hostname: "testhost"})
	if diags.HasErrors() {
		t.Fatalf("errors:\n%s", diags)
	}
	out, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "testdata/every_keyword.json", string(out)+"\n")
	golden(t, "testdata/every_keyword.diag", diags.String())
}

// TestEveryKeywordIsCovered fails when a keyword is added to a block table
// without being added to testdata/every_keyword.conf.
func TestEveryKeywordIsCovered(t *testing.T) {
	text, err := os.ReadFile("testdata/every_keyword.conf")
	if err != nil {
		t.Fatal(err)
	}
	words := map[string]bool{}
	for _, w := range regexp.MustCompile(`[^\s{}"]+`).FindAllString(string(text), -1) {
		words[w] = true
	}
	type supported interface{ supportedNames() []string }
	for _, b := range allBlocks() {
		for _, k := range b.(supported).supportedNames() {
			if !words[k] {
				t.Errorf("%s keyword %s is not used in testdata/every_keyword.conf", b.blockName(), k)
			}
		}
	}
}

func (b *block[T]) supportedNames() []string {
	var out []string
	for k := range b.keys {
		out = append(out, k)
	}
	return out
}
