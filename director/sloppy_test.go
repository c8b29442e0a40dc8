package director

import (
	"log/slog"
	"os"
	"strings"
	"sync"
	"syscall"
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

// refusingSysctls are settings whose writes fail while refuse is set, as
// in a container whose /proc/sys is read-only.
type refusingSysctls struct {
	mu     sync.Mutex
	vals   map[string]string
	refuse bool
}

func (s *refusingSysctls) Sysctl(name string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.vals[name], nil
}

func (s *refusingSysctls) SetSysctl(name, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refuse {
		return &os.PathError{Op: "open", Path: "/proc/sys/net/ipv4/vs/" + name, Err: syscall.EROFS}
	}
	s.vals[name] = value
	return nil
}

// TestLVSNotServingWithoutSloppy: a virtual server announced by BGP is not
// served (OnServing says not programmed, so BGP does not announce it)
// while sloppy_tcp cannot be set to 1: a router would send it flows that
// another director started, which IPVS drops without it. Once the setting
// takes, within the retry's backoff, it is.
func TestLVSNotServingWithoutSloppy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := newFakeKernel()
		l := newLVS(t, parse(t, announcedConf), k)
		sys := &refusingSysctls{vals: map[string]string{"sloppy_tcp": "0", "sloppy_sctp": "0"}, refuse: true}
		l.Sysctls = sys
		var mu sync.Mutex
		var last []Serving
		l.OnServing = func(s []Serving) {
			mu.Lock()
			defer mu.Unlock()
			last = s
		}
		programmed := func() bool {
			mu.Lock()
			defer mu.Unlock()
			if len(last) != 1 {
				t.Fatalf("OnServing gave %d pools", len(last))
			}
			return last[0].Programmed
		}
		_, stop := running(t, l)
		synctest.Wait()
		if svcs, err := k.Services(); err != nil || len(svcs) != 1 {
			t.Fatalf("the table is not programmed: %v %v", svcs, err)
		}
		if programmed() {
			t.Error("served while sloppy_tcp is 0 and cannot be set")
		}
		sys.mu.Lock()
		sys.refuse = false
		sys.mu.Unlock()
		time.Sleep(l.RetryMax)
		synctest.Wait()
		if !programmed() {
			t.Error("not served once sloppy_tcp could be set")
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestSloppyNeeded: the setting each protocol of an announced virtual
// server needs.
func TestSloppyNeeded(t *testing.T) {
	for _, c := range []struct {
		proto     string
		announced bool
		want      string
	}{
		{"TCP", true, "sloppy_tcp"},
		{"SCTP", true, "sloppy_sctp"},
		{"UDP", true, ""},
		{"TCP", false, ""},
	} {
		conf := strings.Replace(announcedConf, "protocol TCP", "protocol "+c.proto, 1)
		if !c.announced {
			conf = strings.Replace(conf, "    announce bgp\n", "", 1)
		}
		vs := parse(t, conf).VirtualServers[0]
		if got := sloppyNeeded(vs); got != c.want {
			t.Errorf("%s, announced %v: %q, want %q", c.proto, c.announced, got, c.want)
		}
	}
}
