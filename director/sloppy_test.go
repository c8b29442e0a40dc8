package director

import (
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestSloppyStep: every case of a sloppy setting, announced or not, as
// found, held by directord or not.
func TestSloppyStep(t *testing.T) {
	own := sloppyHeld{Own: true, Orig: "0"}
	for _, c := range []struct {
		name      string
		announced bool
		cur       string
		held      sloppyHeld
		want      sloppyAction
	}{
		{"announced, found 0: set, owned", true, "0", sloppyHeld{}, sloppyAction{Write: "1", Held: own}},
		{"announced, the operator's 1: left theirs", true, "1", sloppyHeld{}, sloppyAction{}},
		{"announced, ours at 1: nothing", true, "1", own, sloppyAction{Held: own}},
		{"announced, ours set back to 0: set again, a conflict", true, "0", own, sloppyAction{Write: "1", Conflict: true, Held: own}},
		{"announced, ours set to 2 by someone: set again, the first value kept", true, "2", own, sloppyAction{Write: "1", Conflict: true, Held: own}},
		{"no longer announced, ours: put back", false, "1", own, sloppyAction{Write: "0"}},
		{"no longer announced, ours found 2: the value stands", false, "2", sloppyHeld{Own: true, Orig: "0"}, sloppyAction{}},
		{"not announced, the operator's 1: left", false, "1", sloppyHeld{}, sloppyAction{}},
		{"not announced, 0: nothing", false, "0", sloppyHeld{}, sloppyAction{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := sloppyStep(c.announced, c.cur, c.held); got != c.want {
				t.Errorf("sloppyStep(%v, %q, %+v) = %+v, want %+v", c.announced, c.cur, c.held, got, c.want)
			}
		})
	}
}

const announcedConf = `
global_defs {
    bgp {
        local_as 65010
        router_id 10.0.1.2
        neighbor 10.0.1.1 {
            remote_as 65000
        }
    }
}
virtual_server 192.0.2.1 80 {
    lvs_sched mh
    mh-fallback
    lb_kind DR
    protocol TCP
    announce bgp
    real_server 10.0.0.1 80 {
    }
}
`

// TestLVSSloppyWhileAnnounced: sloppy_tcp and sloppy_sctp are 1 from the
// first sync of a configuration that announces by BGP; set back behind
// directord's back, the resync sets them again with a warning; a reload
// that announces nothing puts the kernel's value back, as does the stop.
func TestLVSSloppyWhileAnnounced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := newFakeKernel()
		logs := &records{}
		l, err := NewLVS(parse(t, announcedConf), k, slog.New(logs))
		if err != nil {
			t.Fatal(err)
		}
		ctx, stop := running(t, l)
		synctest.Wait()
		values := func() string {
			tcp, _ := k.Sysctl("sloppy_tcp")
			sctp, _ := k.Sysctl("sloppy_sctp")
			return tcp + sctp
		}
		if got := values(); got != "11" {
			t.Errorf("announced: sloppy_tcp, sloppy_sctp %s, want 1 1", got)
		}
		if err := k.SetSysctl("sloppy_tcp", "0"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(l.Resync)
		synctest.Wait()
		if got := values(); got != "11" {
			t.Errorf("after the resync: %s, want 1 1", got)
		}
		warned := false
		logs.mu.Lock()
		for _, r := range logs.rs {
			warned = warned || r.Level == slog.LevelWarn && strings.Contains(r.Message, "sloppy_tcp was set back to 0")
		}
		logs.mu.Unlock()
		if !warned {
			t.Error("no warning for sloppy_tcp set back")
		}
		plain := strings.Replace(announcedConf, "    announce bgp\n", "", 1)
		if _, err := l.Reload(ctx, parse(t, plain), nil); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := values(); got != "00" {
			t.Errorf("after a reload without announce: %s, want 0 0", got)
		}
		if _, err := l.Reload(ctx, parse(t, announcedConf), nil); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := values(); got != "11" {
			t.Errorf("announced again: %s, want 1 1", got)
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if got := values(); got != "00" {
			t.Errorf("after stop: %s, want 0 0", got)
		}
	})
}
