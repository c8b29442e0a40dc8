package config

import (
	"strings"
	"testing"
)

// TestTrackFileResolution: each entry's weight as keepalived's
// vrrp_complete_instance and sync_group_tracking_init leave it, and the
// messages on the way.
func TestTrackFileResolution(t *testing.T) {
	files := "track_file tf {\n file /run/tf\n}\ntrack_file tw {\n file /run/tw\n weight 5 reverse\n}\n"
	tests := []trackCase{
		{"file's weight by default", files + vi(" track_file {\n  tf\n  tw\n }"), "tf:1 tw:5r", "", ""},
		{"entry's own weight", files + vi(" track_file {\n  tw weight -3 noreverse\n  tf weight 0 reverse\n }"), "tw:-3 tf:0r", "", ""},
		{"unknown file ignored", files + vi(" track_file {\n  tx\n }"), "", "",
			"/k.conf:12: warning: track_file: (VI_1) track file tx not found: ignored, as keepalived does; did you mean \"tf\"?"},
		{"duplicate ignored", files + vi(" track_file {\n  tf\n  tf weight 2\n }"), "tf:1", "",
			"/k.conf:13: warning: track_file: (VI_1) duplicate track_file tf: ignored, as keepalived does"},
		{"address owner: weight 1 becomes 0, another is dropped", files + vi(" priority 255\n state MASTER\n track_file {\n  tf\n  tw\n }"), "tf:0", "",
			"/k.conf:14: warning: track_file: (VI_1) track file tf: weight 0 used since it owns its addresses (priority 255), as keepalived does (give weight 0)\n" +
				"/k.conf:15: warning: track_file: (VI_1) track file tw with weight 5 ignored since it owns its addresses (priority 255), as keepalived does"},
		{"sync group member without tracking weight", files + vi(" track_file {\n  tf\n  tw weight 0\n }") +
			"vrrp_instance VI_2 {\n interface eth0\n virtual_router_id 2\n}\nvrrp_sync_group G {\n group {\n  VI_1\n  VI_2\n }\n track_file {\n  tw\n }\n}\n",
			"tf:0 tw:0", "tw:5r",
			"/k.conf:12: warning: track_file: (VI_1) track file tf: weight 0 used since it is in sync group G, as keepalived does (give weight 0)"},
		{"sync group with an owner", files + vi(" priority 255\n state MASTER") +
			"vrrp_instance VI_2 {\n interface eth0\n virtual_router_id 2\n}\nvrrp_sync_group G {\n group {\n  VI_1\n  VI_2\n }\n track_file {\n  tw\n }\n}\n",
			"", "tw:0r",
			"/k.conf:24: warning: track_file: (G) track file tw: weight 0 used since a member owns its addresses (priority 255), as keepalived does"},
		{"bad weight keeps the file's", files + vi(" track_file {\n  tw weight 300\n }"), "tw:5r", "",
			"/k.conf:12: warning: tw: weight \"300\" is not in -254..254: the file's weight is used, as keepalived does"},
		{"block without file", "track_file tn {\n weight 2\n}\n" + vi(" track_file {\n  tn\n }"), "", "",
			"/k.conf:1: warning: track_file: tn has no file: ignored, as keepalived does\n" +
				"/k.conf:8: warning: track_file: (VI_1) track file tn not found: ignored, as keepalived does"},
	}
	testTracked(t, "track_file", tests,
		func(c *Config) []TrackFileUse { return c.Instances[0].TrackFiles },
		func(c *Config) []TrackFileUse { return c.SyncGroups[0].TrackFiles },
		func(u TrackFileUse) (string, int, bool) { return u.Name, u.Weight, u.Reverse })
}

// TestNotifyFIFOConfig: keepalived's rules for the FIFO keywords.
func TestNotifyFIFOConfig(t *testing.T) {
	tests := []struct {
		name, conf, diags string
		vrrp              string // the vrrp_notify_fifo's path, "" for none
	}{
		{"script without its fifo never runs", "global_defs {\n vrrp_notify_fifo_script /bin/cat\n}\n",
			"/k.conf:2: warning: vrrp_notify_fifo_script: has no vrrp_notify_fifo: it never runs, as in keepalived", ""},
		{"second fifo ignored", "global_defs {\n vrrp_notify_fifo /run/a\n vrrp_notify_fifo /run/b\n}\n",
			"/k.conf:3: warning: vrrp_notify_fifo: already given at /k.conf:2: /run/b ignored, as keepalived does", "/run/a"},
		{"script before its fifo", "global_defs {\n vrrp_notify_fifo_script /bin/cat\n vrrp_notify_fifo /run/a\n}\n", "", "/run/a"},
		{"same path twice", "global_defs {\n notify_fifo /run/a\n vrrp_notify_fifo /run/a\n}\n",
			"/k.conf:3: warning: vrrp_notify_fifo: /run/a is also notify_fifo: the FIFO names must all differ (each line would be written twice)", "/run/a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := parseDiags(t, tt.conf, tt.diags)
			var got string
			if f := cfg.Global.VRRPNotifyFIFO; f != nil {
				got = f.Path
				if f.Script == nil && strings.Contains(tt.conf, "_script") {
					t.Error("the script was lost")
				}
			}
			if got != tt.vrrp {
				t.Errorf("vrrp_notify_fifo = %q, want %q", got, tt.vrrp)
			}
		})
	}
}

// TestNotifyPriorityChanges: an instance's own setting, else its sync
// group's, else vrrp_notify_priority_changes.
func TestNotifyPriorityChanges(t *testing.T) {
	conf := "global_defs {\n vrrp_notify_priority_changes\n}\n" +
		"vrrp_instance A {\n interface eth0\n virtual_router_id 1\n}\n" +
		"vrrp_instance B {\n interface eth0\n virtual_router_id 2\n}\n" +
		"vrrp_instance C {\n interface eth0\n virtual_router_id 3\n notify_priority_changes\n}\n" +
		"vrrp_instance D {\n interface eth0\n virtual_router_id 4\n}\n" +
		"vrrp_sync_group G {\n group {\n  B\n  C\n }\n notify_priority_changes false\n}\n"
	cfg := mustParse(t, conf, Options{})
	want := map[string]bool{"A": true, "B": false, "C": true, "D": true}
	for _, in := range cfg.Instances {
		if in.NotifyPriorityChanges != want[in.Name] {
			t.Errorf("%s: notify_priority_changes %v, want %v", in.Name, in.NotifyPriorityChanges, want[in.Name])
		}
	}
}
