package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/directord/directord/internal/ipvstest"
)

func TestParseFlags(t *testing.T) {
	tests := []struct {
		args []string
		want options
		err  string
	}{
		{args: nil, want: options{file: "/etc/keepalived/keepalived.conf", logFormat: "text"}},
		{args: []string{"-t", "-f", "/x.conf"}, want: options{file: "/x.conf", configTest: true, logFormat: "text"}},
		{args: []string{"-nlD", "-f/x.conf", "-ilb1"}, want: options{file: "/x.conf", dontFork: true, logConsole: true, logDetail: true, configID: "lb1", logFormat: "text"}},
		{args: []string{"-tf", "/x.conf"}, want: options{file: "/x.conf", configTest: true, logFormat: "text"}},
		{args: []string{"--use-file=/x.conf", "--config-test=/tmp/log", "--config-id", "b"}, want: options{file: "/x.conf", configTest: true, configID: "b", logFormat: "text"}},
		{args: []string{"--dump-config", "-P", "-C", "-p", "/run/d.pid", "--log-format", "json", "--metrics-address=:9100", "--control-socket", "/tmp/d.sock"},
			want: options{file: "/etc/keepalived/keepalived.conf", dumpConfig: true, vrrpOnly: true, checkOnly: true, pidFile: "/run/d.pid", logFormat: "json", metrics: ":9100", control: "/tmp/d.sock", controlSet: true}},
		{args: []string{"-s", "lb", "-t"}, want: options{file: "/etc/keepalived/keepalived.conf", netns: "lb", configTest: true, logFormat: "text"}},
		{args: []string{"--namespace=lb"}, want: options{file: "/etc/keepalived/keepalived.conf", netns: "lb", logFormat: "text"}},
		{args: []string{"-s", "../lb"}, err: `--namespace: "../lb" is not a network namespace name`},
		{args: []string{"-x"}, err: "unknown option -x"},
		{args: []string{"--nope"}, err: "unknown option --nope"},
		{args: []string{"-f"}, err: "-f needs a value"},
		{args: []string{"--log-format", "xml"}, err: `--log-format takes text or json, not "xml"`},
		{args: []string{"--dont-fork=yes"}, err: "--dont-fork takes no value"},
		{args: []string{"stray"}, err: `unexpected argument "stray"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			got, err := parseFlags(tt.args)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("error %v, want %s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.want.control == "" {
				tt.want.control = "/run/directord/directord.sock"
			}
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", *got, tt.want)
			}
		})
	}
}

func writeConf(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "keepalived.conf")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const goodConf = `vrrp_instance VI_1 {
    interface eth0
    virtual_router_id 7
    virtual_ipaddress {
        192.0.2.1
    }
}
virtual_server 192.0.2.1 443 {
    protocol TCP
    lvs_method DR
    real_server 192.0.2.10 443 {
        TCP_CHECK {
        }
    }
}
`

// TestConfigTestExitCodes checks -t's exit codes against keepalived's:
// 0 good, 4 unreadable, 5 errors; errors go to standard error with file:line.
func TestConfigTestExitCodes(t *testing.T) {
	good := writeConf(t, goodConf)
	bad := writeConf(t, strings.Replace(goodConf, "virtual_router_id 7", "virtual_router_id 300", 1))
	// keepalived runs past an unknown state (BACKUP): so does directord,
	// unless --strict.
	lenient := writeConf(t, strings.Replace(goodConf, "interface eth0", "interface eth0\n    state SLAVE", 1))
	// The SSL block's files are read for -t, as keepalived's checker
	// reads them at its start.
	badCert := writeConf(t, "SSL {\n    certificate /nonexistent/client.pem\n    key /nonexistent/client.key\n}\n"+goodConf)
	haGroup := writeConf(t, strings.Replace(goodConf, "virtual_server 192.0.2.1 443 {\n", "virtual_server_group web {\n    192.0.2.1 443\n}\nvirtual_server group web {\n    ha_suspend\n", 1))
	unchecked := writeConf(t, strings.Replace(goodConf, "        TCP_CHECK {\n        }\n    }\n", `        FILE_CHECK {
        }
    }
    real_server 192.0.2.11 443 {
        PING_CHECK {
        }
        BFD_CHECK {
        }
        TCP_CHECK {
        }
    }
`, 1))
	// Each keyword run differently from keepalived is listed with its
	// file:line and how (config.Differences).
	differs := writeConf(t, strings.Replace(goodConf, "interface eth0", "interface eth0\n    no_accept", 1))
	withBGP := writeConf(t, "global_defs {\n    bgp {\n        local_as 65010\n        neighbor 10.0.1.1 {\n            remote_as 65000\n            bfd 100 3\n        }\n    }\n}\n"+
		strings.Replace(goodConf, "virtual_server 192.0.2.1 443 {\n", "virtual_server 192.0.2.1 443 {\n    announce bgp\n", 1))
	// Each function lost is one line, its keywords and lines listed.
	lost := writeConf(t, "garp_group {\n}\nglobal_defs {\n    enable_snmp_vrrp\n}\n"+
		strings.Replace(goodConf, "interface eth0", "interface eth0\n    use_ipvlan", 1))
	// A keyword used many times is listed once, at its first use.
	// Three virtual servers whose sorry servers name a method, which
	// keepalived ignores: one difference, used three times.
	var vss strings.Builder
	for _, port := range []string{"444", "445", "446"} {
		fmt.Fprintf(&vss, "virtual_server 192.0.2.1 %s {\n    protocol TCP\n    lvs_method DR\n    sorry_server 192.0.2.20 %s lvs_method NAT\n}\n", port, port)
	}
	many := writeConf(t, goodConf+vss.String())
	tests := []struct {
		name       string
		args       []string
		code       int
		stdout     string // a line the output must contain
		stderrPart string
	}{
		{"good", []string{"-t", "-f", good}, exitOK, "configuration OK: " + good, ""},
		{"summary", []string{"-t", "-f", good}, exitOK, "virtual_server TCP 192.0.2.1:443: wlc DR, 1 real servers, 1 checks", ""},
		{"bgp summary", []string{"-t", "-f", withBGP}, exitOK, "virtual_server TCP 192.0.2.1:443: wlc DR, 1 real servers, 1 checks, announced by BGP as 192.0.2.1/32 on lo\n" +
			"bgp: AS 65010, router_id derived at start, withdraw wait 2s\nbgp neighbor 10.0.1.1: AS 65000, hold time 1m30s, BFD 100ms x 3\n", ""},
		{"unchecked real servers", []string{"-t", "-f", unchecked}, exitOK,
			"differences from keepalived that this file relies on:\n" +
				"  real_server 192.0.2.10:443 (" + unchecked + ":11): FILE_CHECK at " + unchecked + ":12 not supported by directord; not checked at all: always alive\n" +
				"  real_server 192.0.2.11:443 (" + unchecked + ":15): PING_CHECK at " + unchecked + ":16, BFD_CHECK at " + unchecked + ":18 not supported by directord; checked only by its other checkers\n", ""},
		{"ha_suspend on a group", []string{"-t", "-f", haGroup}, exitOK,
			"  virtual_server group web (" + haGroup + ":11): ha_suspend runs its checks while an address of the group is on this host; keepalived's never match a group\n", ""},
		{"losses listed", []string{"-t", "-f", lost}, exitOK,
			"what this file relies on that directord does not do:\n" +
				"  no gratuitous ARP groups: garp_group at " + lost + ":1\n" +
				"  no SNMP or DBus (use directorctl and the Prometheus metrics): enable_snmp_vrrp at " + lost + ":4\n" +
				"  no ipvlan interface: use_ipvlan at " + lost + ":8\n", ""},
		{"a difference used three times, listed once", []string{"-t", "-f", many}, exitOK,
			"  " + many + ":19: sorry_server (in virtual_server) (used 3 times, first here): the words after the port", ""},
		{"differences listed", []string{"-t", "-f", differs}, exitOK,
			"differences from keepalived that this file relies on:\n  " + differs + ":3: no_accept (in vrrp_instance): a master drops traffic to and from its VIPs through keepalived's nftables tables", ""},
		{"bad", []string{"-t", "-f", bad}, exitConfigTest, "", bad + ":3: error: virtual_router_id: \"300\" is not an integer from 1 to 255"},
		{"lenient", []string{"-t", "-f", lenient}, exitOK, "configuration OK: " + lenient,
			lenient + ":3: warning: state: \"SLAVE\" is not MASTER or BACKUP: BACKUP, as keepalived does"},
		{"strict", []string{"--strict", "-t", "-f", lenient}, exitConfigTest, "",
			lenient + ":3: error: state: \"SLAVE\" is not MASTER or BACKUP: BACKUP, as keepalived does (refused: --strict)"},
		{"strict, good file", []string{"-t", "--strict", "-f", good}, exitOK, "configuration OK: " + good, ""},
		{"missing", []string{"-t", "-f", "/nonexistent/k.conf"}, exitConfig, "", "/nonexistent/k.conf: error: cannot read configuration"},
		{"SSL certificate missing", []string{"-t", "-f", badCert}, exitConfigTest, "", badCert + ":1: error: SSL: certificate: open /nonexistent/client.pem"},
		{"usage", []string{"-Z"}, exitUsage, "", "unknown option -Z"},
		{"version", []string{"--version"}, exitOK, "directord ", ""},
		// Never run the daemon itself here: it would speak VRRP on the
		// host's interfaces. The namespace tests run it.
		// -C runs no VRRP; without IPVS (our hosts) it stops at once.
		{"checks only without IPVS", []string{"-C", "-f", good}, exitFailure, "", "the kernel has no IPVS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "checks only without IPVS" && ipvstest.Available() {
				t.Skip("this kernel has IPVS: the daemon would program it")
			}
			var stdout, stderr bytes.Buffer
			code := run(tt.args, &stdout, &stderr)
			if code != tt.code {
				t.Errorf("exit %d, want %d\nstderr: %s", code, tt.code, stderr.String())
			}
			if !strings.Contains(stdout.String(), tt.stdout) {
				t.Errorf("stdout lacks %q:\n%s", tt.stdout, stdout.String())
			}
			if !strings.Contains(stderr.String(), tt.stderrPart) {
				t.Errorf("stderr lacks %q:\n%s", tt.stderrPart, stderr.String())
			}
		})
	}
}

// TestConfigTestScripts: -t checks the scripts on this host as keepalived's
// --config-test does: 6 when scripts run without enable_script_security,
// 5 when a vrrp_script is disabled, 0 when an insecure notify script is
// disabled (it says so, as the daemon would).
func TestConfigTestScripts(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the scripts' checks look at root's ownership")
	}
	dir := t.TempDir()
	ww := filepath.Join(dir, "ww")
	os.Mkdir(ww, 0o755)
	if err := syscall.Chmod(ww, 0o777); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(ww, "notify.sh")
	if err := os.WriteFile(bad, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	withScripts := func(global, script, notify string) string {
		return "global_defs {\n" + global + "\n}\nvrrp_script chk {\n script \"" + script + "\"\n}\n" +
			strings.Replace(goodConf, "virtual_router_id 7", "virtual_router_id 7\n    track_script {\n        chk\n    }\n    notify_master "+notify, 1)
	}
	secure := "enable_script_security\nscript_user root"
	tests := []struct {
		name, conf string
		code       int
		stderr     string
	}{
		{"scripts without enable_script_security", withScripts("", "/bin/true", "/bin/true"), exitConfigSecurity, "SECURITY VIOLATION"},
		{"secure scripts", withScripts(secure, "/bin/true", "/bin/true"), exitOK, ""},
		{"insecure notify script: disabled", withScripts(secure, "/bin/true", bad), exitOK, ":14: warning: notify_master: script disabled: unsafe permissions on " + ww},
		{"missing vrrp_script: disabled", withScripts(secure, "/nonexistent/chk.sh", "/bin/true"), exitConfigTest, ":6: warning: vrrp_script chk: script disabled"},
		// keepalived 2.2.7 exits 6 for wild-configs/30-mesos-lvs-sync-garp.conf.
		{"missing vrrp_script without enable_script_security: the violation wins", withScripts("", "/nonexistent/chk.sh", "/bin/true"), exitConfigSecurity, "SECURITY VIOLATION"},
		{"a bare name: found in PATH", withScripts(secure, "true", "/bin/true"), exitOK, `"true" found by a PATH search`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run([]string{"-t", "-f", writeConf(t, tt.conf)}, &stdout, &stderr)
			if code != tt.code {
				t.Errorf("exit %d, want %d\nstderr: %s", code, tt.code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tt.stderr, stderr.String())
			}
		})
	}
}

func TestDumpConfig(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--dump-config", "-f", writeConf(t, goodConf)}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var got struct {
		Instances []struct {
			VRID      int    `json:"virtual_router_id"`
			AdvertInt string `json:"advert_int"`
		} `json:"vrrp_instances"`
		VirtualServers []struct {
			Address     string `json:"address"`
			RealServers []struct {
				Checkers []struct {
					DelayLoop string `json:"delay_loop"`
				} `json:"checkers"`
			} `json:"real_servers"`
		} `json:"virtual_servers"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, stdout.String())
	}
	if len(got.Instances) != 1 || got.Instances[0].VRID != 7 || got.Instances[0].AdvertInt != "1s" {
		t.Errorf("instances: %+v", got.Instances)
	}
	if len(got.VirtualServers) != 1 || got.VirtualServers[0].Address != "192.0.2.1:443" ||
		got.VirtualServers[0].RealServers[0].Checkers[0].DelayLoop != "1m0s" {
		t.Errorf("virtual servers: %+v", got.VirtualServers)
	}
}

func TestSinceExec(t *testing.T) {
	files := map[string]string{
		"/proc/self/stat": "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 12345 0 0\n",
		"/proc/uptime":    "125.00 240.00\n",
	}
	read := func(p string) ([]byte, error) {
		if s, ok := files[p]; ok {
			return []byte(s), nil
		}
		return nil, os.ErrNotExist
	}
	if d, ok := sinceExec(read); !ok || d != 1550*time.Millisecond {
		t.Errorf("got %v %v, want 1.55s (started at 123.45 s, now 125 s)", d, ok)
	}
	files["/proc/self/stat"] = "4242 (x) S 1"
	if _, ok := sinceExec(read); ok {
		t.Error("a short stat line was read")
	}
	if d, ok := sinceExec(os.ReadFile); !ok || d < 0 || d > time.Hour {
		t.Errorf("this process: %v %v", d, ok)
	}
}
