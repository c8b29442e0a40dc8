package config

import (
	"os"
	"path/filepath"
	"strings"
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
	// keepalived would not read the file as directord does: --strict says so.
	if _, strict := Parse("k.conf", "\ufeff"+string(data), nil, Options{Strict: true}); !strict.HasErrors() {
		t.Error("--strict accepts a byte-order mark")
	}
}

// wildNoDump names the wild configurations with VRRP instances of which
// keepalived gives no dump here, and why; their instances are checked by
// directord's own golden summary only.
var wildNoDump = map[string]string{
	"10-vbernat-unicast-v4v6.conf": "unicast instances without an interface keyword: keepalived 2.2.7 stops at once ('(v4) Unknown interface!', a permanent configuration error, also with eth0 holding unicast_src_ip), where directord accepts a unicast instance without one",
}

// Comparing directord's summary with keepalived's dump: keepalived does
// not list the instance's own interface among those it tracks when the
// file names it with weight 0: a fault of the instance's interface is a
// fault of the instance either way.

// dropOwnInterfaceTracking removes from a vrrpSummary the weight-0
// tracking of each instance's own interface.
func dropOwnInterfaceTracking(s string) string {
	var b strings.Builder
	iface := ""
	for _, line := range strings.SplitAfter(s, "\n") {
		if v, ok := strings.CutPrefix(line, "  interface "); ok {
			iface = strings.TrimSpace(v)
		}
		if line == "  track_interface "+iface+" weight 0\n" {
			continue
		}
		b.WriteString(line)
	}
	return b.String()
}

// wildKnownDiff names the files whose instances differ from keepalived's
// dump, and why: each is a difference to resolve, not a verdict.
var wildKnownDiff = map[string]string{
	"17-fanux-kubeinit-sync-nat.conf":           "keepalived starts the MASTER members of a sync group as BACKUP (its dump's Wantstate); directord's configuration keeps MASTER",
	"38-openstack-ansible-keepalived-role.conf": "keepalived starts the MASTER members of a sync group as BACKUP (its dump's Wantstate); directord's configuration keeps MASTER",
}

// wildKnownLVSDiff names the files whose virtual servers differ from
// keepalived's checker dump, and why.
var wildKnownLVSDiff = map[string]string{
	"39-vyos-generated.conf":                      "keepalived removes the MISC_CHECK of 192.0.2.31, its script missing where it ran; directord's configuration keeps it (its runner removes it)",
	"42-keepalived-1.1.19-smtp-check-lvs_id.conf": "SMTP_CHECK host blocks without connect_timeout: keepalived gives them a timeout of 0, directord the checker's connect_timeout",
}

// wildNoLVSDump names the files with virtual servers of which keepalived's
// checker process gives no dump in the guest, and why.
var wildNoLVSDump = map[string]string{
	"32-octavia-lvs-udp-http-check.conf": "net_namespace amphora-haproxy: keepalived stops at once where that namespace does not exist (directord too, at start)",
	"33-octavia-lvs-sctp-misc.conf":      "net_namespace amphora-haproxy: keepalived stops at once where that namespace does not exist (directord too, at start)",
}

// TestWildConfigs reads every configuration of shared/wild-configs, as
// directord -t does without --strict: each must start (no error), and its
// VRRP instances must be what keepalived 2.2.7 makes of them
// (testdata/wild/NAME.vrrp, from keepalived's dump: TestWildKeepalivedDump).
func TestWildConfigs(t *testing.T) {
	files := wildFiles(t)
	if len(files) != 53 {
		t.Errorf("%d configurations in %s, want 53", len(files), wildDir(t))
	}
	for _, name := range files {
		t.Run(name, func(t *testing.T) {
			cfg, diags := loadWild(t, name, Options{ConfigID: wildConfigID})
			if diags.HasErrors() {
				t.Fatalf("directord -t refuses it:\n%s", diags.Errors())
			}
			got := dropOwnInterfaceTracking(vrrpSummary(cfg))
			want, err := os.ReadFile(filepath.Join("testdata", "wild", name+".vrrp"))
			switch {
			case err == nil:
				w := string(want)
				if why := wildKnownDiff[name]; why != "" {
					if got == w {
						t.Errorf("now the same as keepalived's: remove it from wildKnownDiff")
					}
					t.Logf("differs from keepalived's, known: %s\n%s", why, lineDiff(w, got))
				} else if got != w {
					t.Errorf("instances differ from keepalived's (testdata/wild/%s.vrrp):\n%s", name, lineDiff(w, got))
				}
			case len(cfg.Instances) == 0:
			case wildNoDump[name] != "":
				t.Logf("no keepalived dump: %s", wildNoDump[name])
			default:
				t.Errorf("%v: no keepalived view of its instances (DIRECTORD_WILD_DUMP=1 go test ./config -run TestWildKeepalivedDump writes it)", err)
			}
			if len(cfg.VirtualServers) == 0 {
				return
			}
			got = lvsSummary(cfg)
			want, err = os.ReadFile(filepath.Join("testdata", "wild", name+".lvs"))
			switch {
			case err == nil:
				if why := wildKnownLVSDiff[name]; why != "" {
					if got == string(want) {
						t.Errorf("now the same as keepalived's: remove it from wildKnownLVSDiff")
					}
					t.Logf("virtual servers differ from keepalived's, known: %s\n%s", why, lineDiff(string(want), got))
				} else if got != string(want) {
					t.Errorf("virtual servers differ from keepalived's (testdata/wild/%s.lvs):\n%s", name, lineDiff(string(want), got))
				}
			case wildNoLVSDump[name] != "":
				t.Logf("no keepalived dump of its virtual servers: %s", wildNoLVSDump[name])
			default:
				t.Errorf("%v: no keepalived view of its virtual servers (make the dumps in the User-Mode Linux guest: docs/testing.md)", err)
			}
		})
	}
}

