package director

import (
	"context"
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/directord/directord/config"
	"github.com/directord/directord/ipvs"
	"github.com/directord/directord/vrrp"
)

// running runs l until the returned stop, which waits for Run's end and
// returns its error; it returns once l has programmed the kernel.
func running(t *testing.T, l *LVS) (context.Context, func() error) {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	<-l.synced
	return ctx, func() error { cancel(); return <-done }
}

// TestLVSReload: ten reloads of the same file (written on other lines)
// send the kernel nothing and run no quorum script; a changed real server
// set applies its difference alone; verdicts of the old checks are
// dropped; the health state handed over is kept.
func TestLVSReload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := newFakeKernel()
		conf := lvsConf + `
virtual_server 192.0.2.1 443 {
    lb_algo wrr
    lb_kind DR
    protocol TCP
    quorum 1
    quorum_up /bin/true
    real_server 10.0.0.1 443 {
    }
    real_server 10.0.0.3 443 {
    }
}
`
		l := newLVS(t, parse(t, conf), k)
		var scripts []string
		l.Notify = func(s *config.Script) { scripts = append(scripts, s.Command) }
		ctx, stop := running(t, l)
		before := k.lines()
		applies := k.Calls("Apply")
		if len(scripts) != 1 {
			t.Fatalf("scripts at start %q, want quorum_up once", scripts)
		}
		// 10.0.0.2 is down when the reloads come: the checks hand that over.
		l.Report(ctx, 0, 1, RealState{Alive: false, Weight: 2})
		synctest.Wait()
		down := k.lines()
		for i := range 10 {
			gen, err := l.Reload(ctx, parse(t, strings.Repeat("\n", i)+conf), []Seed{{Pool: 0, Real: 1, State: RealState{Alive: false, Weight: 2}}})
			if err != nil || gen != i+1 {
				t.Fatalf("reload %d: generation %d, %v", i, gen, err)
			}
			synctest.Wait()
		}
		ops := k.Calls("Apply") - applies
		if got := k.lines(); !reflect.DeepEqual(got, down) || ops != 1 {
			t.Errorf("after 10 reloads of the same file: %q in %d applies, want %q in 1 (the verdict's)", got, ops, down)
		}
		if len(scripts) != 1 {
			t.Errorf("scripts %q: a reload must not run quorum scripts again", scripts)
		}
		// A verdict of the old checks (generation 0) is dropped.
		l.Report(ctx, 0, 1, RealState{Alive: true, Weight: 2})
		synctest.Wait()
		if got := k.lines(); !reflect.DeepEqual(got, down) {
			t.Errorf("an old generation's verdict changed the table: %q", got)
		}
		// One real server more, one fewer: only those two operations.
		changed := strings.Replace(conf, "real_server 10.0.0.3 443 {", "real_server 10.0.0.4 443 {", 1)
		gen, err := l.Reload(ctx, parse(t, changed), []Seed{{Pool: 0, Real: 1, State: RealState{Alive: true, Weight: 2}}})
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		want := strings.Join(before, "\n")
		want = strings.Replace(want, "10.0.0.3:443", "10.0.0.4:443", 1)
		if got := strings.Join(k.lines(), "\n"); got != want {
			t.Errorf("after the change:\n%s\nwant\n%s", got, want)
		}
		l.ReportGen(ctx, gen, 0, 0, RealState{Alive: false, Weight: 1})
		synctest.Wait()
		if got := strings.Join(k.lines(), "\n"); strings.Contains(got, "-a TCP 192.0.2.1:80 10.0.0.1:80") {
			t.Errorf("the new generation's verdict was not taken:\n%s", got)
		}
		stop()
	})
}

// TestLVSDrain: a drained real server goes to weight 0 in every virtual
// server that has it, stays there across a reload, and gets its weight
// back when undrained; an unknown one is refused.
func TestLVSDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := newFakeKernel()
		cfg := parse(t, lvsConf)
		l := newLVS(t, cfg, k)
		ctx, stop := running(t, l)
		rs := netip.MustParseAddrPort("10.0.0.2:80")
		if err := l.Drain(ctx, rs, true); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		drained := []string{"-A TCP 192.0.2.1:80 rr", "-a TCP 192.0.2.1:80 10.0.0.1:80 route 1", "-a TCP 192.0.2.1:80 10.0.0.2:80 route 0"}
		if got := k.lines(); !reflect.DeepEqual(got, drained) {
			t.Errorf("drained: %q, want %q", got, drained)
		}
		if _, err := l.Reload(ctx, parse(t, "\n"+lvsConf), nil); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := k.lines(); !reflect.DeepEqual(got, drained) {
			t.Errorf("after a reload: %q, want it still drained %q", got, drained)
		}
		st, list, err := l.Status(ctx)
		if err != nil || len(list) != 1 || list[0] != rs || !st[0].Reals[1].Drained || st[0].Reals[1].Effective != 0 || st[0].Reals[0].Effective != 1 {
			t.Errorf("status %+v %v %v", st, list, err)
		}
		if err := l.Drain(ctx, netip.MustParseAddrPort("10.9.9.9:80"), true); !errors.Is(err, ErrUnknownReal) {
			t.Errorf("drain of an unknown real server: %v", err)
		}
		if err := l.Drain(ctx, rs, false); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		want := []string{"-A TCP 192.0.2.1:80 rr", "-a TCP 192.0.2.1:80 10.0.0.1:80 route 1", "-a TCP 192.0.2.1:80 10.0.0.2:80 route 2"}
		if got := k.lines(); !reflect.DeepEqual(got, want) {
			t.Errorf("undrained: %q, want %q", got, want)
		}
		stop()
		if err := l.Drain(t.Context(), rs, true); err == nil {
			t.Error("a drain after stop was taken")
		}
	})
}

// TestLVSReloadMovesSyncDaemon: a reload that makes lvs_sync_daemon follow
// another instance, master while the first is backup, runs the master
// daemon at once, without waiting for that instance's next transition.
func TestLVSReloadMovesSyncDaemon(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := newFakeKernel()
		second := `
vrrp_instance VI_2 {
    interface eth0
    virtual_router_id 52
    virtual_ipaddress {
        192.0.2.2
    }
}
`
		l := newLVS(t, parse(t, lvsConf+second), k)
		ctx, stop := running(t, l)
		l.Observe(vrrp.Event{Instance: "VI_2", From: vrrp.Backup, To: vrrp.Master})
		synctest.Wait()
		if _, ok := k.snapshot()[ipvs.SyncBackup]; !ok || len(k.snapshot()) != 1 {
			t.Fatalf("following VI_1 (backup): %v", k.snapshot())
		}
		moved := strings.Replace(lvsConf, "lvs_sync_daemon eth1 VI_1", "lvs_sync_daemon eth1 VI_2", 1) + second
		if _, err := l.Reload(ctx, parse(t, moved), nil); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if _, ok := k.snapshot()[ipvs.SyncMaster]; !ok || len(k.snapshot()) != 1 {
			t.Errorf("following VI_2 (master): %v, want the master daemon alone", k.snapshot())
		}
		stop()
	})
}
