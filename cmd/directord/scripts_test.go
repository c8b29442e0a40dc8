package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/directord/directord/config"
	"github.com/directord/directord/internal/scripttest"
)

// TestNodeKeyFollowsScriptChecks: a reload of the same file restarts VRRP
// when its scripts check differently now (a folder's permissions fixed),
// and not otherwise: scripts are checked at each reload.
func TestNodeKeyFollowsScriptChecks(t *testing.T) {
	dir := scripttest.RootDir(t, "directord-nodekey-")
	sub := scripttest.WorldWritable(t, dir, "scripts")
	chk := filepath.Join(sub, "chk.sh")
	if err := os.WriteFile(chk, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	text := "global_defs {\n enable_script_security\n script_user root\n}\n" +
		"vrrp_script chk {\n script " + chk + "\n}\n" + goodConf
	load := func() *config.Config {
		cfg, diags := config.Parse(filepath.Join(dir, "k.conf"), text, nil, config.Options{})
		if diags.HasErrors() {
			t.Fatal(diags.Errors())
		}
		return cfg
	}
	d := &daemon{o: &options{}}
	insecure := d.nodeKeyOf(load())
	if again := d.nodeKeyOf(load()); again != insecure {
		t.Errorf("the same file and permissions give another key:\n%s\n%s", insecure, again)
	}
	if err := syscall.Chmod(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if fixed := d.nodeKeyOf(load()); fixed == insecure {
		t.Error("a script secure now keeps the key of its insecure check: VRRP would not restart to track it")
	}
}
