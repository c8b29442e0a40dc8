package vrrp

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/directord/directord/config"
	"github.com/directord/directord/internal/scripttest"
)

// TestInsecureVRRPScriptNotTracked: with enable_script_security, a
// vrrp_script reached through a link in a world-writable folder is
// disabled, as keepalived disables an insecure track script: no instance
// tracks it (it neither faults nor lowers them), and the log says so.
// As root on the host: tracking only reads the links.
func TestInsecureVRRPScriptNotTracked(t *testing.T) {
	dir := scripttest.RootDir(t, "directord-vrrp-secure-")
	good := filepath.Join(dir, "check.sh")
	if err := os.WriteFile(good, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ww := filepath.Join(dir, "ww")
	os.Mkdir(ww, 0o755)
	if err := syscall.Chmod(ww, 0o777); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(ww, "check.sh")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	conf := "global_defs {\n enable_script_security\n script_user root\n}\n" +
		"vrrp_script viaww {\n script " + link + "\n}\n" +
		"vrrp_script direct {\n script " + good + "\n}\n" +
		"vrrp_instance VI {\n interface lo\n virtual_router_id 1\n priority 100\n virtual_ipaddress {\n 192.0.2.1\n }\n" +
		" track_script {\n viaww\n direct\n }\n}\n"
	cfg, diags := config.Parse("/test.conf", conf, nil, config.Options{})
	if diags.HasErrors() {
		t.Fatal(diags.Errors())
	}
	var buf bytes.Buffer
	n := &Node{log: slog.New(slog.NewTextHandler(&buf, nil))}
	h, err := netlink.NewHandle()
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	tr, err := newTracking(n, cfg, h)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.close()
	if tr.scripts["viaww"] != nil {
		t.Error("the script through a link in a world-writable folder is tracked")
	}
	if tr.scripts["direct"] == nil {
		t.Error("the safe script is not tracked")
	}
	if !strings.Contains(buf.String(), "vrrp_script disabled") || !strings.Contains(buf.String(), "unsafe permissions on "+ww) {
		t.Errorf("log:\n%s", buf.String())
	}
}
