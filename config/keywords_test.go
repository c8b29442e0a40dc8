package config

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
)

// TestKeywordReference keeps docs/keywords.md in step with the keyword
// tables: it is generated from them (go test ./config -update rewrites it).
func TestKeywordReference(t *testing.T) {
	golden(t, "../docs/keywords.md", keywordReference(t))
}

type unsupportedLister interface {
	unsupportedNames() map[string]string
}

func (b *block[T]) unsupportedNames() map[string]string { return b.unsupported }

func keywordReference(t *testing.T) string {
	var b strings.Builder
	b.WriteString(`# Configuration keywords

Generated from directord's keyword tables by ` + "`go test ./config -update`" + `; do not edit.

For each block: the keywords directord reads as keepalived does, those it
reads but runs differently (with what differs), and the keepalived keywords
it recognises but does not implement. Those are reported once each, as
"not supported by directord", and ignored with everything inside their
block; any other unknown keyword is ignored with a warning and a
did-you-mean, as keepalived ignores it (an error under --strict). See
configuration.md for the language and for where directord differs from
keepalived. Keywords marked † are directord extensions, which keepalived
does not read.
`)
	for _, nb := range allBlocks() {
		sup := nb.(interface{ supportedNames() []string }).supportedNames()
		sort.Strings(sup)
		fmt.Fprintf(&b, "\n## %s\n\nSupported: ", nb.blockName())
		diff := Differences[nb.blockName()]
		for k := range diff {
			if !slices.Contains(sup, k) {
				t.Errorf("Differences names %s in %s, which does not support it", k, nb.blockName())
			}
		}
		sup = slices.DeleteFunc(sup, func(k string) bool { _, ok := diff[k]; return ok })
		for i, k := range sup {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("`" + k + "`")
			if IsExtension(nb.blockName(), k) {
				b.WriteString("†")
			}
		}
		b.WriteString(".\n")
		if len(diff) > 0 {
			b.WriteString("\nSupported with differences:\n\n")
			names := keys(diff)
			sort.Strings(names)
			for _, k := range names {
				fmt.Fprintf(&b, "- `%s`: %s\n", k, diff[k])
			}
		}
		un := nb.(unsupportedLister).unsupportedNames()
		if len(un) == 0 {
			continue
		}
		b.WriteString("\nNot supported:\n\n")
		names := keys(un)
		sort.Strings(names)
		for _, k := range names {
			if why := un[k]; why != "" {
				fmt.Fprintf(&b, "- `%s`: %s\n", k, why)
			} else {
				fmt.Fprintf(&b, "- `%s`\n", k)
			}
		}
	}
	return b.String()
}

// TestDifferingValues: a keyword that runs differently for one value only
// (auth_type AH) is listed for that value, in any case, and not for the
// others, which run as keepalived runs them.
func TestDifferingValues(t *testing.T) {
	for _, tt := range []struct {
		value string
		want  int
	}{{"PASS", 0}, {"AH", 1}, {"ah", 1}} {
		text := "vrrp_instance VI_1 {\n interface eth0\n virtual_router_id 51\n priority 100\n authentication {\n  auth_type " +
			tt.value + "\n  auth_pass secret\n }\n virtual_ipaddress {\n  192.0.2.100/24\n }\n}\n"
		cfg, diags := Parse("k.conf", text, nil, Options{})
		if cfg == nil {
			t.Fatalf("auth_type %s: %v", tt.value, diags)
		}
		n := 0
		for _, d := range cfg.Differs {
			if d.Keyword == "auth_type" {
				n++
			}
		}
		if n != tt.want {
			t.Errorf("auth_type %s: listed %d times among the differences, want %d", tt.value, n, tt.want)
		}
	}
}
