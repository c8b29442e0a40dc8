package director

import (
	"net/netip"
	"reflect"
	"testing"

	"github.com/directord/directord/ipvs"
	"github.com/directord/directord/vrrp"
)

// fakeSync is the kernel's pair of sync daemons, filling in its defaults
// as the kernel does.
type fakeSync struct {
	running map[ipvs.SyncState]ipvs.SyncDaemon
	log     []string
}

func (f *fakeSync) SyncDaemons() ([]ipvs.SyncDaemon, error) {
	var out []ipvs.SyncDaemon
	for _, st := range []ipvs.SyncState{ipvs.SyncMaster, ipvs.SyncBackup} {
		if d, ok := f.running[st]; ok {
			out = append(out, d)
		}
	}
	return out, nil
}

func (f *fakeSync) StartSyncDaemon(d ipvs.SyncDaemon) error {
	if d.MaxLen == 0 {
		d.MaxLen = 1472
	}
	if !d.Group.IsValid() {
		d.Group = defaultSyncGroup
	}
	if d.Port == 0 {
		d.Port = defaultSyncPort
	}
	if d.TTL == 0 {
		d.TTL = 1
	}
	f.running[d.State] = d
	f.log = append(f.log, "start "+d.String())
	return nil
}

func (f *fakeSync) StopSyncDaemon(st ipvs.SyncState) error {
	delete(f.running, st)
	f.log = append(f.log, "stop "+st.String())
	return nil
}

func TestSyncDaemonsFollowVRRP(t *testing.T) {
	cfg := parse(t, `
global_defs {
    lvs_sync_daemon eth1 VI_1 id 7
}
vrrp_instance VI_1 {
    interface eth0
    virtual_router_id 51
    virtual_ipaddress {
        192.0.2.1
    }
}
`)
	k := &fakeSync{running: map[ipvs.SyncState]ipvs.SyncDaemon{}}
	s := NewSyncDaemons(k, cfg.Global.SyncDaemon, nil)
	if s.Instance() != "VI_1" {
		t.Fatalf("instance %q", s.Instance())
	}
	steps := []struct {
		do   func() error
		want []string
	}{
		{s.Apply, []string{"start backup sync daemon on eth1 syncid 7"}},
		{s.Apply, nil}, // nothing changes what is right
		{func() error { return s.SetState(vrrp.Master) }, []string{
			"stop backup", "start master sync daemon on eth1 syncid 7"}},
		{func() error { return s.SetState(vrrp.Master) }, nil},
		{func() error { return s.Reload(cfg.Global.SyncDaemon) }, nil}, // a reload that changes nothing
		{func() error { return s.SetState(vrrp.Fault) }, []string{
			"stop master", "start backup sync daemon on eth1 syncid 7"}},
		{func() error {
			c := *cfg.Global.SyncDaemon
			c.SyncID = 8
			return s.Reload(&c)
		}, []string{"stop backup", "start backup sync daemon on eth1 syncid 8"}},
		{s.Stop, []string{"stop backup"}},
	}
	for i, st := range steps {
		k.log = nil
		if err := st.do(); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(k.log, st.want) {
			t.Errorf("step %d:\n got %q\nwant %q", i, k.log, st.want)
		}
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
	k := &fakeSync{running: map[ipvs.SyncState]ipvs.SyncDaemon{}}
	s := NewSyncDaemons(k, cfg.Global.SyncDaemon, nil)
	for range 2 {
		k.log = nil
		if err := s.SetState(vrrp.Master); err != nil {
			t.Fatal(err)
		}
	}
	if len(k.log) != 0 || len(k.running) != 2 {
		t.Errorf("second apply: %q, running %d", k.log, len(k.running))
	}
	// A daemon someone started differently is restarted as configured.
	k.running[ipvs.SyncBackup] = ipvs.SyncDaemon{State: ipvs.SyncBackup, Interface: "eth9", SyncID: 3}
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
	k := &fakeSync{running: map[ipvs.SyncState]ipvs.SyncDaemon{ipvs.SyncMaster: foreign}}
	s := NewSyncDaemons(k, nil, nil) // no lvs_sync_daemon
	for _, f := range []func() error{s.Apply, func() error { return s.SetState(vrrp.Master) }, s.Stop} {
		if err := f(); err != nil {
			t.Fatal(err)
		}
	}
	if len(k.log) != 0 || k.running[ipvs.SyncMaster] != foreign {
		t.Errorf("touched a daemon started by someone else: %q", k.log)
	}
	// A reload that takes lvs_sync_daemon away stops what directord
	// started, and only that.
	cfg := parse(t, "global_defs {\n lvs_sync_daemon eth1\n}\n").Global.SyncDaemon
	k = &fakeSync{running: map[ipvs.SyncState]ipvs.SyncDaemon{}}
	s = NewSyncDaemons(k, cfg, nil)
	if err := s.Apply(); err != nil {
		t.Fatal(err)
	}
	k.log = nil
	if err := s.Reload(nil); err != nil {
		t.Fatal(err)
	}
	if want := []string{"stop master", "stop backup"}; !reflect.DeepEqual(k.log, want) || len(k.running) != 0 {
		t.Errorf("reload to none: %q, want %q", k.log, want)
	}
}
