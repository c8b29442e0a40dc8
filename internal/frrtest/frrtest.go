// Package frrtest runs Debian's FRR (zebra, bgpd and bfdd) as the router
// of a test, inside a network namespace of internal/nstest: a BGP
// implementation none of directord's authors wrote, whose kernel routes
// tell what it learnt.
//
// The daemons run as the frr user (the package's vty group refuses root),
// each with -N (a name of its own, so that parallel tests and a system
// FRR do not meet), their zserv and vty sockets in a folder owned by frr,
// and are stopped by PID when the test ends.
//
// # Network namespaces
//
// Everything runs inside the given namespace (ip netns exec); routes are
// read there with ip -j route.
package frrtest

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/directord/directord/internal/nstest"
)

// Router is a running FRR.
type Router struct {
	NS    *nstest.NS
	Dir   string
	Name  string
	t     nstest.TB
	nice  int
	procs []*nstest.Process
}

// Require skips the test when FRR is not installed (make deps installs
// it) or the test cannot make namespaces.
func Require(t nstest.TB) {
	t.Helper()
	nstest.RequireRoot(t)
	if _, err := os.Stat("/usr/lib/frr/bgpd"); err != nil {
		t.Skip("FRR is not installed (make deps installs it: apt-get install frr)")
	}
}

// Conf is an FRR configuration, a file per daemon: bgpd's parser loses
// its place in another daemon's block (a bfd block makes it refuse the
// router bgp that follows).
type Conf struct {
	BGP, BFD string
	// Nice, when not 0, runs the daemons at that nice value: a router is
	// a host of its own, and a busy test beside it must not starve its
	// BFD (the lab's active-active directors).
	Nice int
}

