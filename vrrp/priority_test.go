package vrrp

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/directord/directord/config"
)

// fakeSeen is a trackView with what a test says the tracking saw.
type fakeSeen struct {
	scripts map[string]bool // absent: not tracked (disabled)
	down    map[string]bool // interfaces down; every other one is up
	files   map[string]int64
	procs   map[string]bool
}

func (v fakeSeen) script(name string) (bool, bool)  { g, ok := v.scripts[name]; return g, ok }
func (v fakeSeen) link(name string) bool            { return !v.down[name] }
func (v fakeSeen) file(name string) (int64, bool)   { x, ok := v.files[name]; return x, ok }
func (v fakeSeen) process(name string) (bool, bool) { u, ok := v.procs[name]; return u, ok }

// TestTrackedPriority checks an instance's priority and fault from what it
// and its sync group track (what TestTrackingAndNotify,
// TestTrackInterfaceWeight, TestRuleAndRouteInterfacesTracked,
// TestTrackFileMovesPriority, TestTrackProcessFault, TestVMACTracked,
// TestUseVMACAddrMadeAgain and TestUnicastSrcAbsent see only in namespaces, as root).
func TestTrackedPriority(t *testing.T) {
	const defs = "vrrp_script chk {\n script \"/bin/true\"\n}\n" +
		"vrrp_script off {\n script \"/bin/true\"\n}\n" +
		"vrrp_track_file tf {\n file \"/tmp/directord-none\"\n}\n" +
		"vrrp_track_process tp {\n process directord-none\n}\n"
	const own = "track_script {\n chk weight 10\n off weight 30\n }\n track_interface {\n eth1 weight -20\n }\n"
	group := func(extra string) string {
		return "vrrp_sync_group G {\n group {\n VI_1\n }\n " + extra + "\n}\n"
	}
	good := map[string]bool{"chk": true}
	tests := []struct {
		name       string
		conf       string
		seen       fakeSeen
		srcMissing bool
		prio       uint8
		fault      bool
	}{
		{"all up: the script's weight added", inst("VI_1", "eth0", 51, 100, own),
			fakeSeen{scripts: good}, false, 110, false},
		{"script failing: no weight", inst("VI_1", "eth0", 51, 100, own),
			fakeSeen{scripts: map[string]bool{"chk": false}}, false, 100, false},
		{"a disabled script counts for nothing", inst("VI_1", "eth0", 51, 100, own),
			fakeSeen{scripts: good}, false, 110, false},
		{"tracked interface down: its negative weight", inst("VI_1", "eth0", 51, 100, own),
			fakeSeen{scripts: good, down: map[string]bool{"eth1": true}}, false, 90, false},
		{"the instance's interface down: FAULT", inst("VI_1", "eth0", 51, 100, own),
			fakeSeen{scripts: good, down: map[string]bool{"eth0": true}}, false, 110, true},
		{"dont_track_primary", inst("VI_1", "eth0", 51, 100, own+" dont_track_primary"),
			fakeSeen{scripts: good, down: map[string]bool{"eth0": true}}, false, 110, false},
		{"use_vmac: its macvlan down is FAULT", inst("VI_1", "eth0", 51, 100, "use_vmac vrrp.51"),
			fakeSeen{down: map[string]bool{"vrrp.51": true}}, false, 100, true},
		{"use_vmac_addr: an address's macvlan down is FAULT",
			inst("VI_1", "eth0", 51, 100, "use_vmac_addr\n virtual_ipaddress_excluded {\n 198.51.100.1/24 dev eth5\n }"),
			fakeSeen{down: map[string]bool{"vrrp.51": true}}, false, 100, true},
		{"use_vmac_addr: with dont_track_primary too",
			inst("VI_1", "eth0", 51, 100, "use_vmac_addr\n dont_track_primary\n virtual_ipaddress_excluded {\n 198.51.100.1/24 dev eth5\n }"),
			fakeSeen{down: map[string]bool{"vrrp.51": true}}, false, 100, true},
		{"an address's other interface down: FAULT",
			inst("VI_1", "eth0", 51, 100, "virtual_ipaddress_excluded {\n 198.51.100.1/24 dev eth5\n }"),
			fakeSeen{down: map[string]bool{"eth5": true}}, false, 100, true},
		{"an address's other interface: spared by no_track",
			inst("VI_1", "eth0", 51, 100, "virtual_ipaddress {\n 198.51.100.1/24 dev eth5 no_track\n }"),
			fakeSeen{down: map[string]bool{"eth5": true}}, false, 100, false},
		{"an address's other interface: not spared by dont_track_primary",
			inst("VI_1", "eth0", 51, 100, "dont_track_primary\n virtual_ipaddress {\n 198.51.100.1/24 dev eth5\n }"),
			fakeSeen{down: map[string]bool{"eth5": true}}, false, 100, true},
		{"an address on the own interface: spared by dont_track_primary",
			inst("VI_1", "eth0", 51, 100, "dont_track_primary\n virtual_ipaddress {\n 198.51.100.1/24 dev eth0\n }"),
			fakeSeen{down: map[string]bool{"eth0": true}}, false, 100, false},
		{"use_vmac_addr: not for a no_track address",
			inst("VI_1", "eth0", 51, 100, "use_vmac_addr\n virtual_ipaddress_excluded {\n 198.51.100.1/24 dev eth5 no_track\n }"),
			fakeSeen{down: map[string]bool{"vrrp.51": true}}, false, 100, false},
		{"configured source on no interface: FAULT", inst("VI_1", "eth0", 51, 100, own),
			fakeSeen{scripts: good}, true, 110, true},
		{"sync group member: its weights are 0, a failing script is FAULT",
			group("") + inst("VI_1", "eth0", 51, 100, own),
			fakeSeen{scripts: map[string]bool{"chk": false}}, false, 100, true},
		{"sync_group_tracking_weight keeps them",
			group("sync_group_tracking_weight") + inst("VI_1", "eth0", 51, 100, own),
			fakeSeen{scripts: map[string]bool{"chk": false}, down: map[string]bool{"eth1": true}}, false, 80, false},
		{"the group's track_interface: down is FAULT",
			group("track_interface {\n eth2\n }") + inst("VI_1", "eth0", 51, 100, ""),
			fakeSeen{down: map[string]bool{"eth2": true}}, false, 100, true},
		{"the group's track_script with a weight",
			group("track_script {\n chk weight 5\n }") + inst("VI_1", "eth0", 51, 100, ""),
			fakeSeen{scripts: good}, false, 105, false},
		{"a virtual route's dev down: FAULT",
			inst("VI_1", "eth0", 51, 100, "virtual_routes {\n 198.51.100.0/24 dev eth3\n }"),
			fakeSeen{down: map[string]bool{"eth3": true}}, false, 100, true},
		{"no_track: not tracked",
			inst("VI_1", "eth0", 51, 100, "virtual_routes {\n 198.51.100.0/24 dev eth3 no_track\n }"),
			fakeSeen{down: map[string]bool{"eth3": true}}, false, 100, false},
		{"a virtual rule's iif down: FAULT",
			inst("VI_1", "eth0", 51, 100, "virtual_rules {\n from 198.51.100.0/24 iif eth4 table 100\n }"),
			fakeSeen{down: map[string]bool{"eth4": true}}, false, 100, true},
		{"track_file: value times weight",
			inst("VI_1", "eth0", 51, 100, "track_file {\n tf weight 2\n }"),
			fakeSeen{files: map[string]int64{"tf": 5}}, false, 110, false},
		{"track_file not read: nothing",
			inst("VI_1", "eth0", 51, 100, "track_file {\n tf weight 2\n }"),
			fakeSeen{}, false, 100, false},
		{"track_process without quorum: FAULT",
			inst("VI_1", "eth0", 51, 100, "track_process {\n tp\n }"),
			fakeSeen{procs: map[string]bool{"tp": false}}, false, 100, true},
		{"track_process up with a weight",
			inst("VI_1", "eth0", 51, 100, "track_process {\n tp weight 7\n }"),
			fakeSeen{procs: map[string]bool{"tp": true}}, false, 107, false},
		{"the address owner keeps 255", inst("VI_1", "eth0", 51, 255, ""),
			fakeSeen{}, false, 255, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := planConf(t, defs+tt.conf)
			ci := cfg.Instances[0]
			var g *config.SyncGroup
			if members, _ := newSyncGroups(cfg.SyncGroups, cfg.Instances); members[0] != nil {
				g = members[0].group.cfg
			}
			list := trackedOf(ci, g, tt.srcMissing, tt.seen)
			p, fault := Effective(uint8(ci.Priority), list)
			if p != tt.prio || fault != tt.fault {
				t.Errorf("priority %d fault %v, want %d %v (tracked %+v)", p, fault, tt.prio, tt.fault, list)
			}
		})
	}
}

