package ipvs_test

// Tests against the kernel's IPVS: they skip on our hosts, whose kernel
// has none, and run in the User-Mode Linux guest of make integration.
// Each makes its own network namespace, so each starts from an empty
// table, and checks what it did with ipvsadm, the reference.

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/directord/directord/internal/ipvstest"
	"github.com/directord/directord/internal/nstest"
	"github.com/directord/directord/ipvs"
)

var nsSeq atomic.Int32

// kernelClient makes a namespace and a Client in it.
func kernelClient(t *testing.T) (*ipvs.Client, *nstest.NS) {
	t.Helper()
	ipvstest.Require(t)
	ipvstest.RequireRoot(t)
	ipvstest.RequireCommand(t, "ipvsadm")
	ns := nstest.New(t, fmt.Sprintf("ipvs-%d-%d", os.Getpid(), nsSeq.Add(1)))
	c, err := ipvs.Dial(&ipvs.Options{NetNS: int(ns.NS)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, ns
}

// ipvsadm runs ipvsadm in the namespace and returns its output.
func ipvsadm(t *testing.T, ns *nstest.NS, args ...string) string {
	t.Helper()
	out, err := exec.Command("ip", append([]string{"netns", "exec", ns.Name, "ipvsadm"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("ipvsadm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// saved is ipvsadm -Sn, sorted, for comparisons that do not depend on the
// kernel's hash order.
func saved(t *testing.T, ns *nstest.NS) []string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(ipvsadm(t, ns, "-Sn")), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return nil
	}
	slices.Sort(lines)
	return lines
}

func checkSaved(t *testing.T, ns *nstest.NS, want ...string) {
	t.Helper()
	want = slices.Sorted(slices.Values(want))
	if got := saved(t, ns); !reflect.DeepEqual(got, want) {
		t.Errorf("ipvsadm -Sn:\n got %q\nwant %q", got, want)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestKernelServicesAndDestinations(t *testing.T) {
	c, ns := kernelClient(t)
	ip := netip.MustParseAddr
	info, err := c.Info()
	must(t, err)
	if info.Version == 0 || info.ConnTableSize == 0 {
		t.Errorf("info %+v", info)
	}

	v4 := ipvs.Service{ServiceKey: ipvs.AddrKey(ipvs.TCP, netip.MustParseAddrPort("192.0.2.1:80")), Scheduler: "rr"}
	v6 := ipvs.Service{ServiceKey: ipvs.AddrKey(ipvs.UDP, netip.MustParseAddrPort("[2001:db8::1]:53")), Scheduler: "wlc",
		Flags: ipvs.Persistent, Timeout: 300 * time.Second, Netmask: 64}
	sctp := ipvs.Service{ServiceKey: ipvs.AddrKey(ipvs.SCTP, netip.MustParseAddrPort("192.0.2.2:9")), Scheduler: "rr",
		Flags: ipvs.Persistent, Timeout: time.Minute, Netmask: 24, PersistenceEngine: "sip"}
	fwm := ipvs.Service{ServiceKey: ipvs.MarkKey(ipvs.IPv4, 7), Scheduler: "sh", Flags: ipvs.SchedFlag1 | ipvs.SchedFlag2}
	fwm6 := ipvs.Service{ServiceKey: ipvs.MarkKey(ipvs.IPv6, 8), Scheduler: "mh", Flags: ipvs.OnePacket}
	for _, s := range []ipvs.Service{v4, v6, sctp, fwm, fwm6} {
		must(t, c.CreateService(s))
	}
	if err := c.CreateService(v4); !errors.Is(err, os.ErrExist) {
		t.Errorf("adding a service twice: %v, want os.ErrExist", err)
	}
	dr := ipvs.Destination{Addr: ip("10.0.0.1"), Port: 80, Forward: ipvs.Route, Weight: 3}
	nat := ipvs.Destination{Addr: ip("10.0.0.2"), Port: 8080, Forward: ipvs.Masquerade, Weight: 0, UpperThreshold: 100, LowerThreshold: 10}
	tun := ipvs.Destination{Addr: ip("10.0.0.3"), Port: 80, Forward: ipvs.Tunnel, Weight: 1}
	gue := ipvs.Destination{Addr: ip("10.0.0.4"), Port: 80, Forward: ipvs.Tunnel, Weight: 1, TunnelType: 1, TunnelPort: 6080, TunnelFlags: 1}
	for _, d := range []ipvs.Destination{dr, nat, tun, gue} {
		must(t, c.CreateDestination(v4.ServiceKey, d))
	}
	d6 := ipvs.Destination{Addr: ip("2001:db8::10"), Port: 53, Forward: ipvs.Route, Weight: 1}
	must(t, c.CreateDestination(v6.ServiceKey, d6))
	fd := ipvs.Destination{Addr: ip("10.0.0.5"), Forward: ipvs.Route, Weight: 2}
	must(t, c.CreateDestination(fwm.ServiceKey, fd))

	checkSaved(t, ns,
		"-A -t 192.0.2.1:80 -s rr",
		"-a -t 192.0.2.1:80 -r 10.0.0.1:80 -g -w 3",
		"-a -t 192.0.2.1:80 -r 10.0.0.2:8080 -m -w 0", // -Sn omits thresholds
		"-a -t 192.0.2.1:80 -r 10.0.0.3:80 -i -w 1 --tun-type ipip",
		"-a -t 192.0.2.1:80 -r 10.0.0.4:80 -i -w 1 --tun-type gue --tun-port 6080 --tun-csum",
		"-A -u [2001:db8::1]:53 -s wlc -p 300 -M 64",
		"-a -u [2001:db8::1]:53 -r [2001:db8::10]:53 -g -w 1",
		"-A --sctp-service 192.0.2.2:9 -s rr -p 60 -M 255.255.255.0 --pe sip",
		"-A -f 7 -s sh -b sh-fallback,sh-port",
		"-a -f 7 -r 10.0.0.5:0 -g -w 2",
		"-A -f 8 -6 -s mh -o",
	)

	if out := ipvsadm(t, ns, "-Ln", "--thresholds", "-t", "192.0.2.1:80"); !regexp.MustCompile(`10\.0\.0\.2:8080\s+100\s+10`).MatchString(out) {
		t.Errorf("ipvsadm -Ln --thresholds: no 100 10 for 10.0.0.2:8080\n%s", out)
	}

	// What we read back is what we wrote.
	got, err := c.Services()
	must(t, err)
	for i := range got {
		got[i].Stats = ipvs.Stats{}
	}
	want := []ipvs.Service{v4, v6, sctp, fwm, fwm6}
	for i := range want {
		if want[i].Netmask == 0 { // the kernel reports the whole address
			want[i].Netmask = 32
			if want[i].Family == ipvs.IPv6 {
				want[i].Netmask = 128
			}
		}
	}
	sortServices := func(s []ipvs.Service) {
		slices.SortFunc(s, func(a, b ipvs.Service) int { return ipvs.CompareKeys(a.ServiceKey, b.ServiceKey) })
	}
	sortServices(got)
	sortServices(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("services:\n got %+v\nwant %+v", got, want)
	}
	ds, err := c.Destinations(v4.ServiceKey)
	must(t, err)
	slices.SortFunc(ds, func(a, b ipvs.Destination) int { return a.Addr.Compare(b.Addr) })
	for i := range ds {
		ds[i].Counters = nil
	}
	if w := []ipvs.Destination{dr, nat, tun, gue}; !reflect.DeepEqual(ds, w) {
		t.Errorf("destinations:\n got %+v\nwant %+v", ds, w)
	}
	if s, err := c.Service(v6.ServiceKey); err != nil || s.Scheduler != "wlc" {
		t.Errorf("service %s: %+v, %v", v6.ServiceKey, s, err)
	}

	// Edits keep what they do not change.
	v4.Scheduler = "wlc"
	must(t, c.UpdateService(v4))
	dr.Weight = 0
	must(t, c.UpdateDestination(v4.ServiceKey, dr))
	must(t, c.DeleteDestination(v4.ServiceKey, nat))
	must(t, c.DeleteService(sctp.ServiceKey))
	must(t, c.DeleteService(fwm6.ServiceKey))
	if err := c.DeleteService(sctp.ServiceKey); !errors.Is(err, os.ErrNotExist) && !strings.Contains(fmt.Sprint(err), "no such service") {
		t.Errorf("deleting a missing service: %v", err)
	}
	checkSaved(t, ns,
		"-A -t 192.0.2.1:80 -s wlc",
		"-a -t 192.0.2.1:80 -r 10.0.0.1:80 -g -w 0",
		"-a -t 192.0.2.1:80 -r 10.0.0.3:80 -i -w 1 --tun-type ipip",
		"-a -t 192.0.2.1:80 -r 10.0.0.4:80 -i -w 1 --tun-type gue --tun-port 6080 --tun-csum",
		"-A -u [2001:db8::1]:53 -s wlc -p 300 -M 64",
		"-a -u [2001:db8::1]:53 -r [2001:db8::10]:53 -g -w 1",
		"-A -f 7 -s sh -b sh-fallback,sh-port",
		"-a -f 7 -r 10.0.0.5:0 -g -w 2",
	)
	must(t, c.Zero())
	must(t, c.Flush())
	checkSaved(t, ns)
}

func TestKernelEveryScheduler(t *testing.T) {
	c, ns := kernelClient(t)
	scheds := []string{"rr", "wrr", "lc", "wlc", "lblc", "lblcr", "dh", "sh", "sed", "nq", "fo", "ovf", "mh"}
	var want []string
	for i, s := range scheds {
		k := ipvs.AddrKey(ipvs.TCP, netip.AddrPortFrom(netip.AddrFrom4([4]byte{192, 0, 2, byte(10 + i)}), 80))
		must(t, c.CreateService(ipvs.Service{ServiceKey: k, Scheduler: s}))
		want = append(want, fmt.Sprintf("-A -t %s -s %s", netip.AddrPortFrom(k.Addr, k.Port), s))
	}
	checkSaved(t, ns, want...)
	err := c.CreateService(ipvs.Service{ServiceKey: ipvs.AddrKey(ipvs.TCP, netip.MustParseAddrPort("192.0.2.99:80")), Scheduler: "nosuch"})
	if err == nil || !strings.Contains(err.Error(), "scheduler or persistence engine not found") {
		t.Errorf("unknown scheduler: %v", err)
	}
}

func TestKernelTimeouts(t *testing.T) {
	c, ns := kernelClient(t)
	must(t, c.SetTimeouts(ipvs.Timeouts{TCP: 900 * time.Second, TCPFin: 2 * time.Minute, UDP: 5 * time.Minute}))
	tm, err := c.Timeouts()
	must(t, err)
	if want := (ipvs.Timeouts{TCP: 900 * time.Second, TCPFin: 2 * time.Minute, UDP: 5 * time.Minute}); tm != want {
		t.Errorf("timeouts %+v, want %+v", tm, want)
	}
	// Zero leaves a timeout as it is.
	must(t, c.SetTimeouts(ipvs.Timeouts{UDP: time.Minute}))
	if out := ipvsadm(t, ns, "-L", "--timeout"); !strings.Contains(out, "900 120 60") {
		t.Errorf("ipvsadm -L --timeout: %q", out)
	}
}

func TestKernelSyncDaemons(t *testing.T) {
	c, ns := kernelClient(t)
	peer := nstest.New(t, fmt.Sprintf("ipvsp-%d-%d", os.Getpid(), nsSeq.Add(1)))
	nstest.Link(t, ns, peer, "sync0", "sync1", "10.9.0.1/24", "10.9.0.2/24")
	master := ipvs.SyncDaemon{State: ipvs.SyncMaster, Interface: "sync0", SyncID: 51}
	backup := ipvs.SyncDaemon{State: ipvs.SyncBackup, Interface: "sync0", SyncID: 52, MaxLen: 1400,
		Group: netip.MustParseAddr("239.1.2.3"), Port: 8900, TTL: 2}
	must(t, c.StartSyncDaemon(master))
	must(t, c.StartSyncDaemon(backup))
	if err := c.StartSyncDaemon(master); !errors.Is(err, os.ErrExist) && err == nil {
		t.Errorf("a second master: %v", err)
	}
	got, err := c.SyncDaemons()
	must(t, err)
	slices.SortFunc(got, func(a, b ipvs.SyncDaemon) int { return int(a.State) - int(b.State) })
	wantMaster := master
	wantMaster.MaxLen, wantMaster.Group, wantMaster.Port, wantMaster.TTL = 1472, netip.MustParseAddr("224.0.0.81"), 8848, 1
	if want := []ipvs.SyncDaemon{wantMaster, backup}; !reflect.DeepEqual(got, want) {
		t.Errorf("daemons:\n got %+v\nwant %+v", got, want)
	}
	out := ipvsadm(t, ns, "-L", "--daemon")
	for _, w := range []string{"master sync daemon (mcast=sync0, syncid=51", "backup sync daemon (mcast=sync0, syncid=52"} {
		if !strings.Contains(out, w) {
			t.Errorf("ipvsadm -L --daemon lacks %q:\n%s", w, out)
		}
	}
	must(t, c.StopSyncDaemon(ipvs.SyncMaster))
	got, err = c.SyncDaemons()
	must(t, err)
	if len(got) != 1 || got[0].State != ipvs.SyncBackup {
		t.Errorf("after stopping the master: %+v", got)
	}
	must(t, c.StopSyncDaemon(ipvs.SyncBackup))
}

func TestKernelApplyBatches(t *testing.T) {
	c, ns := kernelClient(t)
	want := bigTable(100, 10) // 1,100 operations: five batches
	r := ipvs.NewReconciler(c)
	res, err := r.Sync(want)
	must(t, err)
	if len(res.Ops) != 1100 {
		t.Fatalf("%d ops", len(res.Ops))
	}
	if n := len(saved(t, ns)); n != 1100 {
		t.Fatalf("ipvsadm -Sn has %d lines, want 1100", n)
	}
	// One failure in a batch is reported, and the rest is done.
	k := want.Keys()[0]
	err = c.Apply([]ipvs.Op{
		{Kind: ipvs.AddDest, Service: want[k].Service, Dest: ipvs.Destination{Addr: netip.MustParseAddr("10.200.0.1"), Port: 80, Forward: ipvs.Route, Weight: 1}},
		{Kind: ipvs.AddService, Service: want[k].Service},
		{Kind: ipvs.AddDest, Service: want[k].Service, Dest: ipvs.Destination{Addr: netip.MustParseAddr("10.200.0.2"), Port: 80, Forward: ipvs.Route, Weight: 1}},
	})
	if err == nil || !strings.Contains(err.Error(), "add service "+k.String()+": service already exists") || strings.Count(err.Error(), "ipvs:") != 1 {
		t.Errorf("error %v", err)
	}
	if n := len(saved(t, ns)); n != 1102 {
		t.Errorf("ipvsadm -Sn has %d lines, want 1102", n)
	}
}

func TestKernelReconcilerIdempotentAndRepairs(t *testing.T) {
	c, ns := kernelClient(t)
	// Someone else's service, which must never be touched.
	ipvsadm(t, ns, "-A", "-t", "198.51.100.1:25", "-s", "rr")
	ipvsadm(t, ns, "-a", "-t", "198.51.100.1:25", "-r", "10.9.9.9:25", "-g")

	want := table(svc("192.0.2.1:80", "wrr"), dest("10.0.0.1:80", 1), dest("10.0.0.2:80", 2),
		svc("192.0.2.1:443", "rr"), dest("10.0.0.1:443", 1))
	r := ipvs.NewReconciler(c)
	_, err := r.Sync(want)
	must(t, err)
	all := []string{
		"-A -t 192.0.2.1:80 -s wrr",
		"-a -t 192.0.2.1:80 -r 10.0.0.1:80 -g -w 1",
		"-a -t 192.0.2.1:80 -r 10.0.0.2:80 -g -w 2",
		"-A -t 192.0.2.1:443 -s rr",
		"-a -t 192.0.2.1:443 -r 10.0.0.1:443 -g -w 1",
		"-A -t 198.51.100.1:25 -s rr",
		"-a -t 198.51.100.1:25 -r 10.9.9.9:25 -g -w 1",
	}
	checkSaved(t, ns, all...)

	// Idempotent, from its copy and after reading the kernel.
	r.Invalidate()
	res, err := r.Sync(want)
	must(t, err)
	if len(res.Ops) != 0 || !res.Read {
		t.Errorf("second sync: %q", kinds(res.Ops))
	}
	// A new reconciler (directord restarted) adopts the table as it is.
	res, err = ipvs.NewReconciler(c).Sync(want)
	must(t, err)
	if len(res.Ops) != 0 {
		t.Errorf("adoption: %q", kinds(res.Ops))
	}

	// Out-of-band changes are repaired at the next read.
	ipvsadm(t, ns, "-d", "-t", "192.0.2.1:80", "-r", "10.0.0.2:80")
	ipvsadm(t, ns, "-e", "-t", "192.0.2.1:443", "-r", "10.0.0.1:443", "-g", "-w", "7")
	ipvsadm(t, ns, "-D", "-t", "192.0.2.1:443")
	r.Invalidate()
	res, err = r.Sync(want)
	must(t, err)
	wantOps := []string{
		"add service TCP 192.0.2.1:443 (rr)",
		"add destination 10.0.0.2:80 of TCP 192.0.2.1:80 (route, weight 2)",
		"add destination 10.0.0.1:443 of TCP 192.0.2.1:443 (route, weight 1)",
	}
	if got := kinds(res.Ops); !reflect.DeepEqual(got, wantOps) {
		t.Errorf("repair:\n got %q\nwant %q", got, wantOps)
	}
	checkSaved(t, ns, all...)

	// A reload without the 443 service removes it, and nothing else.
	delete(want, ipvs.AddrKey(ipvs.TCP, netip.MustParseAddrPort("192.0.2.1:443")))
	_, err = r.Sync(want)
	must(t, err)
	checkSaved(t, ns, slices.Concat(all[:3], all[5:])...)
}
