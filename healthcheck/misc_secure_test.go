package healthcheck

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/directord/directord/config"
	"github.com/directord/directord/internal/scripttest"
)

// TestInsecureMiscCheckRemoved: with enable_script_security, a MISC_CHECK
// whose script is in a world-writable folder is removed, as keepalived
// removes it ("Disabling misc script ... due to insecure"), and logged;
// the configuration still loads and the safe checker stays.
func TestInsecureMiscCheckRemoved(t *testing.T) {
	dir := scripttest.RootDir(t, "directord-misc-secure-")
	ww := scripttest.WorldWritable(t, dir, "ww")
	bad, good := filepath.Join(ww, "check.sh"), filepath.Join(dir, "check.sh")
	for _, f := range []string{bad, good} {
		if err := os.WriteFile(f, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	conf := "global_defs {\n enable_script_security\n script_user root\n}\n" +
		"virtual_server 192.0.2.1 80 {\n real_server 192.0.2.10 80 {\n  MISC_CHECK {\n   misc_path " + bad + "\n  }\n }\n" +
		" real_server 192.0.2.11 80 {\n  MISC_CHECK {\n   misc_path " + good + "\n  }\n }\n}\n"
	cfg, diags := config.Parse("/test.conf", conf, nil, config.Options{})
	if diags.HasErrors() {
		t.Fatal(diags.Errors())
	}
	var buf bytes.Buffer
	r := newRunner(t, cfg, func(Event) {}, slog.New(slog.NewTextHandler(&buf, nil)))
	if n := len(r.Checks()); n != 1 || r.Checks()[0].Cfg.Misc.Script.Args[0] != good {
		t.Errorf("%d checks, want the safe one alone", n)
	}
	// The real server left without checks cannot be unknown: it must not
	// count among those a fault of this director is judged by.
	if n := len(r.Checks()); n == 1 && r.Checks()[0].srv.pool.servers != 1 {
		t.Errorf("the pool counts %d checked real servers, want 1", r.Checks()[0].srv.pool.servers)
	}
	if !strings.Contains(buf.String(), "MISC_CHECK removed") || !strings.Contains(buf.String(), "unsafe permissions on "+ww) {
		t.Errorf("log:\n%s", buf.String())
	}
}