// TestScriptsTracked checks which vrrp_scripts run: those some instance or
// sync group tracks, each once; a disabled one by no one, reported once.
func TestScriptsTracked(t *testing.T) {
	cfg := planConf(t, "vrrp_script a {\n script \"/bin/true\"\n}\n"+
		"vrrp_script b {\n script \"/bin/true\"\n}\n"+
		"vrrp_script unused {\n script \"/bin/true\"\n}\n"+
		"vrrp_script bad {\n script \"/bin/true\"\n}\n"+
		"vrrp_sync_group G {\n group {\n VI_1\n }\n track_script {\n b\n bad\n }\n}\n"+
		inst("VI_1", "eth0", 51, 100, "track_script {\n bad\n a\n }")+
		inst("VI_2", "eth0", 52, 100, "track_script {\n a\n bad\n }"))
	asked := map[string]int{}
	on, off := scriptsTracked(cfg, func(c *config.VRRPScript) error {
		asked[c.Name]++
		if c.Name == "bad" {
			return errors.New("insecure")
		}
		return nil
	})
	var names []string
	for _, c := range on {
		names = append(names, c.Name)
	}
	if d := cmp.Diff([]string{"a", "b"}, names); d != "" {
		t.Errorf("tracked (-want +got):\n%s", d)
	}
	if len(off) != 1 || off[0].Name != "bad" || off[0].Reason.Error() != "insecure" {
		t.Errorf("disabled %+v, want bad once", off)
	}
	if d := cmp.Diff(map[string]int{"a": 1, "b": 1, "bad": 1}, asked); d != "" {
		t.Errorf("asked (-want +got):\n%s", d)
	}
}
