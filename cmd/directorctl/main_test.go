package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/directord/directord/internal/control"
	"github.com/directord/directord/internal/controltest"
)

// fakeDirectord is a Backend with a fixed status, the real servers in
// reals and the outcome of the next reload.
type fakeDirectord struct {
	mu      sync.Mutex
	status  control.Status
	reals   map[string]bool
	drained map[string]bool
	reload  control.Reload
}

func (f *fakeDirectord) Status() control.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status
}

func (f *fakeDirectord) Drain(real string, on bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.reals[real] {
		return fmt.Errorf("%s: no virtual server has this real server", real)
	}
	f.drained[real] = on
	return nil
}

func (f *fakeDirectord) Reload() control.Reload {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reload
}

func (f *fakeDirectord) DrainDirector(_ context.Context, on bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.drained["director"] = on
	return nil
}

func (f *fakeDirectord) isDrained(real string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.drained[real]
}

// serve runs a control server for b on a socket in dir until the test
// ends, and returns the socket's path and the server's logs.
func serve(t *testing.T, dir string, b control.Backend, allow func(uint32) bool) (string, *controltest.Logs) {
	t.Helper()
	logs := &controltest.Logs{}
	srv := &control.Server{Backend: b, Log: slog.New(slog.NewTextHandler(logs, nil)), AllowUID: allow}
	path := filepath.Join(dir, "directord.sock")
	controltest.Serve(t, path, control.Listen, srv.Serve)
	return path, logs
}

var t0 = time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)

const badConfig = `/etc/keepalived/keepalived.conf:12: unknown keyword "lb_algoo"`

func sampleStatus() control.Status {
	return control.Status{
		Version:        "1.2.3",
		PID:            4242,
		Started:        t0,
		ConfigFile:     "/etc/keepalived/keepalived.conf",
		LastReload:     &control.Reload{At: t0.Add(time.Hour), Error: badConfig},
		LastGoodReload: t0.Add(30 * time.Minute),
		ReloadsOK:      1,
		ReloadsFailed:  1,
		Instances: []control.Instance{{
			Name: "VI_1", VRID: 51, Interface: "eth0", Version: 3, State: "MASTER", Since: t0,
			Priority: 150, EffectivePriority: 140, MasterAddr: "192.0.2.10", VIPs: []string{"192.0.2.1/24", "2001:db8::1/64"},
		}, {
			Name: "VI_2", VRID: 52, Interface: "eth1", Version: 2, State: "BACKUP", Since: t0.Add(90 * time.Minute),
			Priority: 100, EffectivePriority: 100, VIPs: []string{"198.51.100.1/24"},
		}},
		VirtualServers: []control.VirtualServer{{
			Name: "192.0.2.1 443", Position: "keepalived.conf:30", Protocol: "TCP", Scheduler: "wrr", Forwarding: "DR", QuorumUp: true,
			Digest: "sha256:0123456789abcdef",
			Reals: []control.Real{
				{Addr: "10.0.0.1:443", Alive: true, Weight: 3, EffectiveWeight: 3, Checks: []control.Check{
					{Type: "SSL_GET", Result: "up", Latency: 1200 * time.Microsecond, At: t0.Add(2*time.Hour - 2*time.Second)},
					{Type: "MISC_CHECK", Result: "up", Latency: 40 * time.Millisecond, At: t0.Add(2*time.Hour - 5*time.Second)},
				}},
				{Addr: "10.0.0.2:443", Alive: true, Drained: true, Weight: 1, EffectiveWeight: 0, Checks: []control.Check{
					{Type: "SSL_GET", Result: "up", Latency: 900 * time.Microsecond, At: t0.Add(2*time.Hour - time.Second)},
				}},
			},
		}, {
			Name: "fwmark 7", Position: "keepalived.conf:50", Protocol: "TCP", Scheduler: "rr", Forwarding: "NAT", QuorumUp: false,
			Reals: []control.Real{
				{Addr: "10.0.1.1:80", Weight: 1, EffectiveWeight: -1, Checks: []control.Check{
					{Type: "TCP_CHECK", Result: "down", Reason: "connection refused", Latency: 300 * time.Microsecond, At: t0.Add(2*time.Hour - 3*time.Second)},
				}},
				{Addr: "10.0.1.2:80", Weight: 2, EffectiveWeight: 0, Checks: []control.Check{{Type: "HTTP_GET"}}},
				{Addr: "10.0.1.4:80", Alive: true, Weight: 1, EffectiveWeight: 1, Checks: []control.Check{
					{Type: "TCP_CHECK", Result: "up", Latency: 200 * time.Microsecond, At: t0.Add(time.Hour), Suspended: true}}},
				{Addr: "10.0.1.3:80", Alive: true, Weight: 1, EffectiveWeight: 1, Checks: []control.Check{},
					Unchecked: []string{"DNS_CHECK at keepalived.conf:60"}},
			},
		}},
		Drained: []string{"10.0.0.2:443"},
		IPVS:    control.IPVS{Operations: 12, Errors: 1, LastSync: t0.Add(2*time.Hour - 10*time.Second)},
		BGP: &control.BGP{LocalAS: 65010, RouterID: "10.0.0.11",
			Neighbors: []control.BGPNeighbor{
				{Address: "10.0.0.1", RemoteAS: 65000, State: "established", Since: t0, BFD: "up", PrefixesSent: 1},
				{Address: "10.0.0.2", RemoteAS: 65000, State: "active"}},
			Addresses: []control.BGPAddress{
				{Prefix: "192.0.2.1/32", Announced: true, Reason: "serving", Detail: "every virtual server of the address is programmed and has quorum", Dev: "lo", Since: t0.Add(time.Hour)},
				{Prefix: "192.0.2.2/32", Reason: "no-quorum", Detail: "TCP 192.0.2.2:80 has no quorum", Dev: "lo"}}},
	}
}

