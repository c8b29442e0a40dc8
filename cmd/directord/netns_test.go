package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/directord/directord/config"
)

// TestConfigTestAbsentNamespace: -t on a file whose net_namespace does
// not exist here says so, with its file:line, and still exits 0: the file
// is good, and keepalived's -t exits 0 too (it stops, silently, before
// checking anything).
func TestConfigTestAbsentNamespace(t *testing.T) {
	name := fmt.Sprintf("dd-absent-%d", os.Getpid())
	file := writeConf(t, "net_namespace "+name+"\n"+goodConf)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-t", "-f", file}, &stdout, &stderr); code != exitOK {
		t.Errorf("exit %d, want 0\n%s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "\nnet_namespace: directord runs in /run/netns/"+name+"\n") {
		t.Errorf("summary lacks the namespace:\n%s", stdout.String())
	}
	want := file + ":1: warning: net_namespace: /run/netns/" + name + " does not exist on this host: directord would stop at start, as keepalived"
	if !strings.Contains(stderr.String(), want) {
		t.Errorf("standard error lacks %q:\n%s", want, stderr.String())
	}
}

// TestNamespacesKeptAtReload: a reload may not change either namespace,
// as keepalived's ("Cannot change network namespace at a reload").
func TestNamespacesKeptAtReload(t *testing.T) {
	load := func(text string) *config.Config {
		cfg, diags := config.Parse("/k.conf", text, nil, config.Options{})
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		return cfg
	}
	tests := []struct {
		name     string
		flag     string
		old, new string
		err      string
	}{
		{"same", "", "net_namespace a\nnet_namespace_ipvs b\n", "net_namespace a\nnet_namespace_ipvs b\n", ""},
		{"net_namespace given", "", "", "net_namespace a\n", `net_namespace cannot change at a reload (from "" to "a"): restart directord`},
		{"net_namespace changed", "", "net_namespace a\n", "net_namespace b\n", `net_namespace cannot change at a reload (from "a" to "b"): restart directord`},
		{"-s wins over the file", "s", "net_namespace a\n", "net_namespace b\n", ""},
		{"ipvs to the host's", "", "net_namespace_ipvs b\n", "net_namespace_ipvs\n", "net_namespace_ipvs cannot change at a reload (from b to (the host's)): restart directord"},
		{"ipvs removed", "", "net_namespace_ipvs\n", "", "net_namespace_ipvs cannot change at a reload (from (the host's) to (directord's own)): restart directord"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := namespacesKept(&options{netns: tt.flag}, load(tt.old), load(tt.new))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.err {
				t.Errorf("error %q, want %q", got, tt.err)
			}
		})
	}
}

// TestConfigTestSummaryDrops: -t names the table and the instances whose
// VIPs it drops while master.
func TestConfigTestSummaryDrops(t *testing.T) {
	file := writeConf(t, "global_defs {\n    vrrp_strict\n}\n"+strings.Replace(goodConf, "interface eth0", "interface eth0\n    version 3", 1))
	var stdout, stderr bytes.Buffer
	run([]string{"-t", "-f", file}, &stdout, &stderr)
	want := "\nnftables: table keepalived drops traffic to and from the VIPs of VI_1 while master (no accept mode)\n"
	if !strings.Contains(stdout.String(), want) {
		t.Errorf("summary lacks %q:\n%s\n%s", want, stdout.String(), stderr.String())
	}
}