// TestWildNeutronExcluded: Neutron's L3 HA lists one subnet's address in
// two routers' instances, on different devices (192.168.3.0/24 on eth2 and
// eth6: two addresses to the kernel, no message) and on the same device
// (192.168.2.0/24 on eth2: keepalived runs both, directord warns). It used
// to be refused.
func TestWildNeutronExcluded(t *testing.T) {
	cfg, diags := loadWild(t, "48-neutron-l3-ha-ah.conf", Options{})
	if diags.HasErrors() {
		t.Fatalf("errors:\n%s", diags.Errors())
	}
	for i, want := range []int{4, 3} {
		if got := len(cfg.Instances[i].ExcludedVIPs); got != want {
			t.Errorf("%s: %d excluded addresses, want %d", cfg.Instances[i].Name, got, want)
		}
	}
	var shared []string
	for _, d := range diags {
		if strings.Contains(d.Message, "is also moved by") {
			shared = append(shared, d.Keyword)
		}
	}
	if got, want := strings.Join(shared, " "), "192.168.2.0 192.168.55.0"; got != want {
		t.Errorf("addresses shared on one device: %s, want %s\n%s", got, want, diags)
	}
	if _, strict := loadWild(t, "48-neutron-l3-ha-ah.conf", Options{Strict: true}); !strict.HasErrors() {
		t.Error("--strict accepts an address two instances move on one device")
	}
}

// TestWildStrict: --strict refuses exactly the wild configurations that
// hold something keepalived runs past.
func TestWildStrict(t *testing.T) {
	// The files --strict refuses, without ".conf", in three groups: what
	// keepalived warns of and runs past; a track_interface naming the
	// instance's own interface; an auth_pass of more than 8 characters,
	// nb_get_retry, a route without dev (keepalived reports each as an
	// error and runs past it).
	want := map[string]bool{}
	for _, name := range strings.Fields(`
		03-zillow-linuxgateway-vmac 04-k8s-handbook-lvs-dr 05-vbernat-keepalived-snmp-vsgroup
		11-kingkongmok-state-slave 20-salt-formula-pillar-example 21-alibaba-lvs-fnat-include
		34-k8s-apiserver-ssl-get-loadbalance 41-rhel7-default-keepalived-1.3.5
		42-keepalived-1.1.19-smtp-check-lvs_id 48-neutron-l3-ha-ah

		45-kube-keepalived-vip-lvs 53-netology-lvs-dr-sync-daemon

		02-octavia-amphora 08-vbernat-nat-gw-vmac-blackhole 16-hetzner-robot-no-vip
		18-cookeem-kubeadm-ha-apiserver 19-openshift-ipfailover-generated
		24-bi-vdc-oneline-track-script 29-apisix-weight-neg 30-mesos-lvs-sync-garp
		35-dns-dr-notify-up-down 40-cephadm-ingress 43-keepalived-1.1.19-vsgroup-nb_get_retry
		49-openshift-onprem-api-ingress`) {
		want[name+".conf"] = true
	}
	for _, name := range wildFiles(t) {
		_, diags := loadWild(t, name, Options{ConfigID: wildConfigID, Strict: true})
		if got := diags.HasErrors(); got != want[name] {
			t.Errorf("%s: refused under --strict: %v, want %v\n%s", name, got, want[name], diags.Errors())
		}
	}
}

// TestFWMarkRealServerPort: the port of a DR real server of a fwmark
// virtual server is cleared (keepalived does), and its checker still
// connects to the port written.
func TestFWMarkRealServerPort(t *testing.T) {
	cfg, diags := Parse("k.conf", "virtual_server fwmark 7 {\n lvs_method DR\n real_server 10.0.0.2 53 {\n  TCP_CHECK {\n  }\n }\n}\n", nil, Options{})
	if diags.HasErrors() {
		t.Fatalf("errors:\n%s", diags)
	}
	rs := cfg.VirtualServers[0].RealServers[0]
	if rs.Addr.Port() != 0 || rs.Checkers[0].ConnectPort != 53 {
		t.Errorf("real server %s, checker port %d; want port 0, checker port 53", rs.Addr, rs.Checkers[0].ConnectPort)
	}
}
