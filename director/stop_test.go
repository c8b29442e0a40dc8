package director

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/directord/directord/config"
	"github.com/directord/directord/internal/ipvstest"
	"github.com/directord/directord/ipvs"
)

const omegaConf = `
virtual_server 192.0.2.1 80 {
    lb_algo rr
    lb_kind DR
    protocol TCP
    %s
    quorum_down /bin/qdown
    real_server 10.0.0.1 80 {
        notify_down /bin/down1
        TCP_CHECK { }
    }
    real_server 10.0.0.2 80 {
        notify_down /bin/down2
        TCP_CHECK { }
    }
    real_server 10.0.0.3 80 {
        notify_down /bin/down3
        inhibit_on_failure
        TCP_CHECK { }
    }
}
`

// TestLVSStopAsKeepalived: keepalived's clear_services at shutdown runs,
// with omega, notify_down of each alive real server in the table once
// the real servers have left the kernel, then quorum_down, then deletes
// the service; lvs_flush_on_stop VS tells the quorum and then deletes
// whole services, so only quorum_down, with the service still whole;
// lvs_flush_on_stop flushes the table first; without omega no script;
// with -I (DONT_RELEASE_IPVS) nothing at all. Real server 2 is down and
// 3 kept at weight 0 (inhibit_on_failure): neither is alive, neither is
// told. Each script is shown with what the kernel holds when it runs;
// the FIFO's lines follow the scripts (do_rs_notifies, do_vs_notifies).
func TestLVSStopAsKeepalived(t *testing.T) {
	for _, tt := range []struct {
		name, vsLine, global string
		keep                 bool
		reads                int32    // of the kernel's table, once at most
		want, fifo           []string // the scripts, the FIFO's lines
	}{
		{"omega", "omega", "", false, 1, []string{"/bin/down1 (1 services, 0 destinations)", "/bin/qdown (1 services, 0 destinations)"}, []string{"RS [10.0.0.1]:tcp:80 [192.0.2.1]:tcp:80 DOWN", "VS [192.0.2.1]:tcp:80 DOWN"}},
		{"omega with lvs_flush_on_stop", "omega", "lvs_flush_on_stop", false, 0, []string{"/bin/qdown (0 services, 0 destinations)"}, []string{"VS [192.0.2.1]:tcp:80 DOWN"}},
		{"omega with lvs_flush_on_stop VS", "omega", "lvs_flush_on_stop VS", false, 1, []string{"/bin/qdown (1 services, 2 destinations)"}, []string{"VS [192.0.2.1]:tcp:80 DOWN"}},
		{"omega with -I", "omega", "", true, 0, nil, nil},
		{"without omega", "", "", false, 1, nil, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := parse(t, "global_defs {\n "+tt.global+"\n}\n"+fmt.Sprintf(omegaConf, tt.vsLine))
				k := newFakeKernel()
				l := newLVS(t, cfg, k)
				l.KeepOnStop = tt.keep
				var ran []string
				l.Notify = func(s *config.Script) { ran = append(ran, s.Command+" "+k.holds()) }
				ctx, stop := running(t, l)
				l.Report(ctx, 0, 1, RealState{Alive: false, Weight: 1})
				l.Report(ctx, 0, 2, RealState{Alive: false, Weight: 1})
				synctest.Wait()
				var fifo []string
				l.FIFO = func(line string) { fifo = append(fifo, strings.TrimSpace(line)) }
				ran = nil // the verdicts' own notify_down
				reads := k.reads.Load()
				if err := stop(); err != nil {
					t.Fatal(err)
				}
				if n := k.reads.Load() - reads; n != tt.reads {
					t.Errorf("the stop read the kernel's table %d times, want %d", n, tt.reads)
				}
				if !reflect.DeepEqual(ran, tt.want) {
					t.Errorf("scripts at stop %q, want %q", ran, tt.want)
				}
				if !reflect.DeepEqual(fifo, tt.fifo) {
					t.Errorf("FIFO lines at stop %q, want %q", fifo, tt.fifo)
				}
			})
		})
	}
}

// TestLVSTimeoutsRestored: keepalived restores the kernel's own
// connection timeouts when a reload drops lvs_timeouts and at stop (its
// ipvs_stop, with -I too); a field the file does not set keeps the
// kernel's original.
func TestLVSTimeoutsRestored(t *testing.T) {
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprint("keep=", keep), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				conf := func(g string) *config.Config {
					return parse(t, "global_defs {\n "+g+"\n}\n"+fmt.Sprintf(omegaConf, ""))
				}
				k := newFakeKernel()
				l := newLVS(t, conf("lvs_timeouts tcp 1000 udp 60"), k)
				l.KeepOnStop = keep
				ctx, stop := running(t, l)
				now := func() ipvs.Timeouts { tm, _ := k.Timeouts(); return tm }
				if got, want := now(), (ipvs.Timeouts{TCP: 1000 * time.Second, TCPFin: 120 * time.Second, UDP: time.Minute}); got != want {
					t.Errorf("at start %+v, want %+v", got, want)
				}
				if _, err := l.Reload(ctx, conf("lvs_timeouts tcpfin 30"), nil); err != nil {
					t.Fatal(err)
				}
				if got, want := now(), (ipvs.Timeouts{TCP: 900 * time.Second, TCPFin: 30 * time.Second, UDP: 300 * time.Second}); got != want {
					t.Errorf("after a reload to tcpfin 30: %+v, want %+v", got, want)
				}
				if _, err := l.Reload(ctx, conf(""), nil); err != nil {
					t.Fatal(err)
				}
				if got := now(); got != ipvstest.DefaultTimeouts {
					t.Errorf("after a reload without lvs_timeouts: %+v, want the kernel's %+v", got, ipvstest.DefaultTimeouts)
				}
				if _, err := l.Reload(ctx, conf("lvs_timeouts udp 10"), nil); err != nil {
					t.Fatal(err)
				}
				if err := stop(); err != nil {
					t.Fatal(err)
				}
				if got := now(); got != ipvstest.DefaultTimeouts {
					t.Errorf("after stop: %+v, want the kernel's %+v", got, ipvstest.DefaultTimeouts)
				}
			})
		})
	}
}

// TestCheckerlessAlwaysAlive: a real server without a checker (or whose
// only checkers directord does not have) is alive from the start, alpha
// or not, as keepalived's.
func TestCheckerlessAlwaysAlive(t *testing.T) {
	cfg := parse(t, `
virtual_server 192.0.2.1 80 {
    lb_algo rr
    lb_kind DR
    protocol TCP
    alpha
    real_server 10.0.0.1 80 {
    }
    real_server 10.0.0.2 80 {
        FILE_CHECK {
        }
    }
    real_server 10.0.0.3 80 {
        TCP_CHECK { }
    }
}
`)
	ps, err := NewPools(cfg)
	if err != nil {
		t.Fatal(err)
	}
	st := ps[0].InitialStates()
	if !st[0].Alive || !st[1].Alive || st[2].Alive {
		t.Errorf("initial states %+v, want alive, alive, down (alpha)", st)
	}
}