func newFake() *fakeDirectord {
	return &fakeDirectord{
		status:  sampleStatus(),
		reals:   map[string]bool{"10.0.0.2:443": true, "[2001:db8::5]:443": true},
		drained: map[string]bool{},
		reload:  control.Reload{At: t0, OK: true},
	}
}

// ctl runs directorctl with args and returns its exit code and outputs.
func ctl(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestCommands(t *testing.T) {
	tests := []struct {
		name       string
		args       []string // after -s SOCKET
		reload     *control.Reload
		wantCode   int
		wantOut    []string // in standard output
		wantErr    []string // in standard error
		wantDrains map[string]bool
	}{
		{name: "status", args: []string{"status"}, wantOut: []string{"directord 1.2.3, pid 4242", "VI_1", "10.0.0.2:443  drained (up)"}},
		{name: "status with the ipvs digest", args: []string{"status"},
			wantOut: []string{"  192.0.2.1 443 (keepalived.conf:30): TCP, wrr, DR, quorum up\n    ipvs digest sha256:0123456789abcdef\n"}},
		{name: "status of a suspended check", args: []string{"status"},
			wantOut: []string{"ago, suspended (ha_suspend)"}},
		{name: "status of an unchecked real server", args: []string{"status"},
			wantOut: []string{"10.0.1.3:80  up (unchecked)  1→1       not run", "DNS_CHECK at keepalived.conf:60 not supported by directord: checks nothing; UNCHECKED, always alive"}},
		{name: "drain", args: []string{"drain", "10.0.0.2:443"},
			wantOut:    []string{"drained 10.0.0.2:443: weight 0", "established connections continue", "until: directorctl undrain 10.0.0.2:443"},
			wantDrains: map[string]bool{"10.0.0.2:443": true}},
		{name: "undrain", args: []string{"undrain", "10.0.0.2:443"}, wantOut: []string{"undrained 10.0.0.2:443"},
			wantDrains: map[string]bool{"10.0.0.2:443": false}},
		{name: "drain IPv6", args: []string{"drain", "[2001:DB8::5]:443"}, wantOut: []string{"drained [2001:db8::5]:443"},
			wantDrains: map[string]bool{"[2001:db8::5]:443": true}},
		{name: "drain --json", args: []string{"drain", "--json", "10.0.0.2:443"}, wantOut: []string{`"real": "10.0.0.2:443"`, `"drained": true`},
			wantDrains: map[string]bool{"10.0.0.2:443": true}},
		{name: "drain unknown", args: []string{"drain", "10.0.0.9:80"}, wantCode: 1,
			wantErr: []string{"directorctl: drain 10.0.0.9:80: 10.0.0.9:80: no virtual server has this real server"}},
		{name: "drain bad address", args: []string{"drain", "10.0.0.2"}, wantCode: 2,
			wantErr: []string{`directorctl: drain: "10.0.0.2" is not ADDR:PORT ([ADDR]:PORT for IPv6)`, "Usage: directorctl"}},
		{name: "drain without address", args: []string{"drain"}, wantCode: 2, wantErr: []string{"drain takes one real server"}},
		{name: "drain-director", args: []string{"drain-director"}, wantOut: []string{"drained: every BGP route of this director is withdrawn", "until: directorctl undrain-director"},
			wantDrains: map[string]bool{"director": true}},
		{name: "undrain-director", args: []string{"undrain-director"}, wantOut: []string{"undrained: what this director can serve is announced again"},
			wantDrains: map[string]bool{"director": false}},
		{name: "drain-director with argument", args: []string{"drain-director", "x"}, wantCode: 2, wantErr: []string{"drain-director takes no argument"}},
		{name: "reload OK", args: []string{"reload"}, wantOut: []string{"reload OK"}},
		{name: "reload failed", args: []string{"reload"}, reload: &control.Reload{At: t0, Error: badConfig}, wantCode: 1,
			wantErr: []string{"directorctl: reload failed: " + badConfig, "goes on with the configuration it was running"}},
		{name: "reload failed --json", args: []string{"--json", "reload"}, reload: &control.Reload{At: t0, Error: badConfig}, wantCode: 1,
			wantOut: []string{`"ok": false`, `"error": "/etc/keepalived/keepalived.conf:12: unknown keyword \"lb_algoo\""`},
			wantErr: []string{"reload failed: " + badConfig}},
		{name: "no command", wantCode: 2, wantErr: []string{"directorctl: no command", "Usage:"}},
		{name: "unknown command", args: []string{"restart"}, wantCode: 2, wantErr: []string{`unknown command "restart"`}},
		{name: "unknown option", args: []string{"-x", "status"}, wantCode: 2, wantErr: []string{"unknown option -x"}},
		{name: "status with argument", args: []string{"status", "now"}, wantCode: 2, wantErr: []string{"status takes no argument"}},
		{name: "help", args: []string{"help"}, wantOut: []string{"Usage: directorctl", "drain ADDR:PORT"}},
		{name: "-h", args: []string{"-h"}, wantOut: []string{"Usage: directorctl"}},
		{name: "version", args: []string{"--version"}, wantOut: []string{"directorctl dev"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake()
			if tt.reload != nil {
				f.reload = *tt.reload
			}
			path, _ := serve(t, t.TempDir(), f, nil)
			code, out, errOut := ctl(append([]string{"-s", path}, tt.args...)...)
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.wantCode, out, errOut)
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
			if tt.wantErr == nil && errOut != "" {
				t.Errorf("stderr: %s", errOut)
			}
			for real, want := range tt.wantDrains {
				if got := f.isDrained(real); got != want {
					t.Errorf("%s drained: %v, want %v", real, got, want)
				}
			}
		})
	}
}

