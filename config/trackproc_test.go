package config

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestTrackProcessBlock: vrrp_track_process's keywords and defaults as
// keepalived 2.2.7's vrrp_tprocess_*_handler set them, and the messages
// for what it runs past.
func TestTrackProcessBlock(t *testing.T) {
	max := func(n int) *int { return &n }
	tests := []struct {
		name  string
		body  string
		want  *TrackProcess // Pos and Name left out
		diags string
	}{
		{"defaults", " process haproxy\n", &TrackProcess{Process: "haproxy", Quorum: 1}, ""},
		{"parameters: exact match of the full command", " process /usr/bin/java -jar a.jar\n",
			&TrackProcess{Process: "/usr/bin/java", Params: []string{"-jar", "a.jar"}, ParamMatch: "exact", FullCommand: true, Quorum: 1}, ""},
		{"param_match before process is kept", " param_match initial\n process java -Dx\n",
			&TrackProcess{Process: "java", Params: []string{"-Dx"}, ParamMatch: "initial", FullCommand: true, Quorum: 1}, ""},
		{"param_match alone: exact, no arguments", " process sleep\n param_match\n",
			&TrackProcess{Process: "sleep", ParamMatch: "exact", FullCommand: true, Quorum: 1}, ""},
		{"full_command", " process /bin/sleep\n full_command\n", &TrackProcess{Process: "/bin/sleep", FullCommand: true, Quorum: 1}, ""},
		{"delay sets both", " process x\n delay 2.5\n", &TrackProcess{Process: "x", Quorum: 1, TerminateDelay: 2500 * time.Millisecond, ForkDelay: 2500 * time.Millisecond}, ""},
		{"each delay", " process x\n terminate_delay 1\n fork_delay 0.000001\n", &TrackProcess{Process: "x", Quorum: 1, TerminateDelay: time.Second, ForkDelay: time.Microsecond}, ""},
		{"weight reverse", " process x\n weight -20 reverse\n", &TrackProcess{Process: "x", Quorum: 1, Weight: -20, Reverse: true}, ""},
		{"quorum and quorum_max", " process x\n quorum 2\n quorum_max 4\n", &TrackProcess{Process: "x", Quorum: 2, QuorumMax: max(4)}, ""},
		{"quorum_max 0: none may run", " process x\n quorum_max 0\n", &TrackProcess{Process: "x", Quorum: 0, QuorumMax: max(0)}, ""},
		{"quorum above quorum_max", " process x\n quorum_max 2\n quorum 3\n", &TrackProcess{Process: "x", Quorum: 1, QuorumMax: max(2)},
			"/k.conf:4: warning: quorum: quorum 3 of P is greater than its quorum_max 2: ignored, as keepalived does"},
		{"quorum_max below quorum", " process x\n quorum 3\n quorum_max 2\n", &TrackProcess{Process: "x", Quorum: 3},
			"/k.conf:4: warning: quorum_max: quorum_max 2 of P is less than its quorum 3: ignored, as keepalived does"},
		{"quorum 0 refused", " process x\n quorum 0\n", &TrackProcess{Process: "x", Quorum: 1},
			"/k.conf:3: warning: quorum: \"0\" for P is not in 1..65535: ignored, as keepalived does"},
		{"delay 0 refused", " process x\n delay 0\n", &TrackProcess{Process: "x", Quorum: 1},
			"/k.conf:3: warning: delay: \"0\" for P is not a time in seconds from 0.000001 to 3600: ignored, as keepalived does"},
		{"second weight ignored", " process x\n weight 5\n weight 6\n", &TrackProcess{Process: "x", Quorum: 1, Weight: 5},
			"/k.conf:4: warning: weight: weight already set for P: \"6\" ignored, as keepalived does"},
		{"bad reverse word: weight kept", " process x\n weight 5 backwards\n", &TrackProcess{Process: "x", Quorum: 1, Weight: 5},
			"/k.conf:3: warning: weight: \"backwards\" is not reverse: ignored, as keepalived does"},
		{"second process ignored", " process x\n process y\n", &TrackProcess{Process: "x", Quorum: 1},
			"/k.conf:3: warning: process: process already set for P: \"y\" ignored, as keepalived does"},
		{"bad param_match", " process x\n param_match all\n", &TrackProcess{Process: "x", Quorum: 1},
			"/k.conf:3: warning: param_match: \"all\" is not initial or partial: ignored, as keepalived does"},
		{"no process: dropped", " weight 2\n", nil, "/k.conf:1: warning: vrrp_track_process: P has no process: ignored, as keepalived does"},
		{"a name the kernel cuts", " process a_sixteen_chars_\n", &TrackProcess{Process: "a_sixteen_chars_", Quorum: 1},
			"/k.conf:1: warning: vrrp_track_process: P: process \"a_sixteen_chars_\" never matches: the kernel keeps the first 15 characters of a process's name (give full_command to match its command line)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := parseDiags(t, "vrrp_track_process P {\n"+tt.body+"}\n", tt.diags)
			var got *TrackProcess
			if len(cfg.TrackProcesses) > 0 {
				got = cfg.TrackProcesses[0]
				got.Pos, got.Name = Pos{}, ""
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("vrrp_track_process (-want +got):\n%s", d)
			}
		})
	}
}

