package ipvstest

import (
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/directord/directord/ipvs"
)

var update = flag.Bool("update", false, "rewrite testdata/kernel.txt from the kernel (in the User-Mode Linux guest)")

// kernel is what the sequence calls: *ipvs.Client and *Kernel.
type kernel interface {
	ipvs.Kernel
	Service(ipvs.ServiceKey) (ipvs.Service, error)
	Flush() error
	Timeouts() (ipvs.Timeouts, error)
	SetTimeouts(ipvs.Timeouts) error
	SyncDaemons() ([]ipvs.SyncDaemon, error)
	StartSyncDaemon(ipvs.SyncDaemon) error
	StopSyncDaemon(ipvs.SyncState) error
}

// The sequence's link for sync daemons, made by the guest's test.
const syncLink = "sync0"

// transcriptFile is the kernel's answers to sequence, as the guest's
// kernel gave them (go test -update in the guest rewrites it).
const transcriptFile = "testdata/kernel.txt"

type step struct {
	name string
	call func(kernel) error
}

func apply(ops ...ipvs.Op) func(kernel) error {
	return func(k kernel) error { return k.Apply(ops) }
}

// sequence is every answer of the kernel the fake models, each call
// followed by a read of the whole state.
func sequence() []step {
	ip := netip.MustParseAddr
	key := func(p ipvs.Protocol, s string) ipvs.ServiceKey { return ipvs.AddrKey(p, netip.MustParseAddrPort(s)) }
	v4 := ipvs.Service{ServiceKey: key(ipvs.TCP, "192.0.2.1:80"), Scheduler: "rr"}
	v6 := ipvs.Service{ServiceKey: key(ipvs.UDP, "[2001:db8::1]:53"), Scheduler: "wlc",
		Flags: ipvs.Persistent, Timeout: 300*time.Second + 700*time.Millisecond, Netmask: 64}
	sctp := ipvs.Service{ServiceKey: key(ipvs.SCTP, "192.0.2.2:9"), Scheduler: "rr",
		Flags: ipvs.Persistent, Timeout: time.Minute, Netmask: 24, PersistenceEngine: "sip"}
	fwm := ipvs.Service{ServiceKey: ipvs.MarkKey(ipvs.IPv4, 7), Scheduler: "sh", Flags: ipvs.SchedFlag1 | ipvs.SchedFlag2}
	allPorts := ipvs.Service{ServiceKey: key(ipvs.TCP, "192.0.2.3:0"), Scheduler: "rr", Flags: ipvs.Persistent, Timeout: 300 * time.Second}
	noPersist := ipvs.Service{ServiceKey: key(ipvs.TCP, "192.0.2.4:80"), Scheduler: "rr", Timeout: 120 * time.Second}
	mh := ipvs.Service{ServiceKey: key(ipvs.TCP, "192.0.2.5:80"), Scheduler: "mh", Flags: ipvs.SchedFlag1 | ipvs.SchedFlag2}
	missing := ipvs.Service{ServiceKey: key(ipvs.TCP, "198.51.100.9:80"), Scheduler: "rr"}
	dest := func(s string, f ipvs.Forward, w int32) ipvs.Destination {
		ap := netip.MustParseAddrPort(s)
		return ipvs.Destination{Addr: ap.Addr(), Port: ap.Port(), Forward: f, Weight: w}
	}
	dr := dest("10.0.0.1:80", ipvs.Route, 3)
	nat := dest("10.0.0.2:8080", ipvs.Masquerade, 0)
	nat.UpperThreshold, nat.LowerThreshold = 100, 10
	badThresholds := dest("10.0.0.3:80", ipvs.Masquerade, 1)
	badThresholds.LowerThreshold = 10
	gue := dest("10.0.0.4:80", ipvs.Tunnel, 1)
	gue.TunnelType, gue.TunnelPort, gue.TunnelFlags = 1, 6080, 1
	op := func(kind ipvs.OpKind, s ipvs.Service, d ipvs.Destination) ipvs.Op {
		return ipvs.Op{Kind: kind, Service: s, Dest: d}
	}
	svcOp := func(kind ipvs.OpKind, s ipvs.Service) ipvs.Op { return ipvs.Op{Kind: kind, Service: s} }
	edited := v4
	edited.Scheduler, edited.Flags = "wlc", ipvs.OnePacket
	drTunnel := dr
	drTunnel.Forward, drTunnel.Weight = ipvs.Tunnel, 5
	return []step{
		{"add a service", apply(svcOp(ipvs.AddService, v4))},
		{"add it again", apply(svcOp(ipvs.AddService, v4))},
		{"add a service of an unknown scheduler", apply(svcOp(ipvs.AddService, ipvs.Service{ServiceKey: key(ipvs.TCP, "192.0.2.9:80"), Scheduler: "nosuch"}))},
		{"add a persistent IPv6 service, its timeout not whole seconds", apply(svcOp(ipvs.AddService, v6))},
		{"add a firewall-mark service", apply(svcOp(ipvs.AddService, fwm))},
		{"add an SCTP service with a persistence engine", apply(svcOp(ipvs.AddService, sctp))},
		{"add a service of an unknown persistence engine", apply(svcOp(ipvs.AddService, ipvs.Service{ServiceKey: key(ipvs.TCP, "192.0.2.9:80"), Scheduler: "rr", PersistenceEngine: "nosuch"}))},
		{"add a persistent service on every port", apply(svcOp(ipvs.AddService, allPorts))},
		{"add a service with a timeout but no persistence", apply(svcOp(ipvs.AddService, noPersist))},
		{"edit a missing service", apply(svcOp(ipvs.EditService, missing))},
		{"delete a missing service", apply(svcOp(ipvs.DelService, missing))},
		{"get a missing service", func(k kernel) error { _, err := k.Service(missing.ServiceKey); return err }},
		{"edit a service's scheduler and flags", apply(svcOp(ipvs.EditService, edited))},
		{"edit a service to an unknown scheduler", apply(svcOp(ipvs.EditService, ipvs.Service{ServiceKey: v4.ServiceKey, Scheduler: "nosuch"}))},
		{"add a destination", apply(op(ipvs.AddDest, v4, dr))},
		{"add it again", apply(op(ipvs.AddDest, v4, dr))},
		{"add a destination to a missing service", apply(op(ipvs.AddDest, missing, dr))},
		{"edit a missing destination", apply(op(ipvs.EditDest, v4, dest("10.0.0.99:80", ipvs.Route, 1)))},
		{"delete a missing destination", apply(op(ipvs.DelDest, v4, dest("10.0.0.99:80", ipvs.Route, 1)))},
		{"delete a destination of a missing service", apply(op(ipvs.DelDest, missing, dr))},
		{"add a NAT destination with thresholds", apply(op(ipvs.AddDest, v4, nat))},
		{"add a destination whose lower threshold is above its upper", apply(op(ipvs.AddDest, v4, badThresholds))},
		{"add a NAT destination on the loopback address", apply(op(ipvs.AddDest, v4, dest("127.0.0.1:80", ipvs.Masquerade, 1)))},
		{"add a NAT destination on the link's address", apply(op(ipvs.AddDest, v4, dest("10.9.0.1:8080", ipvs.Masquerade, 1)))},
		{"add a GUE tunnel destination", apply(op(ipvs.AddDest, v4, gue))},
		{"add a destination with a port to a firewall-mark service", apply(op(ipvs.AddDest, fwm, dest("10.0.0.5:80", ipvs.Route, 2)))},
		{"edit a destination's method and weight", apply(op(ipvs.EditDest, v4, drTunnel))},
		{"apply three, the second failing", apply(
			op(ipvs.AddDest, v6, dest("[2001:db8::10]:53", ipvs.Route, 1)),
			svcOp(ipvs.AddService, v6),
			op(ipvs.AddDest, v6, dest("[2001:db8::11]:53", ipvs.Route, 1)))},
		{"list a missing service's destinations", func(k kernel) error {
			ds, err := k.Destinations(missing.ServiceKey)
			if err == nil && len(ds) != 0 {
				err = fmt.Errorf("%d destinations", len(ds))
			}
			return err
		}},
		{"delete a destination", apply(op(ipvs.DelDest, v4, nat))},
		{"set the TCP timeout, not whole seconds", func(k kernel) error { return k.SetTimeouts(ipvs.Timeouts{TCP: 1500 * time.Millisecond}) }},
		{"set the UDP timeout", func(k kernel) error { return k.SetTimeouts(ipvs.Timeouts{UDP: time.Minute}) }},
		{"start a master sync daemon", func(k kernel) error {
			return k.StartSyncDaemon(ipvs.SyncDaemon{State: ipvs.SyncMaster, Interface: syncLink, SyncID: 51})
		}},
		{"start a second master", func(k kernel) error {
			return k.StartSyncDaemon(ipvs.SyncDaemon{State: ipvs.SyncMaster, Interface: syncLink, SyncID: 52})
		}},
		{"start a backup on a missing link", func(k kernel) error {
			return k.StartSyncDaemon(ipvs.SyncDaemon{State: ipvs.SyncBackup, Interface: "nosuch0", SyncID: 51})
		}},
		{"start a backup on an IPv6 group", func(k kernel) error {
			return k.StartSyncDaemon(ipvs.SyncDaemon{State: ipvs.SyncBackup, Interface: syncLink, SyncID: 51, Group: ip("ff02::81")})
		}},
		{"stop the backup", func(k kernel) error { return k.StopSyncDaemon(ipvs.SyncBackup) }},
		{"stop it again", func(k kernel) error { return k.StopSyncDaemon(ipvs.SyncBackup) }},
		{"stop the master", func(k kernel) error { return k.StopSyncDaemon(ipvs.SyncMaster) }},
		{"add a Maglev service with mh-fallback and mh-port", apply(svcOp(ipvs.AddService, mh))},
		{"add three destinations: each goes to the head", apply(
			op(ipvs.AddDest, mh, dest("10.0.1.1:80", ipvs.Route, 1)),
			op(ipvs.AddDest, mh, dest("10.0.1.2:80", ipvs.Route, 2)),
			op(ipvs.AddDest, mh, dest("10.0.1.3:80", ipvs.Route, 1)))},
		{"edit the middle one's weight: it keeps its place", apply(op(ipvs.EditDest, mh, dest("10.0.1.2:80", ipvs.Route, 0)))},
		{"delete the middle one and add it again: it goes to the head", apply(
			op(ipvs.DelDest, mh, dest("10.0.1.2:80", ipvs.Route, 0)),
			op(ipvs.AddDest, mh, dest("10.0.1.2:80", ipvs.Route, 2)))},
		{"delete the head", apply(op(ipvs.DelDest, mh, dest("10.0.1.2:80", ipvs.Route, 0)))},
		{"delete a service", apply(svcOp(ipvs.DelService, sctp))},
		{"flush", func(k kernel) error { return k.Flush() }},
	}
}