func TestStatusJSON(t *testing.T) {
	f := newFake()
	path, _ := serve(t, t.TempDir(), f, nil)
	code, out, errOut := ctl("--socket="+path, "status", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got control.Status
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not a Status: %v\n%s", err, out)
	}
	if diff := cmp.Diff(sampleStatus(), got); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(out, "{\n  \"version\": \"1.2.3\",\n") {
		t.Errorf("not indented:\n%s", out)
	}
}

func TestNotRunning(t *testing.T) {
	path := filepath.Join(t.TempDir(), "directord.sock")
	code, _, errOut := ctl("-s"+path, "status")
	if want := "directorctl: directord is not running (no control socket at " + path + ")\n"; code != 1 || errOut != want {
		t.Errorf("exit %d, stderr %q; want 1, %q", code, errOut, want)
	}
}

// row returns the fields of the line of out that has all of keys.
func row(t *testing.T, out string, keys ...string) []string {
	t.Helper()
next:
	for line := range strings.Lines(out) {
		for _, k := range keys {
			if !strings.Contains(line, k) {
				continue next
			}
		}
		return strings.Fields(line)
	}
	t.Errorf("no line with %q in:\n%s", keys, out)
	return nil
}

func TestWriteStatus(t *testing.T) {
	now := t0.Add(2 * time.Hour)
	var b bytes.Buffer
	if err := writeStatus(&b, sampleStatus(), now); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	t.Logf("\n%s", out)
	started := t0.Local().Format(timeLayout)

	tests := []struct {
		name string
		keys []string // find the line with these
		want []string // its fields
	}{
		{name: "header", keys: []string{"pid"}, want: strings.Fields("directord 1.2.3, pid 4242, up since " + started + " (2h0m ago)")},
		{name: "config", keys: []string{"config:"}, want: []string{"config:", "/etc/keepalived/keepalived.conf"}},
		{name: "ipvs", keys: []string{"ipvs:"}, want: strings.Fields("ipvs: 12 operations, 1 errors, last sync 10s ago")},
		{name: "drained", keys: []string{"drained:"}, want: []string{"drained:", "10.0.0.2:443"}},
		{name: "instance header", keys: []string{"VRID"}, want: []string{"NAME", "VRID", "INTERFACE", "STATE", "SINCE", "PRIO/EFFECTIVE", "MASTER", "VIPS"}},
		{name: "master", keys: []string{"VI_1"}, want: strings.Fields("VI_1 51 eth0 MASTER 2h0m ago 150/140 192.0.2.10 192.0.2.1/24, 2001:db8::1/64")},
		{name: "backup", keys: []string{"VI_2"}, want: strings.Fields("VI_2 52 eth1 BACKUP 30m0s ago 100/100 - 198.51.100.1/24")},
		{name: "virtual server", keys: []string{"192.0.2.1 443"}, want: strings.Fields("192.0.2.1 443 (keepalived.conf:30): TCP, wrr, DR, quorum up")},
		{name: "quorum lost", keys: []string{"fwmark 7"}, want: strings.Fields("fwmark 7 (keepalived.conf:50): TCP, rr, NAT, quorum DOWN")},
		{name: "real header", keys: []string{"ADDR"}, want: []string{"ADDR", "HEALTH", "WEIGHT", "LAST", "CHECK", "LATENCY", "REASON"}},
		{name: "up", keys: []string{"10.0.0.1:443"}, want: strings.Fields("10.0.0.1:443 up 3→3 SSL_GET up 2s ago 1.2ms")},
		{name: "second check", keys: []string{"MISC_CHECK"}, want: strings.Fields("MISC_CHECK up 5s ago 40ms")},
		{name: "drained real", keys: []string{"10.0.0.2:443", "SSL_GET"}, want: strings.Fields("10.0.0.2:443 drained (up) 1→0 SSL_GET up 1s ago 900µs")},
		{name: "down, not in the kernel", keys: []string{"10.0.1.1:80"}, want: strings.Fields("10.0.1.1:80 down 1→absent TCP_CHECK down 3s ago 300µs connection refused")},
		{name: "not checked yet", keys: []string{"10.0.1.2:80"}, want: strings.Fields("10.0.1.2:80 down 2→0 HTTP_GET pending -")},
		{name: "bgp", keys: []string{"BGP:"}, want: strings.Fields("BGP: AS 65010, router_id 10.0.0.11")},
		{name: "bgp neighbor header", keys: []string{"NEIGHBOR"}, want: strings.Fields("NEIGHBOR AS STATE UP BFD SENT")},
		{name: "bgp neighbor", keys: []string{"10.0.0.1 "}, want: strings.Fields("10.0.0.1 65000 established 2h0m ago up 1")},
		{name: "bgp neighbor down", keys: []string{"10.0.0.2 "}, want: strings.Fields("10.0.0.2 65000 active - - 0")},
		{name: "announced", keys: []string{"192.0.2.1/32"}, want: strings.Fields("192.0.2.1/32 yes 1h0m ago lo serving: every virtual server of the address is programmed and has quorum")},
		{name: "not announced", keys: []string{"192.0.2.2/32"}, want: strings.Fields("192.0.2.2/32 NO - lo no-quorum: TCP 192.0.2.2:80 has no quorum")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, row(t, out, tt.keys...)); diff != "" {
				t.Errorf("line with %q (-want +got):\n%s", tt.keys, diff)
			}
		})
	}
	// The failed reload, with the file:line, and what runs instead.
	for _, w := range []string{
		"last reload: " + t0.Add(time.Hour).Local().Format(timeLayout) + " (1h0m ago), FAILED (since start: 1 OK, 1 failed): " + badConfig,
		"running configuration: the one reloaded " + t0.Add(30*time.Minute).Local().Format(timeLayout) + " (1h30m ago)",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("no %q in:\n%s", w, out)
		}
	}
	for line := range strings.Lines(out) {
		if strings.HasSuffix(line, " \n") {
			t.Errorf("trailing blanks: %q", line)
		}
	}
}

