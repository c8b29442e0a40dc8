package systemd

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const unitFile = "../../dist/directord.service"

// unit is a unit file's settings: section, then key, then every value
// given, in order.
type unit map[string]map[string][]string

func readUnit(t *testing.T, path string) unit {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u := unit{}
	section := ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case line[0] == '[' && line[len(line)-1] == ']':
			section = line[1 : len(line)-1]
			u[section] = map[string][]string{}
		case strings.HasSuffix(line, `\`):
			t.Fatalf("%s:%d: continued lines are not read by this test", path, n)
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("%s:%d: not a setting: %q", path, n, line)
			}
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			u[section][k] = append(u[section][k], v)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return u
}

// TestUnitSettings checks what the daemon and the docs rely on, which
// systemd-analyze verify cannot: it accepts any valid value.
func TestUnitSettings(t *testing.T) {
	u := readUnit(t, unitFile)
	tests := []struct {
		section, key string
		want         []string
	}{
		{"Unit", "After", []string{"network-online.target"}},
		{"Unit", "Wants", []string{"network-online.target"}},
		{"Service", "Type", []string{"notify"}},
		{"Service", "NotifyAccess", []string{"main"}},
		{"Service", "EnvironmentFile", []string{"-/etc/default/directord"}},
		{"Service", "ExecStart", []string{"/usr/sbin/directord --dont-fork --log-console $DAEMON_ARGS"}},
		{"Service", "ExecReload", []string{"/bin/kill -HUP $MAINPID"}},
		{"Service", "WatchdogSec", []string{"10s"}},
		{"Service", "Restart", []string{"on-failure"}},
		{"Service", "RestartSec", []string{"1s"}},
		{"Service", "KillMode", []string{"process"}},
		{"Service", "TimeoutStopSec", []string{"30s"}},
		{"Service", "RuntimeDirectory", []string{"directord"}},
		{"Service", "ProtectSystem", []string{"full"}},
		{"Service", "ProtectHome", []string{"read-only"}},
		{"Service", "PrivateTmp", []string{"yes"}},
		{"Service", "NoNewPrivileges", []string{"no"}},
		{"Install", "WantedBy", []string{"multi-user.target"}},
	}
	for _, tt := range tests {
		if got := u[tt.section][tt.key]; !slices.Equal(got, tt.want) {
			t.Errorf("[%s] %s = %q, want %q", tt.section, tt.key, got, tt.want)
		}
	}

	// The capabilities directord needs, and not CAP_SYS_MODULE
	// (modules-load.d loads ip_vs) or CAP_SYS_ADMIN (link tracking does
	// not setns); integration's TestUnitCapabilities runs with them.
	var caps []string
	for _, v := range u["Service"]["CapabilityBoundingSet"] {
		caps = append(caps, strings.Fields(v)...)
	}
	slices.Sort(caps)
	want := []string{"CAP_DAC_READ_SEARCH", "CAP_KILL", "CAP_NET_ADMIN", "CAP_NET_BIND_SERVICE",
		"CAP_NET_RAW", "CAP_SETGID", "CAP_SETUID", "CAP_SYS_NICE"}
	if !slices.Equal(caps, want) {
		t.Errorf("CapabilityBoundingSet = %q, want %q", caps, want)
	}

	// Options that would imply NoNewPrivileges=yes for a unit without
	// CAP_SYS_ADMIN, or break directord outright (sysctls, SCHED_RR).
	for _, k := range []string{"SystemCallFilter", "SystemCallArchitectures", "RestrictAddressFamilies",
		"RestrictNamespaces", "RestrictRealtime", "RestrictSUIDSGID", "ProtectKernelTunables",
		"ProtectKernelModules", "ProtectKernelLogs", "ProtectClock", "ProtectHostname",
		"PrivateDevices", "MemoryDenyWriteExecute", "LockPersonality", "DynamicUser", "User"} {
		if v, ok := u["Service"][k]; ok {
			t.Errorf("%s = %q: it would stop setuid scripts or directord itself", k, v)
		}
	}
}

func TestDistFiles(t *testing.T) {
	tests := []struct {
		path string
		line string // a line the file must have
	}{
		{"../../dist/directord.default", `DAEMON_ARGS=""`},
		{"../../dist/modules-load.d/directord.conf", "ip_vs"},
	}
	for _, tt := range tests {
		b, err := os.ReadFile(tt.path)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(strings.Split(string(b), "\n"), tt.line) {
			t.Errorf("%s has no line %q", tt.path, tt.line)
		}
	}
}

// TestUnitVerify runs systemd-analyze verify on the unit. It needs no
// running systemd: --root points it at a folder holding the unit, the
// host's system units (for the targets it names) and a stub of each
// command it runs, which verify checks are executable.
func TestUnitVerify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("no systemd-analyze")
	}
	var units string
	for _, d := range []string{"/usr/lib/systemd/system", "/lib/systemd/system"} {
		if _, err := os.Stat(filepath.Join(d, "multi-user.target")); err == nil {
			units = d
			break
		}
	}
	if units == "" {
		t.Skip("no system units to verify against")
	}
	root := t.TempDir()
	if err := os.CopyFS(filepath.Join(root, "usr/lib/systemd/system"), os.DirFS(units)); err != nil {
		t.Fatal(err)
	}
	u := readUnit(t, unitFile)
	for _, k := range []string{"ExecStart", "ExecReload"} {
		for _, v := range u["Service"][k] {
			cmd := strings.Fields(v)[0]
			stub(t, filepath.Join(root, strings.TrimLeft(cmd, "-@:+!")))
		}
	}
	src, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(root, "etc/systemd/system/directord.service")
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, src, 0o644); err != nil {
		t.Fatal(err)
	}

	// verify exits 0 after warnings (an unknown key, a bad value), so any
	// output is a failure too.
	out, err := exec.Command(analyze, "verify", "--man=no", "--root="+root, "directord.service").CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, strings.ReplaceAll(string(out), dst, unitFile))
	}
}

func stub(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}
