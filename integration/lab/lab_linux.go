package lab

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/directord/directord/internal/control"
	"github.com/directord/directord/internal/frrtest"
	"github.com/directord/directord/internal/nstest"
	"github.com/directord/directord/ipvs"
)

// Options say where the binaries are and how the namespaces are named.
type Options struct {
	Directord   string // the directord binary
	Directorctl string // the directorctl binary
	// Prefix starts every namespace's name: "lab-" gives lab-client,
	// lab-router, lab-switch, lab-lb1, lab-lb2, lab-rs1...
	Prefix string
	// Active makes the active-active lab: three directors announcing the
	// VIP by BGP with BFD to the router, which runs FRR and spreads the
	// flows over them (ECMP, L4 hashing); no VRRP (active.conf.tmpl).
	Active bool
}

// Lab is the whole pair and its surroundings, each host a namespace:
//
//	client 10.2.0.2 -- 10.2.0.1 router 10.1.0.254 -- switch -- lb1 10.1.0.11
//	                                                          lb2 10.1.0.12
//	                                                          rs1..rs3 10.1.0.21-23
//
// The VIP 10.1.0.100 is on the master's eth0 and on every real server's
// lo; the real servers answer the client directly through the router
// (direct routing).
type Lab struct {
	t         nstest.TB
	opts      Options
	Client    *nstest.NS
	Router    *nstest.NS
	Switch    *nstest.Switch
	Directors []*Director // lb1, lb2
	Reals     []*RealServer
	// Starve measures what the machine withholds from the lab's
	// processes while it runs (nstest.Starvation): a failure it explains
	// is the machine's, not directord's.
	Starve *nstest.Starvation
	// FRR is the router's BGP speaker in the active lab; nil in the pair.
	FRR *frrtest.Router
	dir string      // the configuration files, sockets, certificate
	tls *tls.Config // the client's
}

// New builds the lab's network and starts its real servers; Up starts the
// directors. Everything is removed when t's cleanups run. The program must
// call ServeRealServer first thing: the real servers are the program run
// again.
func New(t nstest.TB, o Options) *Lab {
	t.Helper()
	bins := []string{o.Directord, o.Directorctl}
	if o.Active {
		// The BGP speaker, which directord runs from its own folder.
		bins = append(bins, filepath.Join(filepath.Dir(o.Directord), "directord-bgp"))
	}
	for _, b := range bins {
		if _, err := os.Stat(b); err != nil {
			t.Fatalf("%v (make integration and make demo build it)", err)
		}
	}
	dir := t.TempDir()
	l := &Lab{t: t, opts: o, dir: dir, tls: newTLS(t, dir), Starve: nstest.WatchStarvation(t, 0)}

	l.Client = l.host("client")
	l.Router = l.host("router")
	nstest.Link(t, l.Client, l.Router, "eth0", "eth0", prefix(ClientAddr), prefix(RouterOutside))
	l.Switch = nstest.NewSwitch(t, o.Prefix+"switch")
	l.Switch.Plug(t, l.Router, "eth1", prefix(RouterInside))
	l.sysctl(l.Router, "net/ipv4/ip_forward", "1")
	l.defaultRoute(l.Client, RouterOutside)

	addrs := DirectorAddrs
	if o.Active {
		addrs = ActiveDirectorAddrs
		// ECMP on the flow's addresses and ports, not on its addresses
		// alone: one client's connections spread over every director.
		l.sysctl(l.Router, "net/ipv4/fib_multipath_hash_policy", "1")
	}
	for i, a := range addrs {
		name := fmt.Sprintf("lb%d", i+1)
		prio := 0
		if !o.Active {
			prio = Priorities[i]
		}
		d := &Director{l: l, Name: name, Addr: a, Priority: prio, NS: l.host(name),
			File: filepath.Join(dir, name+".conf"), Socket: filepath.Join(dir, name+".sock")}
		d.Port = l.Switch.Plug(t, d.NS, "eth0", prefix(a))
		l.defaultRoute(d.NS, RouterInside)
		c, err := ipvs.Dial(&ipvs.Options{NetNS: int(d.NS.NS)})
		if err != nil {
			t.Fatalf("IPVS in %s: %v", d.NS.Name, err)
		}
		t.Cleanup(func() { c.Close() })
		d.ipvs = c
		// As docs/install.md recommends: without it, a new connection
		// whose client port is that of an unfinished connection to a
		// real server taken out of the pool (its entry lives on) is
		// dropped by the director until that entry times out.
		l.sysctl(d.NS, "net/ipv4/vs/expire_nodest_conn", "1")
		d.WriteConfig(RealAddrs)
		l.Directors = append(l.Directors, d)
	}
	if o.Active {
		conf := frrtest.Config(RouterAS, RouterInside, DirectorAS, addrs, RouterBFD)
		// The router is a host of its own, as the real servers are: at
		// nice 0 beside the client's 300 connections, its bfdd missed
		// its timers and dropped every director at once, again and
		// again.
		conf.Nice = realServerNice
		l.FRR = frrtest.Start(t, l.Router, conf)
	}
	for i, a := range RealAddrs {
		l.Reals = append(l.Reals, l.newRealServer(fmt.Sprintf("rs%d", i+1), a))
	}
	for _, r := range l.Reals {
		r.waitListening()
	}
	return l
}