func TestWriteStatusEmpty(t *testing.T) {
	var b bytes.Buffer
	st := control.Status{Version: "dev", PID: 1, Started: t0, ConfigFile: "k.conf"}
	if err := writeStatus(&b, st, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"last reload: none (since start: 0 OK, 0 failed)", "last sync -", "VRRP instances: none", "Virtual servers: none"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("no %q in:\n%s", w, b.String())
		}
	}
}

func TestAgo(t *testing.T) {
	now := t0
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "0s ago"},
		{1400 * time.Millisecond, "1s ago"},
		{59*time.Minute + 59*time.Second, "59m59s ago"},
		{3*time.Hour + 12*time.Minute + 40*time.Second, "3h13m ago"},
		{50 * time.Hour, "2d2h ago"},
		{-time.Second, "just now"},
	}
	for _, tt := range tests {
		if got := ago(now.Add(-tt.d), now); got != tt.want {
			t.Errorf("ago(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
	if got := ago(time.Time{}, now); got != "-" {
		t.Errorf("ago(zero) = %q, want -", got)
	}
}

func TestParseArgs(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    options
		wantErr string
	}{
		{name: "default socket", args: []string{"status"}, want: options{socket: control.DefaultSocket, args: []string{"status"}}},
		{name: "-s PATH", args: []string{"-s", "/x.sock", "status"}, want: options{socket: "/x.sock", args: []string{"status"}}},
		{name: "-sPATH", args: []string{"-s/x.sock", "status"}, want: options{socket: "/x.sock", args: []string{"status"}}},
		{name: "--socket PATH", args: []string{"--socket", "/x.sock", "status"}, want: options{socket: "/x.sock", args: []string{"status"}}},
		{name: "--socket=PATH", args: []string{"--socket=/x.sock", "status"}, want: options{socket: "/x.sock", args: []string{"status"}}},
		{name: "options after the command", args: []string{"drain", "10.0.0.1:80", "--json"},
			want: options{socket: control.DefaultSocket, json: true, args: []string{"drain", "10.0.0.1:80"}}},
		{name: "--", args: []string{"--", "status", "--json"}, want: options{socket: control.DefaultSocket, args: []string{"status", "--json"}}},
		{name: "-n NAME", args: []string{"-n", "lb", "status"}, want: options{socket: "/run/directord/lb/directord.sock", args: []string{"status"}}},
		{name: "--namespace=NAME", args: []string{"status", "--namespace=lb"}, want: options{socket: "/run/directord/lb/directord.sock", args: []string{"status"}}},
		{name: "-n path", args: []string{"-n", "../x", "status"}, wantErr: `"../x" is not a network namespace name`},
		{name: "-s without path", args: []string{"status", "-s"}, wantErr: "-s needs a path"},
		{name: "empty path", args: []string{"--socket=", "status"}, wantErr: "the socket path is empty"},
		{name: "unknown", args: []string{"--jsn"}, wantErr: "unknown option --jsn"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseArgs(tt.args)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Errorf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(options{})); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
		})
	}
}
