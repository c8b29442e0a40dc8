package script

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/directord/directord/config"
	"github.com/directord/directord/internal/scripttest"
)

// rootDir is a folder only root can write to, under /run (root's, 0755),
// with the test's scripts in it; it needs root to own files as root.
func rootDir(t *testing.T) string {
	t.Helper()
	return scripttest.RootDir(t, "directord-secure-")
}

func writeScript(t *testing.T, path, body string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // past the umask
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, path string, mode uint32) {
	t.Helper()
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Chmod(path, uint32(mode)); err != nil { // mode in the kernel's bits: 0o1777 is sticky
		t.Fatal(err)
	}
}

func TestCheckSecurity(t *testing.T) {
	dir := rootDir(t)
	ok := filepath.Join(dir, "ok.sh")
	writeScript(t, ok, "exit 0", 0o755)
	ww := filepath.Join(dir, "ww") // world-writable, not sticky
	mkdir(t, ww, 0o777)
	inWW := filepath.Join(ww, "bad.sh")
	writeScript(t, inWW, "exit 0", 0o755)
	linkInWW := filepath.Join(ww, "link.sh") // -> ok.sh: the link itself can be replaced
	if err := os.Symlink(ok, linkInWW); err != nil {
		t.Fatal(err)
	}
	linkToWW := filepath.Join(dir, "tobad.sh") // a safe link to a file in ww
	if err := os.Symlink(inWW, linkToWW); err != nil {
		t.Fatal(err)
	}
	sticky := filepath.Join(dir, "sticky")
	mkdir(t, sticky, 0o1777)
	inSticky := filepath.Join(sticky, "s.sh")
	writeScript(t, inSticky, "exit 0", 0o755)
	worldFile := filepath.Join(dir, "world.sh")
	writeScript(t, worldFile, "exit 0", 0o757)
	groupRoot := filepath.Join(dir, "grouproot.sh") // group root may write
	writeScript(t, groupRoot, "exit 0", 0o775)
	groupOther := filepath.Join(dir, "groupother.sh")
	writeScript(t, groupOther, "exit 0", 0o775)
	os.Chown(groupOther, 0, 65534)
	notRoot := filepath.Join(dir, "nobody.sh")
	writeScript(t, notRoot, "exit 0", 0o755)
	os.Chown(notRoot, 65534, 0)
	noExec := filepath.Join(dir, "noexec.sh")
	writeScript(t, noExec, "exit 0", 0o644)
	ownerOnly := filepath.Join(dir, "owneronly.sh") // root may run it, nobody not
	writeScript(t, ownerOnly, "exit 0", 0o700)

	root := Policy{Security: true, User: "root"}
	off := Policy{User: "root"}
	nobody := Policy{Security: true, User: "nobody"}
	nobodyRoot := Policy{Security: true, User: "nobody", Group: "root"}
	tests := []struct {
		name     string
		cmd      string
		p        Policy
		disabled string // "" runs
		insecure string
		path     string
	}{
		{"root script in a root folder", ok, root, "", "", ok},
		{"world-writable script", worldFile, root, "unsafe permissions on " + worldFile, worldFile, ""},
		{"world-writable script, security off: runs, insecure", worldFile, off, "", worldFile, worldFile},
		{"script in a world-writable folder", inWW, root, "unsafe permissions on " + ww, ww, ""},
		{"link in a world-writable folder to a safe script", linkInWW, root, "unsafe permissions on " + ww, ww, ""},
		{"safe link to a script in a world-writable folder", linkToWW, root, "unsafe permissions on " + ww, ww, ""},
		{"script in a sticky folder", inSticky, root, "", "", inSticky},
		{"group-writable, group root", groupRoot, root, "", "", groupRoot},
		{"group-writable, other group", groupOther, root, "unsafe permissions on " + groupOther, groupOther, ""},
		{"script of another user", notRoot, root, "unsafe permissions on " + notRoot, notRoot, ""},
		{"not executable", noExec, root, "not executable for uid:gid 0:0", "", ""},
		{"missing", filepath.Join(dir, "missing.sh"), root, "cannot be accessed", "", ""},
		{"bare name found in PATH", "sh", root, "", "", "/usr/bin/dash"},
		{"bare name not in PATH", "no-such-command-here", root, "not found in PATH", "", ""},
		// A user other than root: keepalived does not check the path.
		{"script_user nobody: an insecure path is not checked", inWW, nobody, "", "", inWW},
		{"script_user nobody cannot run a root-only script", ownerOnly, nobody, "not executable for uid:gid 65534:", "", ""},
		{"script_user nobody root: group root is checked", inWW, nobodyRoot, "unsafe permissions on " + ww, ww, ""},
		{"script_user that does not exist", ok, Policy{Security: true, User: "no-such-user-dd"}, "script user no-such-user-dd", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &config.Script{Command: tt.cmd, Args: []string{tt.cmd}}
			pr := Check(s, tt.p)
			switch {
			case tt.disabled == "" && pr.Disabled != nil:
				t.Fatalf("disabled: %v", pr.Disabled)
			case tt.disabled != "" && (pr.Disabled == nil || !strings.Contains(pr.Disabled.Error(), tt.disabled)):
				t.Fatalf("disabled %v, want an error with %q", pr.Disabled, tt.disabled)
			}
			if pr.Insecure != tt.insecure {
				t.Errorf("insecure %q, want %q", pr.Insecure, tt.insecure)
			}
			if tt.path != "" {
				want, _ := filepath.EvalSymlinks(tt.path)
				if pr.Path != want {
					t.Errorf("path %q, want %q", pr.Path, want)
				}
			}
		})
	}
}

