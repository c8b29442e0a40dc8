package director

import (
	"net/netip"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/directord/directord/internal/ipvstest"
	"github.com/directord/directord/ipvs"
	"github.com/directord/directord/vrrp"
)

// fakeSync is the fake kernel, with a log of the sync daemon calls.
type fakeSync struct {
	*ipvstest.Kernel
	smu sync.Mutex
	log []string
}

func newFakeSync() *fakeSync { return &fakeSync{Kernel: &ipvstest.Kernel{}} }

// snapshot is the running daemons by role.
func (f *fakeSync) snapshot() map[ipvs.SyncState]ipvs.SyncDaemon {
	ds, _ := f.Kernel.SyncDaemons()
	m := map[ipvs.SyncState]ipvs.SyncDaemon{}
	for _, d := range ds {
		m[d.State] = d
	}
	return m
}

func (f *fakeSync) StartSyncDaemon(d ipvs.SyncDaemon) error {
	f.smu.Lock()
	f.log = append(f.log, "start "+d.String())
	f.smu.Unlock()
	return f.Kernel.StartSyncDaemon(d)
}

func (f *fakeSync) StopSyncDaemon(st ipvs.SyncState) error {
	f.smu.Lock()
	f.log = append(f.log, "stop "+st.String())
	f.smu.Unlock()
	return f.Kernel.StopSyncDaemon(st)
}

// syncVI1 is the VRRP instance the sync daemons of these tests follow.
const syncVI1 = `
vrrp_instance VI_1 {
    interface eth0
    virtual_router_id 51
    virtual_ipaddress {
        192.0.2.1
    }
}
`

func TestSyncDaemonsFollowVRRP(t *testing.T) {
	cfg := parse(t, "global_defs {\n    lvs_sync_daemon eth1 VI_1 id 7\n}\n"+syncVI1)
	k := newFakeSync()
	s := NewSyncDaemons(k, cfg.Global.SyncDaemon, nil)
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	s.now = func() time.Time { return now }
	if s.Instance() != "VI_1" {
		t.Fatalf("instance %q", s.Instance())
	}
	later := func(d time.Duration) func() error {
		return func() error { now = now.Add(d); return s.Apply() }
	}
	steps := []struct {
		do   func() error
		want []string
		next time.Duration // Next, from now; 0 for none
	}{
		{s.Apply, []string{"start backup sync daemon on eth1 syncid 7"}, 0},
		{s.Apply, nil, 0}, // nothing changes what is right
		// Master: the backup daemon goes SyncFlush later, so that it hears
		// the old master's last connections.
		{func() error { return s.SetState(vrrp.Master) }, []string{
			"start master sync daemon on eth1 syncid 7"}, SyncFlush},
		{func() error { return s.SetState(vrrp.Master) }, nil, SyncFlush},
		{later(SyncFlush - time.Millisecond), nil, time.Millisecond},
		{later(time.Millisecond), []string{"stop backup"}, 0},
		{func() error { return s.Reload(cfg.Global.SyncDaemon) }, nil, 0}, // a reload that changes nothing
		// Out of master: the master daemon sends what it gathered.
		{func() error { return s.SetState(vrrp.Fault) }, []string{
			"start backup sync daemon on eth1 syncid 7"}, SyncFlush},
		{later(time.Second), nil, SyncFlush - time.Second},
		// Back to master within it: the master daemon goes on, the backup
		// daemon lingers in turn.
		{func() error { return s.SetState(vrrp.Master) }, nil, SyncFlush},
		{func() error { return s.SetState(vrrp.Backup) }, nil, SyncFlush},
		// A reload that changes the daemons ends what lingers: a daemon
		// started anew has nothing to send.
		{func() error {
			c := *cfg.Global.SyncDaemon
			c.SyncID = 8
			return s.Reload(&c)
		}, []string{"stop master", "stop backup", "start backup sync daemon on eth1 syncid 8"}, 0},
		{s.Stop, []string{"stop backup"}, 0},
	}
	for i, st := range steps {
		k.log = nil
		if err := st.do(); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(k.log, st.want) {
			t.Errorf("step %d:\n got %q\nwant %q", i, k.log, st.want)
		}
		var next time.Duration
		if n := s.Next(); !n.IsZero() {
			next = n.Sub(now)
		}
		if next != st.next {
			t.Errorf("step %d: next in %v, want %v", i, next, st.next)
		}
	}
}

