package config

import (
	"os"
	"path/filepath"
	"testing"
)

// wildDir is shared/wild-configs: configurations from public deployments,
// kept beside the repository (CI has shared/ beside its clone), not in it.
// A test that cannot find them fails, unless DIRECTORD_NO_WILD_CONFIGS=1
// says that this checkout has no shared/ beside it.
func wildDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join("..", "..", "shared", "wild-configs")
	if _, err := os.Stat(dir); err != nil {
		if os.Getenv("DIRECTORD_NO_WILD_CONFIGS") == "1" {
			t.Skipf("no %s (DIRECTORD_NO_WILD_CONFIGS=1)", dir)
		}
		t.Fatalf("%v: shared/wild-configs must stand beside the repository (set DIRECTORD_NO_WILD_CONFIGS=1 to skip)", err)
	}
	return dir
}

// loadWild loads one file of wildDir as directord -t does.
func loadWild(t *testing.T, name string, opts Options) (*Config, Diagnostics) {
	t.Helper()
	if opts.Hostname == "" {
		opts.Hostname = "director1"
	}
	return Load(filepath.Join(wildDir(t), name), opts)
}

// TestWildDefaultRouteFamily: Octavia's dual-stack amphora puts an IPv6
// default route ("default via 2001:db8::ff") in an IPv4 instance; keepalived
// takes the family of "default" from the gateway and installs ::/0.
func TestWildDefaultRouteFamily(t *testing.T) {
	cfg, diags := loadWild(t, "02-octavia-amphora.conf", Options{})
	if diags.HasErrors() {
		t.Fatalf("errors:\n%s", diags)
	}
	var got []string
	for _, r := range cfg.Instances[0].Routes {
		got = append(got, r.Dst.String()+" via "+r.Via.String())
	}
	want := []string{"10.1.0.0/24 via invalid IP", "0.0.0.0/0 via 10.1.0.1", "2001:db8::/64 via invalid IP", "::/0 via 2001:db8::ff"}
	if len(got) != len(want) {
		t.Fatalf("routes %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("route %d: %s, want %s", i, got[i], want[i])
		}
	}
}