// TestDefaultUserUnderSecurity: with enable_script_security, no
// script_user and no keepalived_script user, keepalived disables every
// script that names no user ("Unable to set default user").
func TestDefaultUserUnderSecurity(t *testing.T) {
	if _, err := user.Lookup("keepalived_script"); err == nil {
		t.Skip("this host has a keepalived_script user")
	}
	s := &config.Script{Command: "/bin/true", Args: []string{"/bin/true"}}
	if pr := Check(s, Policy{Security: true}); pr.Disabled == nil || !strings.Contains(pr.Disabled.Error(), "set script_user") {
		t.Errorf("security without a default user: %v", pr.Disabled)
	}
	s.User = "root" // a script naming its user is not concerned
	if pr := Check(s, Policy{Security: true}); pr.Disabled != nil {
		t.Errorf("a script naming its user: %v", pr.Disabled)
	}
	if pr := Check(&config.Script{Command: "/bin/true", Args: []string{"/bin/true"}}, Policy{}); pr.Disabled != nil {
		t.Errorf("without security: %v", pr.Disabled)
	}
}

// TestRepointedLinkCannotSwapTheScript: the file checked at load is the
// one that runs, even when the link it was reached by is repointed later.
func TestRepointedLinkCannotSwapTheScript(t *testing.T) {
	dir := rootDir(t)
	out := filepath.Join(dir, "ran")
	good := filepath.Join(dir, "good.sh")
	writeScript(t, good, "echo good > "+out, 0o755)
	evil := filepath.Join(dir, "evil.sh")
	writeScript(t, evil, "echo evil > "+out, 0o755)
	link := filepath.Join(dir, "notify.sh")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	r := Runner{User: "root", Security: true}
	s := &config.Script{Command: link, Args: []string{link}}
	if pr := r.Prog(s); pr.Disabled != nil || pr.Path != good {
		t.Fatalf("%+v", pr)
	}
	// After the check: the link now points elsewhere.
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(evil, link); err != nil {
		t.Fatal(err)
	}
	if res := r.Run(t.Context(), s, 5*time.Second); !res.OK() {
		t.Fatalf("%+v", res)
	}
	if b, _ := os.ReadFile(out); string(b) != "good\n" {
		t.Errorf("ran %q, want the script checked at load", b)
	}
}