// newRealServer builds a real server's host on the service LAN and starts
// its process; waitListening waits until it serves.
func (l *Lab) newRealServer(name string, a netip.Addr) *RealServer {
	t := l.t
	t.Helper()
	r := &RealServer{l: l, Name: name, Addr: a}
	r.NS = l.host(r.Name)
	l.Switch.Plug(t, r.NS, "eth0", prefix(a))
	l.defaultRoute(r.NS, RouterInside)
	// Direct routing: the VIP on lo, never announced nor answered
	// for in ARP, so that only the master draws the VIP's traffic.
	for _, s := range []string{"all", "eth0"} {
		l.sysctl(r.NS, "net/ipv4/conf/"+s+"/arp_ignore", "1")
		l.sysctl(r.NS, "net/ipv4/conf/"+s+"/arp_announce", "2")
	}
	lo, err := r.NS.NL.LinkByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.NS.NL.AddrAdd(lo, &netlink.Addr{IPNet: hostNet(VIP)}); err != nil {
		t.Fatalf("VIP on %s's lo: %v", r.Name, err)
	}
	r.start()
	return r
}

// host makes a namespace whose new interfaces skip IPv6 duplicate address
// detection, which would hold each link a second or two in the guest.
func (l *Lab) host(role string) *nstest.NS {
	ns := nstest.New(l.t, l.opts.Prefix+role)
	l.sysctl(ns, "net/ipv6/conf/default/accept_dad", "0")
	return ns
}

// sysctl writes a setting of ns (a path under /proc/sys), without starting
// a program: that costs the guest up to a quarter of a second.
func (l *Lab) sysctl(ns *nstest.NS, key, value string) {
	l.t.Helper()
	var err error
	ns.Do(l.t, func() { err = os.WriteFile("/proc/sys/"+key, []byte(value), 0o644) })
	if err != nil {
		l.t.Fatalf("sysctl %s=%s in %s: %v", key, value, ns.Name, err)
	}
}

func (l *Lab) defaultRoute(ns *nstest.NS, via netip.Addr) {
	l.t.Helper()
	if err := ns.NL.RouteReplace(&netlink.Route{Gw: via.AsSlice()}); err != nil {
		l.t.Fatalf("default route via %s in %s: %v", via, ns.Name, err)
	}
}

func prefix(a netip.Addr) string { return a.String() + "/24" }

func hostNet(a netip.Addr) *net.IPNet {
	return &net.IPNet{IP: a.AsSlice(), Mask: net.CIDRMask(a.BitLen(), a.BitLen())}
}

// Up starts both directors at once and waits until lb1 is master with the
// VIP, lb2 backup, and both hold the service with every real server.
func (l *Lab) Up() {
	l.t.Helper()
	for _, d := range l.Directors {
		d.Start()
	}
	if l.opts.Active {
		// Each directord starts, checks its real servers, then opens its
		// BGP session; BFD comes up with it.
		l.WaitAnnounced(l.Directors, 60*time.Second)
		l.waitBFD()
		return
	}
	// Starting directord takes the guest up to seconds, then lb1 waits
	// its Master_Down_Interval.
	l.WaitSteady(l.Directors[0], 30*time.Second)
}

