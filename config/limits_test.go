package config

import (
	"runtime"
	"strings"
	"testing"
)

// blowups are small inputs that made the reader do work far beyond their
// size and within every other limit, each with the diagnostic it must now
// end with. They are FuzzLoad seeds too.
var blowups = []struct {
	name, text, diag string
}{
	{
		// 5 kB: a 1 kB value, a 100 kB line of it, repeated 2,000 times:
		// 200 MB of lines, each within lineBytes.
		name: "~SEQ of a long substitution",
		text: "$A=" + strings.Repeat("x", 1000) + "\n$B=" + strings.Repeat("${A}", 100) + "\n~SEQ(i,1,2000) $B\n",
		diag: "expand to more than",
	},
	{
		// Each line substitutes 100 kB and then fails: the work was done
		// and thrown away, line after line.
		name: "substitutions that fail",
		text: "$A=" + strings.Repeat("x", 50000) + "\n" + strings.Repeat("${A}${A}${U}\n", 2000),
		diag: "expand to more than",
	},
	{
		// 2,048 alternatives of a 64 kB pattern: 128 MB of names from one
		// line.
		name: "include braces",
		text: "include " + strings.Repeat("{a,b}", 11) + strings.Repeat("p", 64<<10) + "\n",
		diag: "is longer than 4096 bytes",
	},
	{
		// Each line globs 1,001 patterns; reads were counted, globs not.
		name: "include globs",
		text: strings.Repeat("include /none/{"+strings.Repeat("a,", 1000)+"b}*\n", 50),
		diag: "patterns matched",
	},
}

// TestBlowups: inputs that expand far beyond their size stop at a limit,
// having done work bounded by the limits rather than by the product of
// them: each allocates less than 64 MB in all (they allocated from 400 MB
// to gigabytes before expandBytes and the pattern bounds).
func TestBlowups(t *testing.T) {
	lim := defaultLimits
	lim.lineBytes = 128 << 10
	lim.expandBytes = 8 << 20
	for _, c := range blowups {
		t.Run(c.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, diags := Load("/k/main.conf", Options{FS: MapFS{"/k/main.conf": c.text}, Hostname: "h", limits: &lim})
			runtime.ReadMemStats(&after)
			if !strings.Contains(diags.String(), c.diag) {
				t.Errorf("diagnostics do not say %q:\n%.2000s", c.diag, diags)
			}
			if mb := (after.TotalAlloc - before.TotalAlloc) >> 20; mb > 64 {
				t.Errorf("%d MB allocated for %d bytes of input", mb, len(c.text))
			}
		})
	}
}

// TestExpandBytesDefault: a large configuration made with ~SEQ, 10,000
// real servers, stays far within the default expansion limit.
func TestExpandBytesDefault(t *testing.T) {
	text := "$RS= \\\nreal_server 10.1.${a}.${b} 80 {\\\n weight 1\\\n TCP_CHECK {\\\n  connect_timeout 3\\\n }\\\n}\n" +
		"virtual_server 10.0.0.1 80 {\n lb_algo rr\n lb_kind DR\n protocol TCP\n" +
		"~SEQ(a,0,99) ~SEQ(b,1,100) $RS\n}\n"
	cfg, diags := Parse("/k/main.conf", text, nil, Options{})
	if diags.HasErrors() || len(cfg.VirtualServers) != 1 || len(cfg.VirtualServers[0].RealServers) != 10000 {
		t.Fatalf("want 10,000 real servers: %.2000s", diags)
	}
}