// TestScriptUserHonoured: scripts run as script_user, or as the user the
// script names, with that user's group alone.
func TestScriptUserHonoured(t *testing.T) {
	dir := rootDir(t)
	out := filepath.Join(dir, "out")
	mkdir(t, out, 0o777)
	tests := []struct {
		name  string
		r     Runner
		user  string
		group string
		want  string
	}{
		{"script_user nobody", Runner{User: "nobody"}, "", "", "65534 65534 65534"},
		{"script_user nobody root", Runner{User: "nobody", Group: "root"}, "", "", "65534 0 0"},
		{"the script's own user over script_user", Runner{User: "root"}, "nobody", "", "65534 65534 65534"},
		{"script_user root", Runner{User: "root", Security: true}, "", "", "0 0"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := filepath.Join(out, strings.Repeat("x", i+1))
			s := &config.Script{Args: []string{"/bin/sh", "-c", `echo $(id -u) $(id -g) $(id -G) > ` + f}, User: tt.user, Group: tt.group}
			if res := tt.r.Run(t.Context(), s, 5*time.Second); !res.OK() {
				t.Fatalf("%+v", res)
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(string(b)); !strings.HasPrefix(got, tt.want) {
				t.Errorf("uid gid groups %q, want %q", got, tt.want)
			}
		})
	}
}

// TestCheckConfig: every kind of script is checked, an insecure one is
// disabled under enable_script_security and logged; without it keepalived's
// SECURITY VIOLATION warning is logged.
func TestCheckConfig(t *testing.T) {
	dir := rootDir(t)
	ww := filepath.Join(dir, "ww")
	mkdir(t, ww, 0o777)
	bad := filepath.Join(ww, "bad.sh")
	writeScript(t, bad, "exit 0", 0o755)
	ok := filepath.Join(dir, "ok.sh")
	writeScript(t, ok, "exit 0", 0o755)
	conf := func(global string) string {
		return "global_defs {\n" + global + "\n}\n" +
			"vrrp_script chk {\n script " + bad + "\n}\n" +
			"vrrp_instance VI {\n interface eth0\n virtual_router_id 1\n priority 100\n virtual_ipaddress {\n 192.0.2.1\n }\n" +
			" track_script {\n chk\n }\n notify_master " + bad + "\n notify_backup " + ok + "\n}\n" +
			"virtual_server 192.0.2.1 80 {\n quorum_up " + bad + "\n real_server 192.0.2.10 80 {\n notify_down " + bad + "\n" +
			"  MISC_CHECK {\n misc_path " + bad + "\n }\n }\n}\n"
	}
	parse := func(text string) *config.Config {
		cfg, diags := config.Parse(filepath.Join(dir, "k.conf"), text, nil, config.Options{})
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		return cfg
	}
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	rep := CheckConfig(parse(conf("enable_script_security\nscript_user root")), Sections{VRRP: true, LVS: true}, log)
	got := map[string]bool{}
	for _, e := range rep.Entries {
		got[e.Keyword] = e.Prog.Disabled != nil
	}
	want := map[string]bool{"vrrp_script chk": true, "notify_master": true, "notify_backup": false, "quorum_up": true, "notify_down": true, "MISC_CHECK": true}
	for k, w := range want {
		if g, ok := got[k]; !ok || g != w {
			t.Errorf("%s: disabled %v (checked %v), want %v", k, g, ok, w)
		}
	}
	if rep.Violation || strings.Contains(buf.String(), "SECURITY VIOLATION") {
		t.Errorf("a violation with enable_script_security:\n%s", buf.String())
	}
	if n := strings.Count(buf.String(), `msg="script disabled`); n != 5 {
		t.Errorf("%d scripts logged disabled, want 5:\n%s", n, buf.String())
	}
	buf.Reset()
	rep = CheckConfig(parse(conf("script_user root")), Sections{VRRP: true}, log)
	if !rep.Violation || rep.Insecure != 2 || !strings.Contains(buf.String(), "SECURITY VIOLATION") || !strings.Contains(buf.String(), "there are insecure scripts") {
		t.Errorf("without enable_script_security: %+v\n%s", rep, buf.String())
	}
	if strings.Contains(buf.String(), "keepalived_script does not exist") {
		t.Errorf("the default user warning with script_user set:\n%s", buf.String())
	}
	if _, err := user.Lookup("keepalived_script"); err != nil {
		buf.Reset()
		CheckConfig(parse(conf("")), Sections{VRRP: true}, log)
		if !strings.Contains(buf.String(), "keepalived_script does not exist") {
			t.Errorf("no warning of the missing default user:\n%s", buf.String())
		}
	}
	if len(rep.Entries) != 3 {
		t.Errorf("VRRP only: %d scripts checked, want 3", len(rep.Entries))
	}
}