// waitBFD waits until the router has every director's session
// established with its BFD session Up, then for the routes again, and
// logs the sessions that ended meanwhile. A route comes with the BGP
// session, before BFD is up: on a loaded guest (3 December 2026) FRR
// ended two sessions with Cease/BFD Down as they came up and a third
// director's BFD expired 10 s after its session did, so the router moved
// flows under a test that had begun. The lab is up when BFD is.
func (l *Lab) waitBFD() {
	l.t.Helper()
	// vtysh is a program: every 500 ms, not askEvery.
	took := waitEvery(l.t, 60*time.Second, 500*time.Millisecond, "every director's BGP session established with BFD Up at the router", func() bool {
		for _, d := range l.Directors {
			if n := l.FRR.Neighbor(d.Addr); n.State != "Established" || n.BFD.Status != "Up" {
				return false
			}
		}
		return true
	})
	l.WaitAnnounced(l.Directors, 60*time.Second)
	var dropped []string
	for _, d := range l.Directors {
		if n := l.FRR.Neighbor(d.Addr); n.Dropped > 0 {
			dropped = append(dropped, fmt.Sprintf("%s %d (last: %s)", d.Name, n.Dropped, cmp.Or(n.LastNotification, "none")))
		}
	}
	l.t.Logf("BFD up at the router on every session %v after the routes; sessions ended before: %v", took.Round(time.Millisecond), cmp.Or(strings.Join(dropped, ", "), "none"))
}

// WaitSteady waits until master is MASTER and alone with the VIP, every
// other running director is BACKUP, and all hold the service with the
// real servers that pass their checks, at their weight.
func (l *Lab) WaitSteady(master *Director, limit time.Duration) time.Duration {
	l.t.Helper()
	return waitEvery(l.t, limit, askEvery, master.Name+" master, the others backup, every table complete", func() bool {
		for _, d := range l.Directors {
			if !d.Running() {
				continue
			}
			want := "BACKUP"
			if d == master {
				want = "MASTER"
			}
			if d.State() != want || d.HasVIP() != (d == master) {
				return false
			}
			if len(d.Weights()) != len(d.reals) {
				return false
			}
			for _, w := range d.Weights() {
				if w != 1 {
					return false
				}
			}
		}
		return true
	})
}

// WaitFor polls cond until it holds, failing t after limit, and returns
// how long it took. It is nstest.WaitFor polling every 10 ms instead of
// every millisecond: the lab's conditions ask directord and the kernel,
// and in the guest they share one CPU with what is being measured.
func WaitFor(t nstest.TB, limit time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	return waitEvery(t, limit, 10*time.Millisecond, what, cond)
}

// askEvery is how often a wait asks directord itself (its control
// socket). Asked every 10 ms, each directord of a failed run used a fifth
// of the guest's one CPU, which the real servers and the client share
// (the lab's checks then timed out their handshakes: the guest was
// saturated); the kernel and the router are still asked every 10 ms.
const askEvery = 100 * time.Millisecond

// waitEvery is WaitFor polling every every.
func waitEvery(t nstest.TB, limit, every time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		// Each round: a TB may stop the wait here (the demo's does when
		// interrupted).
		t.Helper()
		if time.Since(start) > limit {
			t.Fatalf("%s: not within %v%s", what, limit, nstest.StarvedDuring(t, start))
		}
		time.Sleep(every)
	}
	return time.Since(start)
}

// Director is one director: a namespace with eth0 on the switch, and
// directord run on the lab's configuration with -i Name.
type Director struct {
	l        *Lab
	Name     string // lb1, lb2: directord's -i
	Addr     netip.Addr
	Priority int
	NS       *nstest.NS
	Port     string // its port on the switch
	File     string // its configuration file
	Socket   string // its control socket
	reals    []netip.Addr
	proc     *nstest.Process
	ipvs     *ipvs.Client
}

// WriteConfig writes the director's configuration file with these real
// servers; a reload (Reload) reads it.
func (d *Director) WriteConfig(reals []netip.Addr) {
	d.l.t.Helper()
	text := Config(reals)
	if d.l.opts.Active {
		text = ActiveConfig(reals)
	}
	if err := os.WriteFile(d.File, []byte(text), 0o644); err != nil {
		d.l.t.Fatal(err)
	}
	d.reals = reals
}

