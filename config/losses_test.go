package config

import (
	"sort"
	"strings"
	"testing"
)

// TestEveryUnsupportedKeywordHasALoss: -t's summary says, for each
// keyword that some block does not support, what the operator loses.
func TestEveryUnsupportedKeywordHasALoss(t *testing.T) {
	var missing []string
	for _, nb := range allBlocks() {
		for k := range nb.(unsupportedLister).unsupportedNames() {
			if Loss(k) == "" {
				missing = append(missing, nb.blockName()+" "+k)
			}
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("no loss (config/losses.go) for:\n%s", strings.Join(missing, "\n"))
	}
	unsupported := map[string]bool{}
	for _, nb := range allBlocks() {
		for k := range nb.(unsupportedLister).unsupportedNames() {
			unsupported[k] = true
		}
	}
	for _, l := range losses {
		for _, k := range l.keywords {
			if !unsupported[k] {
				t.Errorf("%s is supported in every block now: remove it from the loss %q", k, l.what)
			}
		}
	}
	seen := map[string]string{}
	for _, l := range losses {
		for _, k := range l.keywords {
			if w, dup := seen[k]; dup {
				t.Errorf("%s is in two losses: %q and %q", k, w, l.what)
			}
			seen[k] = l.what
		}
	}
}

// TestLosses groups a file's unsupported keywords by what they did, in
// the order of each loss's first use.
func TestLosses(t *testing.T) {
	conf := "garp_group {\n}\nglobal_defs {\n vrrp_no_swap\n checker_no_swap\n}\n" +
		vi(" notify_master_rx_lower_pri /bin/true\n use_ipvlan")
	_, diags := Parse("/k.conf", conf, nil, Options{})
	var got []string
	for _, l := range Losses(diags) {
		var uses []string
		for _, d := range l.Uses {
			uses = append(uses, d.Keyword+" "+d.Pos.String())
		}
		got = append(got, l.What+": "+strings.Join(uses, ", "))
	}
	want := []string{
		"no gratuitous ARP groups: garp_group /k.conf:1",
		"keepalived's per-process tuning and names, which directord, one process, has no use for: vrrp_no_swap /k.conf:4, checker_no_swap /k.conf:5",
		"no notify_master_rx_lower_pri script: notify_master_rx_lower_pri /k.conf:10",
		"no ipvlan interface: use_ipvlan /k.conf:11",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
