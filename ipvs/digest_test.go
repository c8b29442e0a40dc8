package ipvs_test

import (
	"testing"
	"time"

	"github.com/directord/directord/internal/ipvstest"
	"github.com/directord/directord/ipvs"
)

// TestDigest: the digest is the programmed state, and nothing else: an
// mh service's order counts, another's does not; counters, a full
// netmask spelled out and a Local for NAT do not; a weight, a flag, the
// scheduler, a threshold and a missing service do.
func TestDigest(t *testing.T) {
	mh := mhSvc("192.0.2.1:80")
	rr := svc("192.0.2.2:80", "rr")
	base := func() ipvs.Table {
		return table(mh, dest("10.0.0.1:80", 1), dest("10.0.0.2:80", 2),
			rr, dest("10.0.0.1:80", 1), dest("10.0.0.2:80", 1))
	}
	keys := []ipvs.ServiceKey{mh.ServiceKey, rr.ServiceKey}
	ref := ipvs.Digest(base(), keys)
	if len(ref) != len("sha256:")+16 {
		t.Fatalf("digest %q", ref)
	}
	for _, c := range []struct {
		name string
		edit func(ipvs.Table)
		same bool
	}{
		{"the same table", func(ipvs.Table) {}, true},
		{"counters and connections", func(tb ipvs.Table) {
			vs := tb[rr.ServiceKey]
			vs.Stats.Connections = 7
			d, _ := vs.Dest(ipvs.DestKey{Addr: dest("10.0.0.1:80", 0).Addr, Port: 80})
			d.Counters = &ipvs.DestCounters{ActiveConns: 3, Stats: ipvs.Stats{BytesIn: 1 << 20}}
			vs.AddDest(d)
		}, true},
		{"another order of a round-robin service", func(tb ipvs.Table) {
			swapHead(tb, rr.ServiceKey)
		}, true},
		{"the netmask spelled out", func(tb ipvs.Table) { tb[rr.ServiceKey].Netmask = 32 }, true},
		{"another order of the mh service", func(tb ipvs.Table) {
			swapHead(tb, mh.ServiceKey)
		}, false},
		{"a weight", func(tb ipvs.Table) { tb[mh.ServiceKey].AddDest(dest("10.0.0.2:80", 0)) }, false},
		{"a threshold", func(tb ipvs.Table) {
			d := dest("10.0.0.2:80", 1)
			d.UpperThreshold = 10
			tb[rr.ServiceKey].AddDest(d)
		}, false},
		{"a flag", func(tb ipvs.Table) { tb[mh.ServiceKey].Flags = ipvs.SchedFlag1 }, false},
		{"the scheduler", func(tb ipvs.Table) { tb[rr.ServiceKey].Scheduler = "wrr" }, false},
		{"a persistence timeout", func(tb ipvs.Table) { tb[rr.ServiceKey].Timeout = time.Minute }, false},
		{"a missing destination", func(tb ipvs.Table) {
			tb[rr.ServiceKey].DelDest(ipvs.DestKey{Addr: dest("10.0.0.2:80", 0).Addr, Port: 80})
		}, false},
		{"a missing service", func(tb ipvs.Table) { delete(tb, rr.ServiceKey) }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			tb := base()
			c.edit(tb)
			if got := ipvs.Digest(tb, keys); (got == ref) != c.same {
				t.Errorf("digest %s, reference %s: same %v, want %v", got, ref, got == ref, c.same)
			}
		})
	}
}

// TestDigestAgreesAfterDifferentHistories: two kernels that reached the
// same wanted table by different paths have one digest once reconciled,
// and the reconciler's digest is that of the kernel's table read back.
func TestDigestAgreesAfterDifferentHistories(t *testing.T) {
	mh := mhSvc("192.0.2.1:80")
	want := table(mh, dest("10.0.0.1:80", 1), dest("10.0.0.2:80", 2), dest("10.0.0.3:80", 1))
	keys := []ipvs.ServiceKey{mh.ServiceKey}
	a, b := &ipvstest.Kernel{}, &ipvstest.Kernel{}
	apply(t, b, ipvs.Op{Kind: ipvs.AddService, Service: mh},
		ipvs.Op{Kind: ipvs.AddDest, Service: mh, Dest: dest("10.0.0.1:80", 1)},
		ipvs.Op{Kind: ipvs.AddDest, Service: mh, Dest: dest("10.0.0.3:80", 1)},
		ipvs.Op{Kind: ipvs.AddDest, Service: mh, Dest: dest("10.0.0.2:80", 2)})
	if ipvs.Digest(a.Table(), keys) == ipvs.Digest(b.Table(), keys) {
		t.Fatal("an empty kernel and a full one agree")
	}
	var digests []string
	for _, k := range []*ipvstest.Kernel{a, b} {
		r := ipvs.NewReconciler(k)
		if r.Digest(keys) != "" {
			t.Error("a digest before the first sync")
		}
		if _, err := r.Sync(want); err != nil {
			t.Fatal(err)
		}
		if got, read := r.Digest(keys), ipvs.Digest(k.Table(), keys); got != read {
			t.Errorf("reconciler's digest %s, the kernel's table's %s", got, read)
		}
		digests = append(digests, r.Digest(keys))
	}
	if digests[0] != digests[1] {
		t.Errorf("digests %v after reconciling", digests)
	}
}

// swapHead puts the second of service k's destinations first.
func swapHead(tb ipvs.Table, k ipvs.ServiceKey) {
	ds := tb[k].OrderedDests()
	ds[0], ds[1] = ds[1], ds[0]
	tb.Add(tb[k].Service).AddDests(ds)
}