// TestSyncDaemonsFlushWait: a stop waits for the master daemon's last
// connections only on a master or one that was within SyncFlush.
func TestSyncDaemonsFlushWait(t *testing.T) {
	cfg := parse(t, "global_defs {\n    lvs_sync_daemon eth1 VI_1\n}\n"+syncVI1)
	k := newFakeSync()
	s := NewSyncDaemons(k, cfg.Global.SyncDaemon, nil)
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	s.now = func() time.Time { return now }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.Apply())
	if w := s.FlushWait(); w != 0 {
		t.Errorf("backup: wait %v", w)
	}
	must(s.SetState(vrrp.Master))
	if w := s.FlushWait(); w != SyncFlush {
		t.Errorf("master: wait %v", w)
	}
	must(s.SetState(vrrp.Backup))
	now = now.Add(time.Second)
	if w := s.FlushWait(); w != SyncFlush-time.Second {
		t.Errorf("a second after master: wait %v", w)
	}
	now = now.Add(SyncFlush)
	must(s.Apply())
	if w := s.FlushWait(); w != 0 || len(k.snapshot()) != 1 {
		t.Errorf("long after master: wait %v, running %v", w, k.snapshot())
	}
	// Without an instance the daemons run all along: no transition to
	// wait for.
	cfg.Global.SyncDaemon.Instance = ""
	s = NewSyncDaemons(newFakeSync(), cfg.Global.SyncDaemon, nil)
	must(s.SetState(vrrp.Master))
	if w := s.FlushWait(); w != 0 {
		t.Errorf("no instance: wait %v", w)
	}
}

func TestSyncDaemonsWithoutInstanceRunBoth(t *testing.T) {
	cfg := parse(t, `
global_defs {
    lvs_sync_daemon eth1 id 3 group 239.0.0.9 port 9000 ttl 4 maxlen 1200
}
`)
	got := WantedSyncDaemons(cfg.Global.SyncDaemon, vrrp.Backup)
	d := ipvs.SyncDaemon{Interface: "eth1", SyncID: 3, Group: netip.MustParseAddr("239.0.0.9"), Port: 9000, TTL: 4, MaxLen: 1200}
	m, b := d, d
	m.State, b.State = ipvs.SyncMaster, ipvs.SyncBackup
	if want := []ipvs.SyncDaemon{m, b}; !reflect.DeepEqual(got, want) {
		t.Errorf("\n got %+v\nwant %+v", got, want)
	}
	k := newFakeSync()
	s := NewSyncDaemons(k, cfg.Global.SyncDaemon, nil)
	for range 2 {
		k.log = nil
		if err := s.SetState(vrrp.Master); err != nil {
			t.Fatal(err)
		}
	}
	if len(k.log) != 0 || len(k.snapshot()) != 2 {
		t.Errorf("second apply: %q, running %d", k.log, len(k.snapshot()))
	}
	// A daemon someone started differently is restarted as configured.
	if err := k.Kernel.StopSyncDaemon(ipvs.SyncBackup); err != nil {
		t.Fatal(err)
	}
	if err := k.Kernel.StartSyncDaemon(ipvs.SyncDaemon{State: ipvs.SyncBackup, Interface: "eth9", SyncID: 3}); err != nil {
		t.Fatal(err)
	}
	k.log = nil
	if err := s.Apply(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"stop backup", "start backup sync daemon on eth1 syncid 3"}; !reflect.DeepEqual(k.log, want) {
		t.Errorf("got %q, want %q", k.log, want)
	}
}

func TestSyncDaemonsLeaveOthersAlone(t *testing.T) {
	foreign := ipvs.SyncDaemon{State: ipvs.SyncMaster, Interface: "eth9", SyncID: 9}
	k := newFakeSync()
	if err := k.Kernel.StartSyncDaemon(foreign); err != nil {
		t.Fatal(err)
	}
	before := k.snapshot()
	s := NewSyncDaemons(k, nil, nil) // no lvs_sync_daemon
	for _, f := range []func() error{s.Apply, func() error { return s.SetState(vrrp.Master) }, s.Stop} {
		if err := f(); err != nil {
			t.Fatal(err)
		}
	}
	if len(k.log) != 0 || !reflect.DeepEqual(k.snapshot(), before) {
		t.Errorf("touched a daemon started by someone else: %q", k.log)
	}
	// A reload that takes lvs_sync_daemon away stops what directord
	// started, and only that.
	cfg := parse(t, "global_defs {\n lvs_sync_daemon eth1\n}\n").Global.SyncDaemon
	k = newFakeSync()
	s = NewSyncDaemons(k, cfg, nil)
	if err := s.Apply(); err != nil {
		t.Fatal(err)
	}
	k.log = nil
	if err := s.Reload(nil); err != nil {
		t.Fatal(err)
	}
	if want := []string{"stop master", "stop backup"}; !reflect.DeepEqual(k.log, want) || len(k.snapshot()) != 0 {
		t.Errorf("reload to none: %q, want %q", k.log, want)
	}
}
