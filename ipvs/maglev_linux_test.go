package ipvs_test

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/directord/directord/internal/ipvstest"
	"github.com/directord/directord/internal/nstest"
	"github.com/directord/directord/ipvs"
)

// director is one director of TestMaglevAgreesAfterRepair: a namespace
// whose IPVS holds the service, with a client namespace behind a link.
type director struct {
	ns, client *nstest.NS
	c          *ipvs.Client
}

const (
	maglevVIP    = "10.8.0.1"
	maglevClient = "10.8.0.2"
)

func newDirector(t *testing.T, name string) *director {
	t.Helper()
	c, ns := kernelClient(t)
	client := nstest.New(t, fmt.Sprintf("mhc-%s-%d-%d", name, os.Getpid(), nsSeq.Add(1)))
	nstest.Link(t, ns, client, "mh0", "mh1", maglevVIP+"/24", maglevClient+"/24")
	return &director{ns: ns, client: client, c: c}
}

// flows opens n connections from the client, from source ports first,
// first+1, ..., and returns the real server IPVS chose for each source
// port: the SYNs are scheduled on arrival, and ipvsadm -Lnc lists the
// connection entries they made (the real servers never answer; the
// sockets are closed after).
func (d *director) flows(t *testing.T, first, n int) map[int]string {
	t.Helper()
	var fds []int
	d.client.Do(t, func() {
		for i := range n {
			fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK, 0)
			if err != nil {
				t.Fatal(err)
			}
			fds = append(fds, fd)
			if err := syscall.Bind(fd, &syscall.SockaddrInet4{Port: first + i, Addr: [4]byte{10, 8, 0, 2}}); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Connect(fd, &syscall.SockaddrInet4{Port: 80, Addr: [4]byte{10, 8, 0, 1}}); err != syscall.EINPROGRESS {
				t.Fatalf("connect: %v", err)
			}
		}
	})
	defer func() {
		for _, fd := range fds {
			syscall.Close(fd)
		}
	}()
	out := map[int]string{}
	nstest.WaitFor(t, 5*time.Second, "the connection entries", func() bool {
		b, err := exec.Command("ip", "netns", "exec", d.ns.Name, "ipvsadm", "-Lnc").CombinedOutput()
		if err != nil {
			t.Fatalf("ipvsadm -Lnc: %v\n%s", err, b)
		}
		clear(out)
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) != 6 || f[0] != "TCP" || f[4] != maglevVIP+":80" {
				continue
			}
			src, err := netip.ParseAddrPort(f[3])
			if err != nil || src.Addr().String() != maglevClient {
				continue
			}
			if p := int(src.Port()); p >= first && p < first+n {
				out[p] = f[5]
			}
		}
		return len(out) == n
	})
	return out
}

// differ counts the source ports the two maps send to different servers.
func differ(a, b map[int]string) int {
	n := 0
	for p, d := range a {
		if b[p] != d {
			n++
		}
	}
	return n
}