// Start runs directord in the director's namespace.
func (d *Director) Start() {
	d.l.t.Helper()
	d.proc = nstest.Start(d.l.t, d.NS, d.l.opts.Directord, "-n", "-l", "-D", "-i", d.Name,
		"-f", d.File, "--control-socket", d.Socket)
	// Before directord stops (cleanups run last first): what its kernel
	// held when the test failed.
	d.l.t.Cleanup(func() {
		if !d.l.t.Failed() || !d.Running() {
			return
		}
		table, _ := d.ipvsadm("-Ln", "--stats")
		conns, _ := d.ipvsadm("-Lnc")
		d.l.t.Logf("%s: ipvsadm -Ln --stats:\n%s\nipvsadm -Lnc:\n%s", d.Name, table, conns)
	})
}

// Running reports whether directord runs.
func (d *Director) Running() bool { return d.proc != nil && !d.proc.Wait(0) }

// Signal sends sig to directord.
func (d *Director) Signal(sig syscall.Signal) { d.proc.Signal(sig) }

// Kill kills directord with SIGKILL, as the OOM killer would, and waits
// for it to end. The host lives on, and so does directord's guardian,
// which hands over for it: priority 0 adverts, its VIP removed
// (docs/operations.md, "After a crash"). The IPVS table stays.
func (d *Director) Kill() {
	d.l.t.Helper()
	d.proc.Signal(syscall.SIGKILL) // directord's process group: not its guardian's
	if !d.proc.Wait(10 * time.Second) {
		d.l.t.Fatalf("directord on %s outlived SIGKILL", d.Name)
	}
}

