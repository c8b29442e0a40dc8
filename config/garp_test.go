package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestGarpKeys checks the gratuitous ARP keywords global_defs and
// vrrp_instance share (garpKeys): each sets its field, and global_defs
// records its delays and repeats as given, an instance none of them.
func TestGarpKeys(t *testing.T) {
	keys := []string{"garp_master_delay 7", "garp_master_repeat 3", "garp_lower_prio_delay 8",
		"garp_lower_prio_repeat 4", "garp_master_refresh_repeat 6"}
	global, instance := "global_defs {\n", " "
	for _, k := range keys {
		global += " vrrp_" + k + "\n"
		instance += k + "\n "
	}
	cfg := mustParse(t, global+"}\n"+vi(instance), Options{})
	want := GarpSettings{MasterDelay: 7e9, MasterRepeat: 3, LowerPrioDelay: 8e9, LowerPrioRepeat: 4,
		MasterRefreshRepeat: 6}
	g := cfg.Global.Garp
	g.MasterRefresh, g.ExtraIf, g.ExtraIfAll = 0, 0, false
	if d := cmp.Diff(want, g); d != "" {
		t.Errorf("global_defs (-want +got):\n%s", d)
	}
	g = cfg.Instances[0].Garp
	g.MasterRefresh, g.ExtraIf, g.ExtraIfAll = 0, 0, false
	if d := cmp.Diff(want, g); d != "" {
		t.Errorf("vrrp_instance (-want +got):\n%s", d)
	}
	var given []string
	for k := range cfg.Global.set {
		given = append(given, k)
	}
	slices.Sort(given)
	wantGiven := []string{"vrrp_garp_lower_prio_delay", "vrrp_garp_lower_prio_repeat",
		"vrrp_garp_master_delay", "vrrp_garp_master_repeat"}
	if d := cmp.Diff(wantGiven, given); d != "" {
		t.Errorf("global_defs given (-want +got):\n%s", d)
	}
	for k := range cfg.Instances[0].set {
		if slices.ContainsFunc(keys, func(s string) bool { return strings.HasPrefix(s, k+" ") }) {
			t.Errorf("vrrp_instance: %s recorded as given", k)
		}
	}
	parseDiags(t, "global_defs {\n vrrp_vmac_garp_intvl 2\n}\n",
		"/k.conf:2: warning: vrrp_vmac_garp_intvl: deprecated: read as vrrp_garp_extra_if, as keepalived does")
}