// TestMaglevAgreesAfterRepair: two directors given the same real servers
// in different histories build different Maglev tables (the kernel fills
// its table in the order of its list, where a new destination goes to the
// head) and send flows to different servers; once the Reconciler has put
// both lists in the canonical order, their digests are equal, and so is
// where every new flow goes. It measures how long the repair takes: for
// that time the table is one of the intermediate orders.
func TestMaglevAgreesAfterRepair(t *testing.T) {
	ipvstest.Require(t)
	mh := ipvs.Service{ServiceKey: ipvs.AddrKey(ipvs.TCP, netip.MustParseAddrPort(maglevVIP+":80")),
		Scheduler: "mh", Flags: ipvs.SchedFlag1 | ipvs.SchedFlag2}
	// Forty real servers: two orders of equal weights disagree on 2 to
	// 3% of the table's slots (0.1 to 0.4% with five, 1.5% with twenty).
	var reals []string
	for i := range 40 {
		reals = append(reals, fmt.Sprintf("10.8.0.%d:80", 11+i))
	}
	add := func(s string) ipvs.Op { return ipvs.Op{Kind: ipvs.AddDest, Service: mh, Dest: dest(s, 1)} }
	a, b := newDirector(t, "a"), newDirector(t, "b")
	// a: in the configuration's order (keepalived's history: already the
	// canonical order, the highest first). b: backwards, and the second
	// one flapped (removed and added again).
	hist := []ipvs.Op{{Kind: ipvs.AddService, Service: mh}}
	for _, r := range reals {
		hist = append(hist, add(r))
	}
	must(t, a.c.Apply(hist))
	hist = []ipvs.Op{{Kind: ipvs.AddService, Service: mh}}
	for i := len(reals) - 1; i >= 0; i-- {
		hist = append(hist, add(reals[i]))
	}
	hist = append(hist, ipvs.Op{Kind: ipvs.DelDest, Service: mh, Dest: dest(reals[1], 1)}, add(reals[1]))
	must(t, b.c.Apply(hist))

	const n = 1000
	before := differ(a.flows(t, 20000, n), b.flows(t, 20000, n))
	// (each round takes new source ports: the first packets of a port
	// already used would find its connection entry, not the table)
	t.Logf("different histories: %d of %d flows go to different real servers", before, n)
	if before == 0 {
		t.Errorf("two histories, one table: the kernel no longer fills its table in list order?")
	}

	want := ipvs.Table{}
	vs := want.Add(mh)
	for _, r := range reals {
		vs.AddDest(dest(r, 1))
	}
	keys := []ipvs.ServiceKey{mh.ServiceKey}
	var digests []string
	for _, d := range []*director{a, b} {
		// The repair's operations, timed alone: from the first to the
		// last, the table is one of the intermediate orders.
		have := ipvs.Table{}
		hv := have.Add(mh)
		ds, err := d.c.Destinations(mh.ServiceKey)
		must(t, err)
		for _, x := range ds {
			hv.AddDest(x)
		}
		ops := ipvs.Diff(want, have, nil)
		start := time.Now()
		must(t, d.c.Apply(ops))
		took := time.Since(start)
		moved := 0
		for _, o := range ops {
			if o.Kind == ipvs.DelDest {
				moved++
			}
		}
		t.Logf("repair: %d operations, %d of %d destinations moved, in %v", len(ops), moved, len(reals), took)
		// The digest of the table read back from the kernel.
		r := ipvs.NewReconciler(d.c)
		if res, err := r.Sync(want); err != nil || len(res.Ops) != 0 {
			t.Errorf("after the repair: %v, %v", kinds(res.Ops), err)
		}
		digests = append(digests, r.Digest(keys))
		ds, err = d.c.Destinations(mh.ServiceKey)
		must(t, err)
		var order []string
		for _, x := range ds {
			order = append(order, x.AddrPort().String())
		}
		slices.Reverse(order)
		if got := strings.Join(order, " "); got != strings.Join(reals, " ") {
			t.Errorf("the kernel's order, backwards, %s, want %s (the highest first)", got, strings.Join(reals, " "))
		}
	}
	if digests[0] != digests[1] || digests[0] == "" {
		t.Errorf("digests after the repair: %v", digests)
	}
	fa, fb := a.flows(t, 22000, n), b.flows(t, 22000, n)
	if after := differ(fa, fb); after != 0 {
		t.Errorf("after the repair: %d of %d flows go to different real servers", after, n)
	}

	// A real server at weight 0 (a failed check, with mh-fallback): both
	// directors still agree, and mh-fallback sends its flows elsewhere.
	for _, d := range []*director{a, b} {
		must(t, d.c.Apply([]ipvs.Op{{Kind: ipvs.EditDest, Service: mh, Dest: dest(reals[2], 0)}}))
	}
	ga, gb := a.flows(t, 24000, n), b.flows(t, 24000, n)
	if d := differ(ga, gb); d != 0 {
		t.Errorf("with %s at weight 0: %d of %d flows go to different real servers", reals[2], d, n)
	}
	for p, r := range ga {
		if r == reals[2] {
			t.Errorf("port %d sent to %s, at weight 0", p, r)
		}
	}
}
