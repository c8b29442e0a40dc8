package frrtest

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
)

func TestParseRoutes(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		want      []netip.Addr
	}{
		{"none", "[]", nil},
		{"empty", "", nil},
		{"one", `[{"dst":"10.1.0.100","gateway":"10.0.0.11","dev":"r0","protocol":"bgp","metric":20,"flags":[]}]`,
			[]netip.Addr{netip.MustParseAddr("10.0.0.11")}},
		{"ECMP", `[{"dst":"10.1.0.100","protocol":"bgp","metric":20,"flags":[],"nexthops":[{"gateway":"10.0.0.13","dev":"r0","weight":1,"flags":[]},{"gateway":"10.0.0.11","dev":"r0","weight":1,"flags":[]}]}]`,
			[]netip.Addr{netip.MustParseAddr("10.0.0.11"), netip.MustParseAddr("10.0.0.13")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseRoutes(t, []byte(tc.out)); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestConfig(t *testing.T) {
	c := Config(65000, netip.MustParseAddr("10.0.0.1"), 65010, []netip.Addr{netip.MustParseAddr("10.0.0.11")}, " receive-interval 100")
	for _, want := range []string{"router bgp 65000\n", " neighbor DIRECTORS remote-as 65010\n", " neighbor 10.0.0.11 peer-group DIRECTORS\n",
		"  maximum-paths 16\n", " neighbor DIRECTORS bfd profile fast\n"} {
		if !strings.Contains(c.BGP, want) {
			t.Errorf("config lacks %q:\n%s", want, c.BGP)
		}
	}
	if !strings.Contains(c.BFD, "bfd\n profile fast\n receive-interval 100\n") {
		t.Errorf("bfdd's config:\n%s", c.BFD)
	}
}
