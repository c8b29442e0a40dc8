package main

import (
	"os"
	"testing"

	"github.com/directord/directord/config"
)

// TestIPVSAdvice: expire_nodest_conn at 0 is warned of, at 1 or unknown
// (no IPVS module yet) it is not.
func TestIPVSAdvice(t *testing.T) {
	for _, c := range []struct {
		value string
		err   error
		warn  bool
	}{{"0\n", nil, true}, {"1\n", nil, false}, {"", os.ErrNotExist, false}} {
		got := ipvsAdvice(func(p string) ([]byte, error) {
			if p != "/proc/sys/net/ipv4/vs/expire_nodest_conn" {
				t.Errorf("read %s", p)
			}
			return []byte(c.value), c.err
		})
		if (len(got) == 1) != c.warn || len(got) > 1 {
			t.Errorf("expire_nodest_conn %q (%v): %q", c.value, c.err, got)
		}
	}
}

// TestVRRPKeySeesTrackProcess: a reload that changes only a
// vrrp_track_process (its quorum) restarts the VRRP node, which counts
// the processes afresh; one that moves the block does not.
func TestVRRPKeySeesTrackProcess(t *testing.T) {
	inst := "vrrp_instance VI_1 {\n interface eth0\n virtual_router_id 1\n track_process {\n  p\n }\n}\n"
	key := func(conf string) string {
		t.Helper()
		cfg, diags := config.Parse("/k.conf", conf, nil, config.Options{Hostname: "h"})
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		return vrrpKey(cfg)
	}
	base := key("vrrp_track_process p {\n process a\n}\n" + inst)
	if key("vrrp_track_process p {\n process a\n quorum 2\n}\n"+inst) == base {
		t.Error("a changed quorum leaves the node's key the same")
	}
	if key("\n\nvrrp_track_process p {\n process a\n}\n"+inst) != base {
		t.Error("a block moved down changes the node's key")
	}
}
