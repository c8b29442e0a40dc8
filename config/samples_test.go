package config

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// samplesDir holds the sample configurations of Debian's keepalived package
// (apt-get install keepalived; .ci/run installs it).
const samplesDir = "/usr/share/doc/keepalived/samples"

// TestKeepalivedSamples reads every sample configuration keepalived ships:
// none may have an error, and the keywords reported as not supported must be
// exactly those listed here, so that a change in what directord supports is
// a deliberate change to this list.
func TestKeepalivedSamples(t *testing.T) {
	unsupported := map[string]string{
		"keepalived.conf.HTTP_GET.port":         "",
		"keepalived.conf.IPv6":                  "",
		"keepalived.conf.PING_CHECK":            "PING_CHECK",
		"keepalived.conf.SMTP_CHECK":            "",
		"keepalived.conf.conditional_conf":      "",
		"keepalived.conf.SSL_GET":               "",
		"keepalived.conf.UDP_CHECK":             "",
		"keepalived.conf.fwmark":                "",
		"keepalived.conf.inhibit":               "",
		"keepalived.conf.misc_check":            "",
		"keepalived.conf.misc_check_arg":        "",
		"keepalived.conf.quorum":                "",
		"keepalived.conf.sample":                "",
		"keepalived.conf.status_code":           "",
		"keepalived.conf.track_interface":       "",
		"keepalived.conf.virtual_server_group":  "",
		"keepalived.conf.virtualhost":           "",
		"keepalived.conf.vrrp":                  "",
		"keepalived.conf.vrrp.localcheck":       "",
		"keepalived.conf.vrrp.lvs_syncd":        "",
		"keepalived.conf.vrrp.routes":           "",
		"keepalived.conf.vrrp.rules":            "",
		"keepalived.conf.vrrp.scripts":          "",
		"keepalived.conf.vrrp.static_ipaddress": "",
		"keepalived.conf.vrrp.sync":             "",
	}
	files, err := filepath.Glob(filepath.Join(samplesDir, "keepalived.conf.*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no samples in %s: install Debian's keepalived package (apt-get install keepalived)", samplesDir)
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			want, ok := unsupported[name]
			if !ok {
				t.Fatalf("a new sample: add it to the list with the keywords it reports as not supported")
			}
			// The conditional sample says to run with -i high or -i low.
			_, diags := Load(f, Options{ConfigID: "high", Hostname: "testhost"})
			if diags.HasErrors() {
				t.Fatalf("errors:\n%s", diags.Errors())
			}
			seen := map[string]bool{}
			for _, d := range diags {
				if d.Unsupported {
					seen[d.Keyword] = true
				}
			}
			var got []string
			for k := range seen {
				got = append(got, k)
			}
			sort.Strings(got)
			if g := strings.Join(got, " "); g != want {
				t.Errorf("not supported:\ngot:  %s\nwant: %s\nall diagnostics:\n%s", g, want, diags)
			}
		})
	}
	if len(files) != len(unsupported) {
		t.Errorf("%d samples listed, %d found in %s", len(unsupported), len(files), samplesDir)
	}
}

func TestMain(m *testing.M) {
	os.Exit(m.Run())
}