// Start runs zebra, bfdd and bgpd in ns with conf. t is a test's, or
// any nstest.TB (the lab's demo).
func Start(t nstest.TB, ns *nstest.NS, conf Conf) *Router {
	t.Helper()
	u, err := user.Lookup("frr")
	if err != nil {
		t.Fatalf("the frr user: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	// The folder is outside t.TempDir, whose parents frr cannot enter.
	dir, err := os.MkdirTemp("/tmp", "frrtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) string {
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chown(file, uid, gid)
		return file
	}
	r := &Router{NS: ns, Dir: dir, Name: filepath.Base(dir), t: t, nice: conf.Nice}
	write("vtysh.conf", "")
	// The daemons keep their state in /var/run/frr/NAME (-N), which the
	// User-Mode Linux guest's fresh /run lacks.
	state := filepath.Join("/var/run/frr", r.Name)
	if err := os.MkdirAll(state, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"/var/run/frr", state} {
		if err := os.Chown(d, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	common := []string{"-N", r.Name, "-u", "frr", "-g", "frr", "--vty_socket", dir}
	zserv := filepath.Join(dir, "zserv.api")
	r.start("zebra", append(common, "-f", write("zebra.conf", "hostname router\nlog stdout\n"), "-z", zserv, "-i", filepath.Join(dir, "zebra.pid"))...)
	// Starting takes seconds in a busy User-Mode Linux guest.
	nstest.WaitFor(t, 30*time.Second, "zebra's socket", func() bool { _, err := os.Stat(zserv); return err == nil })
	r.start("bfdd", append(common, "-f", write("bfdd.conf", conf.BFD), "-z", zserv, "-i", filepath.Join(dir, "bfdd.pid"), "--bfdctl", filepath.Join(dir, "bfdd.sock"))...)
	r.start("bgpd", append(common, "-f", write("bgpd.conf", conf.BGP), "-z", zserv, "-i", filepath.Join(dir, "bgpd.pid"))...)
	// Runs before the processes' own cleanups: the daemons are stopped
	// first, so that none writes into the state folder after it went.
	t.Cleanup(func() {
		r.Stop()
		os.RemoveAll(state)
	})
	nstest.WaitFor(t, 30*time.Second, "bgpd's vty socket", func() bool {
		_, err := os.Stat(filepath.Join(dir, "bgpd.vty"))
		return err == nil
	})
	return r
}

func (r *Router) start(daemon string, args ...string) {
	r.t.Helper()
	argv := append([]string{"/usr/lib/frr/" + daemon}, args...)
	if r.nice != 0 {
		// nice execs the daemon: the process (and its PID) is the daemon's.
		argv = append([]string{"nice", "-n", strconv.Itoa(r.nice)}, argv...)
	}
	p := nstest.Start(r.t, r.NS, argv...)
	r.procs = append(r.procs, p)
}

// Stop stops the daemons (they also stop when the test ends).
func (r *Router) Stop() {
	for _, p := range slices.Backward(r.procs) {
		p.Signal(syscall.SIGTERM)
		if !p.Wait(5 * time.Second) {
			p.Signal(syscall.SIGKILL)
			p.Wait(5 * time.Second)
		}
	}
}

// VTY runs vtysh command cmd against the router's daemons and returns
// its output. (vtysh's -N would look for the sockets in a folder of that
// name under --vty_socket; the daemons' -N does not.)
func (r *Router) VTY(cmd string) (string, error) {
	out, err := exec.Command("ip", "netns", "exec", r.NS.Name, "vtysh", "--vty_socket", r.Dir, "--config_dir", r.Dir, "-c", cmd).CombinedOutput()
	return string(out), err
}

// Neighbor is what FRR says of a BGP neighbor (show bgp neighbors ADDR
// json).
type Neighbor struct {
	State       string `json:"bgpState"`
	RemoteAS    uint32 `json:"remoteAs"`
	RouterID    string `json:"remoteRouterId"`
	Established int    `json:"connectionsEstablished"`
	Dropped     int    `json:"connectionsDropped"`
	// LastNotification is why the session last ended ("Cease/BFD Down",
	// "Hold Timer Expired").
	LastNotification string `json:"lastNotificationReason"`
	BFD              struct {
		Status string `json:"status"`
	} `json:"peerBfdInfo"`
}

// Neighbor asks bgpd about neighbor a.
func (r *Router) Neighbor(a netip.Addr) Neighbor {
	r.t.Helper()
	out, err := r.VTY("show bgp neighbors " + a.String() + " json")
	if err != nil {
		r.t.Fatalf("vtysh: %v: %s", err, out)
	}
	var m map[string]Neighbor
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		r.t.Fatalf("vtysh: %v: %s", err, out)
	}
	return m[a.String()]
}

// NextHops is the kernel route to p in the router's namespace: its next
// hops, sorted; none when there is no route.
func (r *Router) NextHops(p netip.Prefix) []netip.Addr {
	r.t.Helper()
	args := []string{"netns", "exec", r.NS.Name, "ip", "-j"}
	if p.Addr().Is6() {
		args = append(args, "-6")
	}
	out, err := exec.Command("ip", append(args, "route", "show", "exact", p.String())...).Output()
	if err != nil {
		r.t.Fatalf("ip route show %s: %v", p, err)
	}
	return parseRoutes(r.t, out)
}

type route struct {
	Gateway  string `json:"gateway"`
	NextHops []struct {
		Gateway string `json:"gateway"`
	} `json:"nexthops"`
}

func parseRoutes(t nstest.TB, out []byte) []netip.Addr {
	var routes []route
	if len(strings.TrimSpace(string(out))) > 0 {
		if err := json.Unmarshal(out, &routes); err != nil {
			t.Fatalf("ip -j route: %v: %s", err, out)
		}
	}
	var hops []netip.Addr
	for _, rt := range routes {
		if a, err := netip.ParseAddr(rt.Gateway); err == nil {
			hops = append(hops, a)
		}
		for _, nh := range rt.NextHops {
			if a, err := netip.ParseAddr(nh.Gateway); err == nil {
				hops = append(hops, a)
			}
		}
	}
	slices.SortFunc(hops, netip.Addr.Compare)
	return hops
}

// WaitNextHops waits until the route to p has exactly want as next hops
// (none: no route), and returns when it saw it.
func (r *Router) WaitNextHops(limit time.Duration, p netip.Prefix, want ...netip.Addr) time.Time {
	r.t.Helper()
	slices.SortFunc(want, netip.Addr.Compare)
	var got []netip.Addr
	deadline := time.Now().Add(limit)
	for {
		got = r.NextHops(p)
		if slices.Equal(got, want) {
			return time.Now()
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("route to %s: next hops %v, want %v within %s", p, got, want, limit)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// Config is an FRR configuration of a router in AS asn with router ID
// rid, taking BGP sessions from the neighbors (all in AS remoteAS) and
// installing up to 16 paths per prefix (ECMP). bfd, when not "", is the
// BFD profile's body for every neighbor ("receive-interval 100 ...").
func Config(asn uint32, rid netip.Addr, remoteAS uint32, neighbors []netip.Addr, bfd string) Conf {
	var c Conf
	if bfd != "" {
		c.BFD = fmt.Sprintf("hostname router\nlog stdout\n!\nbfd\n profile fast\n%s\n exit\n!\n", bfd)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "frr defaults datacenter\nhostname router\nlog stdout\n!\n")
	fmt.Fprintf(&b, "router bgp %d\n bgp router-id %s\n no bgp ebgp-requires-policy\n bgp bestpath as-path multipath-relax\n", asn, rid)
	fmt.Fprintf(&b, " neighbor DIRECTORS peer-group\n neighbor DIRECTORS remote-as %d\n neighbor DIRECTORS timers 3 9\n", remoteAS)
	if bfd != "" {
		fmt.Fprintf(&b, " neighbor DIRECTORS bfd profile fast\n")
	}
	for _, n := range neighbors {
		fmt.Fprintf(&b, " neighbor %s peer-group DIRECTORS\n", n)
	}
	fmt.Fprintf(&b, " address-family ipv4 unicast\n  maximum-paths 16\n exit-address-family\n")
	fmt.Fprintf(&b, " address-family ipv6 unicast\n  maximum-paths 16\n")
	for _, n := range neighbors {
		if n.Is6() {
			fmt.Fprintf(&b, "  neighbor %s activate\n", n)
		}
	}
	fmt.Fprintf(&b, " exit-address-family\n!\n")
	c.BGP = b.String()
	return c
}
