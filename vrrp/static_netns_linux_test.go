package vrrp

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/directord/directord/config"
	"github.com/directord/directord/internal/nstest"
)

// staticBlocks are static entries of every kind, for directord and
// keepalived alike.
const staticBlocks = `
static_ipaddress {
    192.0.2.10/24 dev dda
    192.0.2.11/32 dev dda scope link
    192.0.2.13/32 dev dda no_track
    2001:db8::10/64 dev dda
}
static_routes {
    198.51.100.0/24 via 192.0.2.254 dev dda
    blackhole 203.0.113.0/24
    198.51.101.0/24 dev dda table 100 metric 7
    2001:db8:1::/48 via 2001:db8::fe dev dda
}
static_rules {
    from 192.0.2.10 table 100 priority 100
    to 198.51.100.0/24 lookup 100 priority 101
    fwmark 5/0xff table 100 priority 102
    iif dda from 192.0.2.128/25 type unreachable priority 103
    not to 10.0.0.0/8 fwmark 7 table 100 priority 107
    from 2001:db8::/64 table 100 priority 104
    sport 1000-2000 ipproto tcp table 100 priority 105
    from 192.0.2.11 table 100
    to 192.0.2.12 goto 300 priority 106
}
`

// netState is what a namespace holds that static entries change, as ip
// prints it: its rules, its routes in every table and the addresses of
// dda (without the link-local ones, which differ between namespaces).
func netState(t *testing.T, ns *nstest.NS) string {
	t.Helper()
	var b strings.Builder
	for _, args := range [][]string{{"-4", "rule"}, {"-6", "rule"}, {"-4", "route", "show", "table", "all"},
		{"-6", "route", "show", "table", "all"},
		{"addr", "show", "dev", "dda"}} {
		out, err := exec.Command("ip", append([]string{"-n", ns.Name}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("ip %s: %v: %s", args, err, out)
		}
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, "fe80") || strings.Contains(l, "link/ether") || strings.Contains(l, "valid_lft") {
				continue
			}
			b.WriteString(ifIndex.ReplaceAllString(l, "N: dda") + "\n")
		}
	}
	return b.String()
}

var ifIndex = regexp.MustCompile(`^\d+: dda[@\w-]*`)

// logStates shows both namespaces' state when the test failed.
func logStates(t *testing.T, d, k *nstest.NS) {
	if t.Failed() {
		t.Logf("directord:\n%s\nkeepalived:\n%s", netState(t, d), netState(t, k))
	}
}