// TestTrackProcessUses: the instance's and sync group's entries as
// keepalived's alloc_track_process and vrrp_complete_init leave them.
func TestTrackProcessUses(t *testing.T) {
	procs := "vrrp_track_process p {\n process a\n}\nvrrp_track_process w {\n process b\n weight 5 reverse\n}\n"
	inst := func(prio int, body string) string {
		return "vrrp_instance VI_1 {\n interface eth0\n virtual_router_id 1\n priority " + itoa(prio) + "\n track_process {\n" + body + " }\n}\n"
	}
	group := "vrrp_instance VI_2 {\n interface eth0\n virtual_router_id 2\n}\nvrrp_sync_group G {\n group {\n  VI_1\n  VI_2\n }\n track_process {\n  w\n }\n}\n"
	tests := []trackCase{
		{"the process's weight by default", procs + inst(100, "  p\n  w\n"), "p:0 w:5r", "", ""},
		{"the entry's own", procs + inst(100, "  w weight -3 noreverse\n  p weight 2 reverse\n"), "w:-3 p:2r", "", ""},
		{"weight alone keeps the process's reverse", procs + inst(100, "  w weight 7\n"), "w:7r", "", ""},
		{"bad weight: the process's", procs + inst(100, "  w weight 300\n"), "w:5r", "",
			"/k.conf:13: warning: w: (VI_1) weight \"300\" for track process w is not in -254..254: the process's weight 5 is used, as keepalived does"},
		{"unknown option drops the entry", procs + inst(100, "  p wait 3\n"), "", "",
			"/k.conf:13: warning: p: (VI_1) unknown track process option \"wait\": the entry is ignored, as keepalived does"},
		{"duplicate", procs + inst(100, "  p\n  p weight 3\n"), "p:0", "",
			"/k.conf:14: warning: track_process: (VI_1) duplicate track_process p: ignored, as keepalived does"},
		{"defined after: not found", inst(100, "  p\n") + procs, "", "",
			"/k.conf:6: warning: track_process: (VI_1) track process p not found: ignored, as keepalived does (keepalived looks it up where it is tracked, and it is defined further down, at /k.conf:9)"},
		{"sync group member keeps its weights", procs + inst(100, "  w\n") + group, "w:5r", "w:5r", ""},
		{"address owner keeps its weights", procs + inst(255, "  w\n"), "w:5r", "", ""},
		{"sync group with an owner: weight 0", procs + inst(255, "  p\n") + group, "p:0", "w:0r",
			"/k.conf:26: warning: track_process: (G) weighted track process w with a member of priority 255: weight 0 used, as keepalived does"},
	}
	testTracked(t, "track_process", tests,
		func(c *Config) []TrackProcessUse { return c.Instances[0].TrackProcesses },
		func(c *Config) []TrackProcessUse { return c.SyncGroups[0].TrackProcesses },
		func(u TrackProcessUse) (string, int, bool) { return u.Name, u.Weight, u.Reverse })
}

// TestTrackProcessWithoutVRRPPrefix: a top-level "track_process NAME {
// }" is unknown to keepalived too, which ignores it; the warning points
// to vrrp_track_process rather than to the instance's track_process.
func TestTrackProcessWithoutVRRPPrefix(t *testing.T) {
	want := `/k.conf:1: warning: track_process: unknown keyword in the top level, ignored as keepalived does; did you mean "vrrp_track_process"?`
	parseDiags(t, "track_process chk {\n process haproxy\n}\n", want)
}

// TestTrackProcessNetNamespace: net_namespace (not supported) beside a
// tracked process says what is lost.
func TestTrackProcessNetNamespace(t *testing.T) {
	conf := "\nnet_namespace blue\nvrrp_track_process p {\n process a\n}\n" +
		"vrrp_instance VI_1 {\n interface eth0\n virtual_router_id 1\n virtual_ipaddress {\n  10.0.0.1\n }\n track_process {\n  p\n }\n}\n"
	want := "/k.conf:2: warning: net_namespace: with vrrp_track_process: keepalived follows processes from inside its net_namespace, directord run inside the namespace cannot (no process is counted)"
	parseDiags(t, conf, want)
}