// PowerOff is the director's death with its host, as when it loses power:
// off the network first, so that nothing it sends any more reaches the
// others, then every process in its namespace killed (directord and its
// guardian).
func (d *Director) PowerOff() {
	d.l.t.Helper()
	d.linkDown()
	pids, err := processesIn(d.NS)
	if err != nil {
		d.l.t.Fatal(err)
	}
	for _, pid := range pids {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	if !d.proc.Wait(10 * time.Second) {
		d.l.t.Fatalf("directord on %s outlived SIGKILL", d.Name)
	}
}

// processesIn lists the processes (but this one) whose network namespace
// is ns.
func processesIn(ns *nstest.NS) ([]int, error) {
	var want syscall.Stat_t
	if err := syscall.Fstat(int(ns.NS), &want); err != nil {
		return nil, fmt.Errorf("namespace %s: %w", ns.Name, err)
	}
	es, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range es {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		var st syscall.Stat_t
		if syscall.Stat(filepath.Join("/proc", e.Name(), "ns", "net"), &st) == nil && st.Dev == want.Dev && st.Ino == want.Ino {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// linkDown takes the director's eth0 down.
func (d *Director) linkDown() {
	d.l.t.Helper()
	eth0, err := d.NS.NL.LinkByName("eth0")
	if err == nil {
		err = d.NS.NL.LinkSetDown(eth0)
	}
	if err != nil {
		d.l.t.Fatalf("%s's eth0 down: %v", d.Name, err)
	}
}

// HasVIP reports whether the VIP is on the director's eth0.
func (d *Director) HasVIP() bool { return d.NS.HasAddr(d.l.t, "eth0", VIP.String()) }

// Status asks directord for its status through its control socket. An
// answer that did not come says what the machine withheld meanwhile.
func (d *Director) Status() (control.Status, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := control.Dial(d.Socket).Status(ctx)
	if err != nil {
		err = fmt.Errorf("%w%s", err, nstest.StarvedDuring(d.l.t, start))
	}
	return st, err
}

// State is VI_1's state as directord reports it, "" when it does not
// answer.
func (d *Director) State() string {
	st, err := d.Status()
	if err != nil || len(st.Instances) != 1 {
		return ""
	}
	return st.Instances[0].State
}

// Reload sends SIGHUP and waits until directord has taken the file.
func (d *Director) Reload() {
	d.l.t.Helper()
	before, err := d.Status()
	if err != nil {
		d.l.t.Fatalf("%s's status: %v", d.Name, err)
	}
	d.Signal(syscall.SIGHUP)
	waitEvery(d.l.t, 10*time.Second, askEvery, d.Name+"'s reload", func() bool {
		st, err := d.Status()
		return err == nil && st.ReloadsOK+st.ReloadsFailed > before.ReloadsOK+before.ReloadsFailed
	})
	st, err := d.Status()
	if err != nil {
		d.l.t.Fatalf("%s's status after the reload: %v", d.Name, err)
	}
	if st.LastReload == nil || !st.LastReload.OK {
		d.l.t.Fatalf("%s refused the reload: %+v", d.Name, st.LastReload)
	}
}

// Ctl runs directorctl on the director's control socket.
func (d *Director) Ctl(args ...string) (string, error) {
	out, err := exec.Command(d.l.opts.Directorctl, append([]string{"--socket", d.Socket}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("directorctl %s on %s: %w\n%s", strings.Join(args, " "), d.Name, err, out)
	}
	return string(out), nil
}

// Ipvsadm runs ipvsadm in the director's namespace.
func (d *Director) Ipvsadm(args ...string) string {
	d.l.t.Helper()
	out, err := d.ipvsadm(args...)
	if err != nil {
		d.l.t.Fatal(err)
	}
	return out
}

func (d *Director) ipvsadm(args ...string) (string, error) {
	out, err := exec.Command("ip", append([]string{"netns", "exec", d.NS.Name, "ipvsadm"}, args...)...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("ipvsadm %s on %s: %w\n%s", strings.Join(args, " "), d.Name, err, out)
	}
	return string(out), nil
}

// MAC is the address of the director's eth0.
func (d *Director) MAC() net.HardwareAddr {
	d.l.t.Helper()
	eth0, err := d.NS.NL.LinkByName("eth0")
	if err != nil {
		d.l.t.Fatal(err)
	}
	return eth0.Attrs().HardwareAddr
}

// VIPHolder is the director whose MAC the router's ARP cache has for the
// VIP: where the client's traffic goes. Nil when none.
func (l *Lab) VIPHolder() *Director {
	l.t.Helper()
	eth1, err := l.Router.NL.LinkByName("eth1")
	if err != nil {
		l.t.Fatal(err)
	}
	neighs, err := l.Router.NL.NeighList(eth1.Attrs().Index, netlink.FAMILY_V4)
	if err != nil {
		l.t.Fatal(err)
	}
	for _, n := range neighs {
		if ip, ok := netip.AddrFromSlice(n.IP); !ok || ip.Unmap() != VIP {
			continue
		}
		for _, d := range l.Directors {
			if n.HardwareAddr.String() == d.MAC().String() {
				return d
			}
		}
	}
	return nil
}

// Destinations are the service's real servers in the director's kernel,
// asked over netlink (ipvsadm would cost a program's start each time);
// none when the service is not there.
func (d *Director) Destinations() []ipvs.Destination {
	ds, err := d.ipvs.Destinations(ipvs.AddrKey(ipvs.TCP, ServiceAddress))
	if err != nil {
		return nil
	}
	return ds
}

// Weights are the service's real servers in the director's kernel and
// their weights.
func (d *Director) Weights() map[netip.Addr]int32 {
	w := map[netip.Addr]int32{}
	for _, dst := range d.Destinations() {
		w[dst.Addr] = dst.Weight
	}
	return w
}

// SyncDaemons are the kernel's connection sync daemons on the director.
func (d *Director) SyncDaemons() []ipvs.SyncDaemon {
	s, _ := d.ipvs.SyncDaemons()
	return s
}

// ConnEntry is one connection of the kernel's IPVS connection table.
type ConnEntry struct {
	Client, Virtual, Real netip.AddrPort
	State                 string // ESTABLISHED, SYN_RECV, TIME_WAIT...
}

// Conns reads the kernel's IPVS connection table (ipvsadm -Lnc).
func (d *Director) Conns() ([]ConnEntry, error) {
	var b []byte
	err := inNS(d.NS, func() (err error) {
		// thread-self: this thread's namespace, where self would be the
		// process's.
		b, err = os.ReadFile("/proc/thread-self/net/ip_vs_conn")
		return err
	})
	if err != nil {
		return nil, err
	}
	return parseConns(string(b))
}

// inNS runs f on a thread inside ns. Unlike nstest.NS.Do it reports
// failures as errors, so any goroutine may call it.
func inNS(ns *nstest.NS, f func() error) error {
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer orig.Close()
	if err := netns.Set(ns.NS); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("enter %s: %w", ns.Name, err)
	}
	ferr := f()
	if err := netns.Set(orig); err != nil {
		// The thread stays locked: it ends with its goroutine rather than
		// serve another one in the wrong namespace.
		return errors.Join(ferr, fmt.Errorf("leave %s: %w", ns.Name, err))
	}
	runtime.UnlockOSThread()
	return ferr
}