func startStatics(t *testing.T, ns *nstest.NS, conf string) *Statics {
	t.Helper()
	cfg, diags := config.Parse("/test.conf", conf, nil, config.Options{Hostname: ns.Name})
	if diags.HasErrors() {
		t.Fatalf("config: %s", diags.Errors())
	}
	log := slog.New(slog.NewTextHandler(testWriter{t, ns.Name}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	var s *Statics
	var err error
	ns.Do(t, func() { s, err = NewStatics(ns.NL, log) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	s.Apply(cfg)
	return s
}

// TestStaticEntriesAsKeepalived: directord and keepalived 2.2.7, each in
// a namespace of its own built alike, given the same static blocks, hold
// the same addresses, routes and rules; both add again what an operator
// deletes and what a link going down and up, or deleted and made again,
// removed; both remove all of it at stop.
func TestStaticEntriesAsKeepalived(t *testing.T) {
	nstest.RequireRoot(t)
	d, dp, k, kp := sideBySide(t, "dd-st")
	before := netState(t, d)
	if kb := netState(t, k); kb != before {
		t.Fatalf("the two namespaces differ before:\n%s\n---\n%s", before, kb)
	}
	ka := nstest.Keepalived(t, k, staticBlocks)
	s := startStatics(t, d, staticBlocks)
	defer logStates(t, d, k)
	same := func() bool { return netState(t, d) == netState(t, k) }
	held := func() bool { return same() && strings.Contains(netState(t, k), "goto 300") && netState(t, d) != before }
	if nstest.WaitFor(t, 10*time.Second, "the same entries as keepalived", held); t.Failed() {
		return
	}
	want := netState(t, k)
	t.Logf("held:\n%s", want)
	for _, c := range []string{"192.0.2.11/32 scope link", "nodad", "proto keepalived", "lookup 100 proto keepalived"} {
		if !strings.Contains(want, c) {
			t.Errorf("no %q in\n%s", c, want)
		}
	}

	ip := func(ns *nstest.NS, args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", append([]string{"-n", ns.Name}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", args, err, out)
		}
	}
	// An operator deletes one of each: keepalived adds the address again
	// at once, and leaves the route and the rule deleted (it follows
	// those only for a track_group).
	for _, ns := range []*nstest.NS{d, k} {
		ip(ns, "rule", "del", "priority", "100")
		ip(ns, "addr", "del", "192.0.2.11/32", "dev", "dda")
		ip(ns, "addr", "del", "192.0.2.13/32", "dev", "dda") // no_track: not added again
		ip(ns, "route", "del", "198.51.101.0/24", "table", "100")
	}
	both := func(sub string) bool {
		return strings.Contains(netState(t, d), sub) && strings.Contains(netState(t, k), sub)
	}
	nstest.WaitFor(t, 5*time.Second, "the deleted address added again", func() bool { return both("192.0.2.11/32") && same() })
	if got := netState(t, d); strings.Contains(got, "100:\tfrom 192.0.2.10") || strings.Contains(got, "198.51.101.0/24") ||
		strings.Contains(got, "192.0.2.13/32") {
		t.Errorf("the deleted route, rule or no_track address is back, where keepalived leaves them:\n%s", got)
	}
	// A link down and up: the kernel removes its routes (and IPv6
	// addresses); keepalived adds the interface's static addresses and
	// routes again when it is up, the route deleted above included.
	for _, ns := range []*nstest.NS{d, k} {
		ip(ns, "link", "set", "dda", "down")
	}
	nstest.WaitFor(t, 5*time.Second, "the link's routes gone", func() bool {
		return !strings.Contains(netState(t, d), "198.51.100.0/24 via") && !strings.Contains(netState(t, k), "198.51.100.0/24 via")
	})
	for _, ns := range []*nstest.NS{d, k} {
		ip(ns, "link", "set", "dda", "up")
	}
	nstest.WaitFor(t, 5*time.Second, "the link's entries added again", func() bool {
		return both("198.51.100.0/24 via") && both("198.51.101.0/24") && same()
	})
	// The interface deleted and made again (a veth pair rebuilt): both
	// add its static addresses and routes to the new one.
	for _, ns := range []*nstest.NS{d, k} {
		ip(ns, "link", "del", "dda")
	}
	nstest.Link(t, d, dp, "dda", "ddp", "192.0.2.1/24", "192.0.2.2/24")
	nstest.Link(t, k, kp, "dda", "ddp", "192.0.2.1/24", "192.0.2.2/24")
	nstest.WaitFor(t, 5*time.Second, "the new link's entries", func() bool {
		return both("192.0.2.10/24") && both("192.0.2.11/32") && both("198.51.100.0/24 via") && same()
	})

	if err := s.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	ka.Signal(syscall.SIGTERM)
	if !ka.Wait(10 * time.Second) {
		t.Fatal("keepalived did not stop")
	}
	if got := netState(t, d); got != before {
		t.Errorf("directord left at stop:\n%s\nwant:\n%s", got, before)
	}
	if got := netState(t, k); got != before {
		t.Errorf("keepalived left at stop:\n%s\nwant:\n%s", got, before)
	}
}

const staticsBefore = `
static_ipaddress {
    192.0.2.20/32 dev dda
    192.0.2.21/32 dev dda
}
static_routes {
    198.51.100.0/24 via 192.0.2.254 dev dda
    198.51.102.0/24 via 192.0.2.254 dev dda
}
static_rules {
    from 192.0.2.20 table 100 priority 200
    from 192.0.2.21 table 100 priority 201
}
`

// staticsAfter keeps the first of each (its line moved), drops the
// second and adds a third.
const staticsAfter = `
static_rules {
    from 192.0.2.22 table 100 priority 202
    from 192.0.2.20 table 100 priority 200
}
static_routes {
    198.51.103.0/24 via 192.0.2.254 dev dda
    198.51.100.0/24 via 192.0.2.254 dev dda
}
static_ipaddress {
    192.0.2.22/32 dev dda
    192.0.2.20/32 dev dda
}
`

// deletions records, in a namespace, the addresses, routes (but those of
// the local table) and rules deleted: "addr A", "route DST", "rule PRIO".
func deletions(t *testing.T, ns *nstest.NS) func() []string {
	t.Helper()
	var sock *nl.NetlinkSocket
	var err error
	ns.Do(t, func() {
		sock, err = nl.Subscribe(unix.NETLINK_ROUTE, unix.RTNLGRP_IPV4_IFADDR, unix.RTNLGRP_IPV4_ROUTE, unix.RTNLGRP_IPV4_RULE)
	})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			msgs, _, err := sock.Receive()
			if err != nil {
				return
			}
			for _, m := range msgs {
				var hdr int
				switch m.Header.Type {
				case unix.RTM_DELADDR:
					hdr = unix.SizeofIfAddrmsg
				case unix.RTM_DELROUTE, unix.RTM_DELRULE:
					hdr = unix.SizeofRtMsg
				default:
					continue
				}
				if len(m.Data) < hdr {
					continue
				}
				attrs, err := nl.ParseRouteAttr(m.Data[hdr:])
				if err != nil {
					continue
				}
				for _, a := range attrs {
					var s string
					switch {
					case m.Header.Type == unix.RTM_DELADDR && a.Attr.Type == unix.IFA_LOCAL:
						s = "addr " + net.IP(a.Value).String()
					case m.Header.Type == unix.RTM_DELROUTE && a.Attr.Type == unix.RTA_DST && m.Data[4] != unix.RT_TABLE_LOCAL:
						s = fmt.Sprintf("route %s/%d", net.IP(a.Value), m.Data[1])
					case m.Header.Type == unix.RTM_DELRULE && a.Attr.Type == nl.FRA_PRIORITY:
						s = fmt.Sprintf("rule %d", binary.NativeEndian.Uint32(a.Value))
					}
					if s != "" {
						mu.Lock()
						got = append(got, s)
						mu.Unlock()
					}
				}
			}
		}
	}()
	return func() []string {
		sock.Close()
		<-done
		slices.Sort(got)
		return got
	}
}

