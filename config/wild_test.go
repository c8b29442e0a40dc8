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

// TestWildByteOrderMark: a file saved with a UTF-8 byte-order mark (the
// real 02-octavia-amphora.conf, which starts with vrrp_script, given one)
// reads as without it, with one warning; it used to be "unknown keyword
// \ufeffvrrp_script; did you mean vrrp_script".
func TestWildByteOrderMark(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(wildDir(t), "02-octavia-amphora.conf"))
	if err != nil {
		t.Fatal(err)
	}
	plain, plainDiags := Parse("k.conf", string(data), nil, Options{})
	cfg, diags := Parse("k.conf", "\ufeff"+string(data), nil, Options{})
	if diags.HasErrors() {
		t.Fatalf("errors:\n%s", diags)
	}
	if len(cfg.Scripts) != 1 || cfg.Scripts[0].Name != "check_script" {
		t.Errorf("scripts %v, want check_script", cfg.Scripts)
	}
	if len(diags) != len(plainDiags)+1 {
		t.Fatalf("diagnostics:\n%s\nwant those without the mark:\n%s\nand one for it", diags, plainDiags)
	}
	want := `k.conf:1: warning: the file starts with a UTF-8 byte-order mark: skipped (keepalived 2.2.7 reads it as part of the first word, "vrrp_script", and ignores that as an unknown keyword)`
	if got := diags[0].String(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if len(cfg.Instances) != len(plain.Instances) || len(cfg.Instances[0].TrackScripts) != 1 {
		t.Errorf("instances differ from the file without the mark")
	}
}