// run is k's transcript of the sequence: each call's answer, then the
// state it leaves, read back.
func run(t *testing.T, k kernel) []string {
	t.Helper()
	var out []string
	for _, s := range sequence() {
		out = append(out, "## "+s.name, "answer: "+answer(s.call(k)))
		out = append(out, state(t, k)...)
	}
	return out
}

// answer is an error's text and what it compares as.
func answer(err error) string {
	if err == nil {
		return "ok"
	}
	s := err.Error()
	var errno syscall.Errno
	if errors.As(err, &errno) {
		s += fmt.Sprintf(" [errno %d]", int(errno))
	}
	if errors.Is(err, os.ErrExist) {
		s += " [os.ErrExist]"
	}
	if errors.Is(err, os.ErrNotExist) {
		s += " [os.ErrNotExist]"
	}
	var ie *ipvs.Error
	if !errors.As(err, &ie) {
		s += " [not an *ipvs.Error]"
	}
	return strings.ReplaceAll(s, "\n", " / ")
}

func state(t *testing.T, k kernel) []string {
	t.Helper()
	var out []string
	svcs, err := k.Services()
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(svcs, func(a, b ipvs.Service) int { return ipvs.CompareKeys(a.ServiceKey, b.ServiceKey) })
	for _, s := range svcs {
		s.Stats = ipvs.Stats{}
		out = append(out, fmt.Sprintf("service %s: %s flags %s timeout %s netmask %d pe %q",
			s.ServiceKey, s.Scheduler, s.Flags, s.Timeout, s.Netmask, s.PersistenceEngine))
		ds, err := k.Destinations(s.ServiceKey)
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) > 1 {
			order := "  order, as listed:"
			for _, d := range ds {
				order += " " + d.AddrPort().String()
			}
			out = append(out, order)
		}
		slices.SortFunc(ds, func(a, b ipvs.Destination) int {
			return a.AddrPort().Compare(b.AddrPort())
		})
		for _, d := range ds {
			var c ipvs.DestCounters
			if d.Counters != nil {
				c = *d.Counters
			}
			out = append(out, fmt.Sprintf("  destination %s: %s weight %d thresholds %d-%d tunnel %d/%d/%d conns %d/%d/%d",
				d.AddrPort(), d.Forward, d.Weight, d.LowerThreshold, d.UpperThreshold,
				d.TunnelType, d.TunnelPort, d.TunnelFlags, c.ActiveConns, c.InactiveConns, c.PersistConns))
		}
	}
	tm, err := k.Timeouts()
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, fmt.Sprintf("timeouts tcp %s fin %s udp %s", tm.TCP, tm.TCPFin, tm.UDP))
	ds, err := k.SyncDaemons()
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(ds, func(a, b ipvs.SyncDaemon) int { return int(a.State) - int(b.State) })
	for _, d := range ds {
		out = append(out, fmt.Sprintf("daemon %s: maxlen %d group %s port %d ttl %d", d, d.MaxLen, d.Group, d.Port, d.TTL))
	}
	return out
}

// fake is the fake as the sequence finds it: the guest's namespace has
// lo and sync0, whose address is 10.9.0.1.
func fake() *Kernel {
	return &Kernel{Links: map[string]int{"lo": 65536, syncLink: 1500}}
}

// diff fails t with the first lines where got and want part.
func diff(t *testing.T, gotName string, got []string, wantName string, want []string) {
	t.Helper()
	n := 0
	for i := 0; i < max(len(got), len(want)) && n < 20; i++ {
		g, w := "(none)", "(none)"
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Errorf("line %d:\n%s: %s\n%s: %s", i+1, gotName, g, wantName, w)
			n++
		}
	}
}

func readTranscript(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(transcriptFile)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// TestFakeMatchesTranscript: the fake answers the sequence as the
// guest's kernel did (TestFakeMatchesKernel proves the transcript to be
// the kernel's).
func TestFakeMatchesTranscript(t *testing.T) {
	diff(t, "fake", run(t, fake()), "kernel", readTranscript(t))
}