// TestStaticEntriesReload: a reload removes exactly the static entries
// the new file no longer has, leaves those it has again (even on another
// line) untouched, adds the new ones, and ends where keepalived's reload
// (SIGHUP) of the same two files ends.
func TestStaticEntriesReload(t *testing.T) {
	nstest.RequireRoot(t)
	d, _, k, _ := sideBySide(t, "dd-sr")
	dir := t.TempDir()
	file := filepath.Join(dir, "keepalived.conf")
	if err := os.WriteFile(file, []byte(staticsBefore), 0o644); err != nil {
		t.Fatal(err)
	}
	ka := nstest.Start(t, k, "keepalived", "-P", "-n", "-l", "-D", "-f", file,
		"-p", filepath.Join(dir, "k.pid"), "-r", filepath.Join(dir, "v.pid"))
	defer ka.Stop(10 * time.Second)
	defer logStates(t, d, k)
	s := startStatics(t, d, staticsBefore)
	same := func() bool { return netState(t, d) == netState(t, k) }
	nstest.WaitFor(t, 10*time.Second, "keepalived's entries", func() bool { return strings.Contains(netState(t, k), "201:") && same() })

	cfg, diags := config.Parse("/test.conf", staticsAfter, nil, config.Options{Hostname: d.Name})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	dels := deletions(t, d)
	s.Apply(cfg)
	if err := os.WriteFile(file, []byte(staticsAfter), 0o644); err != nil {
		t.Fatal(err)
	}
	ka.Cmd.Process.Signal(syscall.SIGHUP) // the parent alone, which tells its VRRP child
	nstest.WaitFor(t, 10*time.Second, "keepalived's reload", func() bool {
		st := netState(t, k)
		return strings.Contains(st, "202:") && !strings.Contains(st, "201:") && strings.Contains(st, "198.51.103.0/24") && same()
	})
	got := dels()
	want := []string{"addr 192.0.2.21", "route 198.51.102.0/24", "rule 201"}
	if !slices.Equal(got, want) {
		t.Errorf("deleted at the reload: %q, want %q", got, want)
	}
}

// TestCheckInterfaces names each missing interface of the static entries
// and virtual rules once, with its line: keepalived refuses such a file
// ("Non-existent interface specified in configuration"), and so does
// directord, at start and at a reload.
func TestCheckInterfaces(t *testing.T) {
	nstest.RequireRoot(t)
	d, dp := nstest.New(t, "dd-ci-d"), nstest.New(t, "dd-ci-dp")
	nstest.Link(t, d, dp, "dda", "ddp", "192.0.2.1/24", "192.0.2.2/24")
	conf := "static_ipaddress {\n 192.0.2.10/24 dev dda\n 192.0.2.11/24 dev nosuch0\n}\n" +
		"static_routes {\n 198.51.100.0/24 dev nosuch0\n}\n" +
		"static_rules {\n iif dda oif nosuch1 table 100 priority 1\n}\n" +
		nstest.Instance("dda", 100, 3, "1", "192.0.2.100/24", "virtual_rules {\n        iif nosuch2 table 100 priority 2\n    }")
	cfg, diags := config.Parse("/test.conf", conf, nil, config.Options{Hostname: d.Name})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	err := CheckInterfaces(d.NL, cfg)
	want := "/test.conf:3: static_ipaddress: interface nosuch0 does not exist\n" +
		"/test.conf:9: static_rules: interface nosuch1 does not exist\n" +
		"/test.conf:18: virtual_rules: interface nosuch2 does not exist"
	if err == nil || err.Error() != want {
		t.Errorf("got:\n%v\nwant:\n%s", err, want)
	}
	cfg, _ = config.Parse("/test.conf", "static_ipaddress {\n 192.0.2.10/24 dev dda\n}\n", nil, config.Options{Hostname: d.Name})
	if err := CheckInterfaces(d.NL, cfg); err != nil {
		t.Errorf("all present: %v", err)
	}
}

// sideBySide makes two namespaces built alike, one for directord (d) and
// one for keepalived (k), each joined to a peer of its own (dp, kp) by
// dda (192.0.2.1/24) and ddp (192.0.2.2/24).
func sideBySide(t *testing.T, name string) (d, dp, k, kp *nstest.NS) {
	t.Helper()
	d, dp = nstest.New(t, name+"-d"), nstest.New(t, name+"-dp")
	k, kp = nstest.New(t, name+"-k"), nstest.New(t, name+"-kp")
	nstest.Link(t, d, dp, "dda", "ddp", "192.0.2.1/24", "192.0.2.2/24")
	nstest.Link(t, k, kp, "dda", "ddp", "192.0.2.1/24", "192.0.2.2/24")
	return d, dp, k, kp
}