// TestCheckConfigBareNotifyDeleted: a notify_deleted without a script is
// keepalived's flag (send DELETED, not FAULT), not a script that cannot
// run: it is neither checked nor reported disabled.
func TestCheckConfigBareNotifyDeleted(t *testing.T) {
	text := "global_defs {\n enable_script_security\n script_user root\n}\n" +
		"vrrp_instance VI {\n interface eth0\n virtual_router_id 1\n priority 100\n notify_deleted\n virtual_ipaddress {\n 192.0.2.1\n }\n}\n"
	cfg, diags := config.Parse("/k.conf", text, nil, config.Options{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if cfg.Instances[0].Notify.Deleted == nil {
		t.Fatal("notify_deleted not read")
	}
	var buf bytes.Buffer
	rep := CheckConfig(cfg, Sections{VRRP: true}, slog.New(slog.NewTextHandler(&buf, nil)))
	if len(rep.Entries) != 0 || buf.Len() != 0 {
		t.Errorf("bare notify_deleted checked as a script: %+v\n%s", rep.Entries, buf.String())
	}
}

// TestInsecureScriptDoesNotRun: an insecure notify script is refused under
// enable_script_security and runs without it (keepalived's behaviour).
func TestInsecureScriptDoesNotRun(t *testing.T) {
	dir := rootDir(t)
	ww := filepath.Join(dir, "ww")
	mkdir(t, ww, 0o777)
	out := filepath.Join(dir, "ran")
	notify := filepath.Join(ww, "notify.sh")
	writeScript(t, notify, "echo ran > "+out, 0o755)
	s := &config.Script{Command: notify, Args: []string{notify}}
	res := Runner{User: "root", Security: true}.Run(t.Context(), s, 5*time.Second, "INSTANCE", "VI", "MASTER", "100")
	if !errors.Is(res.Err, ErrDisabled) {
		t.Errorf("under enable_script_security: %+v", res)
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatal("the insecure script ran")
	}
	if res := (Runner{User: "root"}).Run(t.Context(), s, 5*time.Second); !res.OK() {
		t.Errorf("without enable_script_security: %+v", res)
	}
	if _, err := os.Stat(out); err != nil {
		t.Error("without enable_script_security the script did not run")
	}
}

// TestCheckConfigFIFOScripts: the notify FIFOs' scripts are checked as
// keepalived's check_check_script_security does, each with the part that
// runs it (notify_fifo's with either).
func TestCheckConfigFIFOScripts(t *testing.T) {
	dir := rootDir(t)
	ww := filepath.Join(dir, "ww")
	mkdir(t, ww, 0o777)
	bad := filepath.Join(ww, "bad.sh")
	writeScript(t, bad, "exit 0", 0o755)
	ok := filepath.Join(dir, "ok.sh")
	writeScript(t, ok, "exit 0", 0o755)
	text := "global_defs {\n enable_script_security\n script_user root\n" +
		" notify_fifo /run/a.fifo\n notify_fifo_script " + ok + "\n" +
		" vrrp_notify_fifo /run/v.fifo\n vrrp_notify_fifo_script " + bad + "\n" +
		" lvs_notify_fifo /run/l.fifo\n lvs_notify_fifo_script " + ok + "\n}\n"
	cfg, diags := config.Parse(filepath.Join(dir, "k.conf"), text, nil, config.Options{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	for _, tt := range []struct {
		sec  Sections
		want map[string]bool // keyword: disabled
	}{
		{Sections{VRRP: true}, map[string]bool{"notify_fifo_script": false, "vrrp_notify_fifo_script": true}},
		{Sections{LVS: true}, map[string]bool{"notify_fifo_script": false, "lvs_notify_fifo_script": false}},
	} {
		got := map[string]bool{}
		for _, e := range CheckConfig(cfg, tt.sec, nil).Entries {
			got[e.Keyword] = e.Prog.Disabled != nil
		}
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("%+v: checked %v, want %v", tt.sec, got, tt.want)
		}
	}
}
