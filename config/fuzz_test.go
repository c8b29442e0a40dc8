package config

import (
	"os"
	"path/filepath"
	"testing"
)

// fuzzLimits are small enough that any input is read in bounded time and
// memory, and large enough to reach every path.
var fuzzLimits = limits{
	includeDepth: 8,
	expandDepth:  8,
	lineBytes:    4 << 10,
	lines:        20000,
	seqSteps:     1000,
	inputBytes:   1 << 20,
}

// FuzzLoad feeds arbitrary text to the whole pipeline (reader, tree,
// decoder, resolve, validate) as a main file that may include itself and a
// second file. It must never panic, hang or grow without bound; include
// cycles, deep nesting and huge lines end in diagnostics.
func FuzzLoad(f *testing.F) {
	seeds := []string{
		"",
		"include main.conf\n",
		"include other.conf\nglobal_defs {\n}\n",
		"$A=${A}${A}\nx ${A}\n",
		"$A=$B\n$B=$A\n${A}\n",
		"~SEQ(i,1,100000000) ~SEQ(j,1,1000) x$i$j\n",
		"~LST({a,b},{1,2},{3}) $a\n",
		"a {{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{\n",
		"}}}}}\n{\n",
		"\"unterminated\n'also\n",
		"@x a\n@^x b\n@ c\n",
		"$M= \\\n$M \\\nx\n$M\n",
		"virtual_server_group G {\n 10.0.0.1-255 80\n 2001:db8::1-ffff 80\n 10.0.0.0/8 1\n}\n",
	}
	for _, s := range seeds {
		f.Add(s, "")
	}
	// Every configuration in testdata and every keepalived sample is a seed.
	paths, _ := filepath.Glob("testdata/*.conf")
	samples, _ := filepath.Glob(filepath.Join(samplesDir, "keepalived.conf.*"))
	for _, p := range append(paths, samples...) {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(string(b), "include main.conf\n")
		}
	}
	f.Fuzz(func(t *testing.T, main, other string) {
		lim := fuzzLimits
		files := MapFS{"/k/main.conf": main, "/k/other.conf": other}
		cfg, diags := Load("/k/main.conf", Options{FS: files, Hostname: "h", limits: &lim})
		if cfg == nil {
			t.Fatal("nil config")
		}
		for _, d := range diags {
			if d.Message == "" {
				t.Fatalf("empty diagnostic at %s", d.Pos)
			}
		}
		if _, err := cfg.MarshalJSON(); err != nil {
			t.Fatalf("dump: %v", err)
		}
	})
}
