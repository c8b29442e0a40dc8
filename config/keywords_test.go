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

// TestVMACDifferencesListed: -t on a plain IPv4 use_vmac says what
// differs about a macvlan renamed while running, and no more about IGMP
// (its macvlan gets keepalived's table ip rules), and on use_vmac_addr
// and promote_secondaries what differs about macvlans and interfaces made
// again (the review of the vmac2 work).
func TestVMACDifferencesListed(t *testing.T) {
	inst := func(extra string) string {
		return "vrrp_instance VI_1 {\n interface eth0\n virtual_router_id 51\n priority 100\n" + extra +
			" virtual_ipaddress {\n  192.0.2.100/24\n }\n virtual_ipaddress_excluded {\n  2001:db8::1\n }\n}\n"
	}
	for _, tt := range []struct{ name, text, keyword, says string }{
		{"IPv4 use_vmac: a macvlan renamed", inst(" use_vmac\n"), "use_vmac", "renamed while running"},
		{"use_vmac_addr: an IPv6 address's table", inst(" use_vmac_addr\n"), "use_vmac_addr", "makes that table only when"},
		{"use_vmac_addr: missing at start", inst(" use_vmac_addr\n"), "use_vmac_addr", "missing at start"},
		{"promote_secondaries: set again", inst(" promote_secondaries\n"), "promote_secondaries", "made again"},
	} {
		cfg, diags := Parse("k.conf", tt.text, nil, Options{})
		if cfg == nil {
			t.Fatalf("%s: %v", tt.name, diags)
		}
		found := false
		for _, d := range cfg.Differs {
			if d.Keyword == tt.keyword && strings.Contains(d.How, tt.says) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no difference for %s saying %q among %v", tt.name, tt.keyword, tt.says, cfg.Differs)
		}
	}
	cfg, diags := Parse("k.conf", inst(" use_vmac\n"), nil, Options{})
	if cfg == nil {
		t.Fatal(diags)
	}
	for _, d := range cfg.Differs {
		if d.Keyword == "use_vmac" && strings.Contains(d.How, "IGMP") {
			t.Errorf("IPv4 use_vmac: a difference about IGMP, whose rules directord now makes as keepalived: %s", d.How)
		}
	}
}

// TestDifferingValues: a keyword that runs differently for some uses
// only (auth_type AH, sorry_server with words after its port) is listed
// for those uses, and not for the others, which run as keepalived runs
// them; a difference only an error can show (a real server listed twice)
// is never listed for a file that loads.
func TestDifferingValues(t *testing.T) {
	vrrp := func(auth string) string {
		return "vrrp_instance VI_1 {\n interface eth0\n virtual_router_id 51\n priority 100\n authentication {\n  auth_type " +
			auth + "\n  auth_pass secret\n }\n virtual_ipaddress {\n  192.0.2.100/24\n }\n}\n"
	}
	vs := func(addr, sorry string) string {
		return "virtual_server " + addr + " 443 {\n protocol TCP\n" + sorry + " real_server 10.2.0.1 443 {\n  weight 1\n }\n}\n"
	}
	for _, tt := range []struct {
		name, text, keyword string
		want                int
	}{
		{"auth_type PASS", vrrp("PASS"), "auth_type", 0},
		{"auth_type AH", vrrp("AH"), "auth_type", 1},
		{"auth_type ah", vrrp("ah"), "auth_type", 1},
		{"one real server in two virtual servers", vs("10.1.0.100", "") + vs("10.1.0.101", ""), "real_server", 0},
		{"sorry_server", vs("10.1.0.100", " sorry_server 10.3.0.1 443\n"), "sorry_server", 0},
		{"lvs_sched rr", vs("10.1.0.100", " lvs_sched rr\n"), "lvs_sched", 0},
		{"lvs_sched mh", vs("10.1.0.100", " lvs_sched mh\n"), "lvs_sched", 1},
		{"flag-1 with rr", vs("10.1.0.100", " lvs_sched rr\n flag-1\n"), "flag-1", 0},
		{"flag-1 with mh: mh-fallback", vs("10.1.0.100", " lvs_sched mh\n flag-1\n"), "flag-1", 1},
		{"sorry_server with a method", vs("10.1.0.100", " sorry_server 10.3.0.1 443 lvs_method DR\n"), "sorry_server", 1},
	} {
		cfg, diags := Parse("k.conf", tt.text, nil, Options{})
		if cfg == nil {
			t.Fatalf("%s: %v", tt.name, diags)
		}
		n := 0
		for _, d := range cfg.Differs {
			if d.Keyword == tt.keyword {
				n++
			}
		}
		if n != tt.want {
			t.Errorf("%s: %s listed %d times among the differences, want %d", tt.name, tt.keyword, n, tt.want)
		}
	}
}
