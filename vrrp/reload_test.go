package vrrp

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/directord/directord/config"
)

func planConf(t *testing.T, text string) *config.Config {
	t.Helper()
	cfg, diags := config.Parse("/k.conf", text, nil, config.Options{Hostname: "h"})
	if diags.HasErrors() {
		t.Fatalf("config: %s", diags.Errors())
	}
	return cfg
}

// inst is a vrrp_instance for the plan tests; extra goes inside it.
func inst(name, iface string, vrid, prio int, extra string) string {
	return "vrrp_instance " + name + " {\n interface " + iface + "\n virtual_router_id " + itoa(vrid) +
		"\n priority " + itoa(prio) + "\n " + extra + "\n virtual_ipaddress {\n 192.0.2." + itoa(vrid) + "/24\n }\n}\n"
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestPlanReload(t *testing.T) {
	a := inst("VI_1", "eth0", 51, 150, "")
	b := inst("VI_2", "eth0", 52, 100, "")
	tests := []struct {
		name     string
		old, new string
		want     []string // change old>new [what]
	}{
		{"nothing changed", a + b, a + b, []string{"kept VI_1>VI_1 []", "kept VI_2>VI_2 []"}},
		{"router_id and lines moved", a + b, "global_defs {\n router_id other\n}\n\n\n" + b + a,
			[]string{"kept VI_2>VI_2 []", "kept VI_1>VI_1 []"}},
		{"priority in place", a + b, inst("VI_1", "eth0", 51, 90, "") + b,
			[]string{"changed VI_1>VI_1 [priority]", "kept VI_2>VI_2 []"}},
		{"notify script", a, inst("VI_1", "eth0", 51, 150, "notify_master /bin/true"),
			[]string{"changed VI_1>VI_1 [notify]"}},
		{"renamed: the same virtual router", a, inst("WEB", "eth0", 51, 150, ""),
			[]string{"kept VI_1>WEB []"}},
		{"VRID changed: another virtual router", a, inst("VI_1", "eth0", 61, 150, ""),
			[]string{"added >VI_1 []", "removed VI_1> []"}},
		{"interface changed", a, inst("VI_1", "eth1", 51, 150, ""),
			[]string{"added >VI_1 []", "removed VI_1> []"}},
		{"multicast to unicast", a, inst("VI_1", "eth0", 51, 150, "unicast_peer {\n 192.0.2.9\n }"),
			[]string{"added >VI_1 []", "removed VI_1> []"}},
		{"unicast source changed", inst("VI_1", "eth0", 51, 150, "unicast_src_ip 192.0.2.1\n unicast_peer {\n 192.0.2.9\n }"),
			inst("VI_1", "eth0", 51, 150, "unicast_src_ip 192.0.2.2\n unicast_peer {\n 192.0.2.9\n }"),
			[]string{"added >VI_1 []", "removed VI_1> []"}},
		{"unicast peers changed in place", inst("VI_1", "eth0", 51, 150, "unicast_src_ip 192.0.2.1\n unicast_peer {\n 192.0.2.9\n }"),
			inst("VI_1", "eth0", 51, 150, "unicast_src_ip 192.0.2.1\n unicast_peer {\n 192.0.2.8\n }"),
			[]string{"changed VI_1>VI_1 [unicast_peer]"}},
		{"multicast group changed: another virtual router", a, inst("VI_1", "eth0", 51, 150, "mcast_dst_ip 224.0.0.19"),
			[]string{"added >VI_1 []", "removed VI_1> []"}},
		{"global multicast group changed", a, "global_defs {\n vrrp_mcast_group4 224.0.0.19\n}\n" + a,
			[]string{"added >VI_1 []", "removed VI_1> []"}},
		{"the default group written out", a, inst("VI_1", "eth0", 51, 150, "mcast_dst_ip 224.0.0.18"),
			[]string{"changed VI_1>VI_1 [mcast_dst_ip]"}},
		{"instance removed", a + b, a, []string{"kept VI_1>VI_1 []", "removed VI_2> []"}},
		{"instance added", a, a + b, []string{"kept VI_1>VI_1 []", "added >VI_2 []"}},
		{"tracked script's definition", "vrrp_script chk {\n script /bin/true\n}\n" + inst("VI_1", "eth0", 51, 150, "track_script {\n chk\n }"),
			"vrrp_script chk {\n script /bin/false\n}\n" + inst("VI_1", "eth0", 51, 150, "track_script {\n chk\n }"),
			[]string{"changed VI_1>VI_1 [track_script]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, p := range PlanReload(planConf(t, tt.old), planConf(t, tt.new)) {
				got = append(got, p.Change.String()+" "+p.Old+">"+p.New+" ["+strings.Join(p.What, " ")+"]")
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestResume: a machine resumed at a reload goes on in its old state with
// no transition; a master sends an advert at once and announces only when
// the reload added addresses; it hands over when it hears a higher
// priority; an instance now in fault gives its addresses up.
func TestResume(t *testing.T) {
	master := Carry{State: Master}
	t.Run("master", func(t *testing.T) {
		s := newSim(t, v3params(100, time.Second))
		s.m.Resume(s.t0, master, false)
		s.until(2500 * time.Millisecond)
		s.want("0s advert 100", "1s advert 100", "2s advert 100")
	})
	t.Run("master with added addresses", func(t *testing.T) {
		s := newSim(t, v3params(100, time.Second))
		s.m.Resume(s.t0, master, true)
		s.want("0s advert 100", "0s garp 5")
	})
	t.Run("master lowered hands over to a higher peer", func(t *testing.T) {
		s := newSim(t, v3params(200, time.Second))
		s.m.SetPriority(90)
		s.m.Resume(s.t0, master, false)
		s.advert(500*time.Millisecond, 150, "192.0.2.2", 100)
		s.want("0s advert 90", "500ms MASTER->BACKUP")
	})
	t.Run("master still highest stays", func(t *testing.T) {
		s := newSim(t, v3params(200, time.Second))
		s.m.SetPriority(180)
		s.m.Resume(s.t0, master, false)
		s.advert(500*time.Millisecond, 150, "192.0.2.2", 100)
		s.until(1600 * time.Millisecond)
		s.want("0s advert 180", "500ms advert 180", "1.5s advert 180")
	})
	t.Run("backup restarts its down timer", func(t *testing.T) {
		s := newSim(t, v3params(100, time.Second))
		s.m.Resume(s.t0, Carry{State: Backup, MasterAddr: netip.MustParseAddr("192.0.2.2"), MasterAdverInt: time.Second}, false)
		s.until(3 * time.Second)
		s.want()
		s.until(4 * time.Second)
		s.want("3.609375s advert 100", "3.609375s BACKUP->MASTER", "3.609375s garp 5")
	})
	t.Run("master now in fault", func(t *testing.T) {
		s := newSim(t, v3params(100, time.Second))
		s.m.SetFault(s.t0, true)
		s.m.Resume(s.t0, master, false)
		s.want("0s advert 100", "0s advert 0", "0s MASTER->FAULT")
	})
	t.Run("fault stays fault silently", func(t *testing.T) {
		s := newSim(t, v3params(100, time.Second))
		s.m.SetFault(s.t0, true)
		s.m.Resume(s.t0, Carry{State: Fault}, false)
		s.want()
		if s.m.State() != Fault {
			t.Errorf("state %v", s.m.State())
		}
	})
}

// TestStartupDelay: with vrrp_startup_delay no instance becomes master
// before the delay ends: a backup's down timer runs from its end (adverts
// heard meanwhile restart it from there too), and the address owner
// becomes master at its end, as keepalived's vrrp_delayed_start_time.
func TestStartupDelay(t *testing.T) {
	t.Run("backup", func(t *testing.T) {
		s := newSim(t, v2params(100))
		s.m.DelayStart(s.t0.Add(5 * time.Second))
		s.start()
		s.until(9 * time.Second)
		s.want("0s INIT->BACKUP", "8.609375s advert 100", "8.609375s BACKUP->MASTER", "8.609375s garp 5")
	})
	t.Run("backup hearing a master during the delay", func(t *testing.T) {
		s := newSim(t, v2params(100))
		s.m.DelayStart(s.t0.Add(5 * time.Second))
		s.start()
		s.advert(2*time.Second, 200, "192.0.2.2", 1) // then silent
		s.until(8 * time.Second)
		s.want("0s INIT->BACKUP")
		s.until(9 * time.Second)
		s.want("8.609375s advert 100", "8.609375s BACKUP->MASTER", "8.609375s garp 5")
	})
	t.Run("owner", func(t *testing.T) {
		s := newSim(t, v2params(255))
		s.m.DelayStart(s.t0.Add(5 * time.Second))
		s.start()
		s.until(5500 * time.Millisecond)
		s.want("0s INIT->BACKUP", "5s advert 255", "5s BACKUP->MASTER", "5s garp 5")
	})
	t.Run("no delay", func(t *testing.T) {
		s := newSim(t, v2params(255))
		s.start()
		s.want("0s advert 255", "0s INIT->MASTER", "0s garp 5")
	})
}

// TestInitialState: the address owner in state MASTER becomes master at
// once; in state BACKUP it waits Master_Down_Interval like any backup
// (keepalived.conf(5): "If the priority is 255, then the instance will
// transition immediately to MASTER if state MASTER is specified;
// otherwise the instance will wait"). Below 255, state MASTER changes
// nothing.
func TestInitialState(t *testing.T) {
	owner := v2params(255)
	s := newSim(t, owner)
	s.start()
	s.want("0s advert 255", "0s INIT->MASTER", "0s garp 5")

	owner.InitMaster = false
	s = newSim(t, owner)
	s.start()
	s.until(4 * time.Second)
	s.want("0s INIT->BACKUP", "3.00390625s advert 255", "3.00390625s BACKUP->MASTER", "3.00390625s garp 5")

	p := v2params(100)
	p.InitMaster = true
	s = newSim(t, p)
	s.start()
	s.until(4 * time.Second)
	s.want("0s INIT->BACKUP", "3.609375s advert 100", "3.609375s BACKUP->MASTER", "3.609375s garp 5")
}
