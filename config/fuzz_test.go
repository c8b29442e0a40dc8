package config

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/directord/directord/internal/fuzztest"
)

// fuzzLimits are small enough that any input is read in bounded time and
// memory, and large enough to reach every path. They start from
// defaultLimits, so a limit added there is never 0 here (which would refuse
// every input at once and blind the fuzzer); TestFuzzLimits checks it.
func fuzzLimits() limits {
	lim := defaultLimits
	lim.includeDepth = 8
	lim.expandDepth = 8
	lim.lineBytes = 4 << 10
	lim.lines = 20000
	lim.seqSteps = 1000
	lim.inputBytes = 1 << 20
	lim.fileReads = 64
	lim.words = 100000
	lim.expandBytes = 4 << 20
	return lim
}

// TestFuzzLimits: every limit the fuzzer runs with is set, and none is
// above the default.
func TestFuzzLimits(t *testing.T) {
	fz, def := reflect.ValueOf(fuzzLimits()), reflect.ValueOf(defaultLimits)
	for i := range fz.NumField() {
		name := fz.Type().Field(i).Name
		got, max := fz.Field(i).Int(), def.Field(i).Int()
		if got <= 0 || got > max {
			t.Errorf("fuzz limit %s = %d, want 1..%d (the default)", name, got, max)
		}
		if max <= 0 {
			t.Errorf("default limit %s = %d", name, max)
		}
	}
}

// fuzzGood are inputs that must load: a main file that includes the other,
// and what the result must hold. FuzzLoad checks them whenever it meets
// them (as seeds, in every mode), so a target that stops reaching the
// decoder (a limit refusing everything, a reader gone wrong) fails at once.
var fuzzGood = []struct {
	name        string
	main, other string
	check       func(*Config) bool
}{
	{
		name: "instance and virtual server through an include",
		main: "include other.conf\n",
		other: "global_defs {\n router_id r1\n}\n" +
			"vrrp_instance VI_1 {\n state BACKUP\n interface eth0\n virtual_router_id 51\n priority 100\n" +
			" virtual_ipaddress {\n  192.0.2.10/24\n }\n}\n" +
			"virtual_server 192.0.2.10 443 {\n lb_algo rr\n lb_kind DR\n protocol TCP\n" +
			" real_server 192.0.2.21 443 {\n  TCP_CHECK {\n   connect_timeout 3\n  }\n }\n}\n",
		check: func(c *Config) bool {
			return c.Global.RouterID == "r1" && len(c.Instances) == 1 && len(c.Instances[0].VIPs) == 1 &&
				len(c.VirtualServers) == 1 && len(c.VirtualServers[0].RealServers) == 1 && len(c.Files) == 2
		},
	},
	{
		name: "parameters and ~SEQ",
		main: "$IF=eth1\n$VI= \\\nvrrp_instance V$n {\\\n interface $IF\\\n virtual_router_id $n\\\n priority 100\\\n" +
			" virtual_ipaddress {\\\n  192.0.2.$n\\\n }\\\n}\n~SEQ(n,1,3) $VI\n",
		check: func(c *Config) bool {
			return len(c.Instances) == 3 && c.Instances[2].Interface == "eth1" && c.Instances[2].VRID == 3
		},
	},
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
		"a {{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{\n",
		"}}}}}\n{\n",
		"\"unterminated\n'also\n",
		"@x a\n@^x b\n@ c\n",
		"$M= \\\n$M \\\nx\n$M\n",
		"virtual_server_group G {\n 10.0.0.1-255 80\n 2001:db8::1-ffff 80\n 10.0.0.0/8 1\n}\n",
	}
	for _, s := range seeds {
		f.Add(s, "")
	}
	for _, g := range fuzzGood {
		f.Add(g.main, g.other)
	}
	// Inputs that once expanded far beyond their size (limits_test.go).
	for _, b := range blowups {
		f.Add(b.text, "include main.conf\n")
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
		fuzztest.Bound(t)
		lim := fuzzLimits()
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
		for _, g := range fuzzGood {
			if main == g.main && other == g.other {
				if diags.HasErrors() || !g.check(cfg) {
					t.Fatalf("known-good input %q does not load as it must:\n%s", g.name, diags)
				}
			}
		}
	})
}
