package vrrp

import (
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/directord/directord/config"
)

func cmdline(words ...string) []byte { return []byte(strings.Join(words, "\x00") + "\x00") }

// TestMatchProcess: which processes a vrrp_track_process matches, as
// keepalived's check_process and check_params compare them.
func TestMatchProcess(t *testing.T) {
	java := ProcInfo{Comm: "java", Cmdline: cmdline("/usr/bin/java", "-jar", "app.jar", "-v")}
	tests := []struct {
		name string
		p    config.TrackProcess
		info ProcInfo
		want bool
	}{
		{"comm", config.TrackProcess{Process: "java"}, java, true},
		{"comm is not argv[0]", config.TrackProcess{Process: "/usr/bin/java"}, java, false},
		{"comm is whole", config.TrackProcess{Process: "jav"}, java, false},
		{"full command: argv[0] whole", config.TrackProcess{Process: "/usr/bin/java", FullCommand: true}, java, true},
		{"full command is not the comm", config.TrackProcess{Process: "java", FullCommand: true}, java, false},
		{"exact", config.TrackProcess{Process: "/usr/bin/java", Params: []string{"-jar", "app.jar", "-v"}, ParamMatch: "exact", FullCommand: true}, java, true},
		{"exact: more arguments", config.TrackProcess{Process: "/usr/bin/java", Params: []string{"-jar", "app.jar"}, ParamMatch: "exact", FullCommand: true}, java, false},
		{"exact without parameters: none", config.TrackProcess{Process: "/usr/bin/java", ParamMatch: "exact", FullCommand: true}, java, false},
		{"exact without parameters: none given", config.TrackProcess{Process: "sleep", ParamMatch: "exact", FullCommand: true}, ProcInfo{Cmdline: cmdline("sleep")}, true},
		{"partial", config.TrackProcess{Process: "/usr/bin/java", Params: []string{"-jar", "app.jar"}, ParamMatch: "partial", FullCommand: true}, java, true},
		{"partial: whole words", config.TrackProcess{Process: "/usr/bin/java", Params: []string{"-jar", "app"}, ParamMatch: "partial", FullCommand: true}, java, false},
		{"partial: from the first argument", config.TrackProcess{Process: "/usr/bin/java", Params: []string{"app.jar"}, ParamMatch: "partial", FullCommand: true}, java, false},
		{"initial: the last word's start", config.TrackProcess{Process: "/usr/bin/java", Params: []string{"-jar", "app"}, ParamMatch: "initial", FullCommand: true}, java, true},
		{"initial: not an earlier word's", config.TrackProcess{Process: "/usr/bin/java", Params: []string{"-j", "app.jar"}, ParamMatch: "initial", FullCommand: true}, java, false},
		{"initial: the arguments at least as long as the parameters", config.TrackProcess{Process: "x", Params: []string{"ab"}, ParamMatch: "initial", FullCommand: true}, ProcInfo{Cmdline: []byte("x\x00ab")}, false},
		{"no NUL after argv[0]: no exact match", config.TrackProcess{Process: "x", ParamMatch: "exact", FullCommand: true}, ProcInfo{Cmdline: []byte("x")}, false},
		{"no NUL after argv[0]: partial without parameters", config.TrackProcess{Process: "x", ParamMatch: "partial", FullCommand: true}, ProcInfo{Cmdline: []byte("x")}, true},
		{"no NUL after argv[0]: full command", config.TrackProcess{Process: "x", FullCommand: true}, ProcInfo{Cmdline: []byte("x")}, true},
		{"a zombie's empty command line", config.TrackProcess{Process: "/usr/bin/java", FullCommand: true}, ProcInfo{Comm: "java"}, false},
	}
	for _, tt := range tests {
		if got := MatchProcess(&tt.p, tt.info); got != tt.want {
			t.Errorf("%s: MatchProcess = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func procCfg(name, process string, quorum int, quorumMax int, term, fork time.Duration) *config.TrackProcess {
	p := &config.TrackProcess{Name: name, Process: process, Quorum: quorum, TerminateDelay: term, ForkDelay: fork}
	if quorumMax >= 0 {
		p.QuorumMax = &quorumMax
	}
	return p
}

// trackerCase runs f with a tracker of procs under synctest, counting
// onChange calls.
func trackerCase(t *testing.T, procs []*config.TrackProcess, f func(tr *ProcTracker, changes *atomic.Int32)) {
	synctest.Test(t, func(t *testing.T) {
		var changes atomic.Int32
		tr := NewProcTracker(procs, func(c []ProcChange) { changes.Add(int32(len(c))) })
		defer tr.Stop()
		f(tr, &changes)
	})
}

func wantUp(t *testing.T, tr *ProcTracker, name string, up bool, count int, what string) {
	t.Helper()
	got, ok := tr.Up(name)
	if !ok || got != up || tr.Count(name) != count {
		t.Errorf("%s: %s up %v with %d processes, want up %v with %d", what, name, got, tr.Count(name), up, count)
	}
}

// TestProcTrackerQuorumAndDelays: the count against quorum and
// quorum_max, and where keepalived applies the delays: terminate_delay
// to exits only, fork_delay to forks of a counted process only, an exec
// or a comm change at once.
func TestProcTrackerQuorumAndDelays(t *testing.T) {
	hap := ProcInfo{Comm: "haproxy"}
	other := ProcInfo{Comm: "sh"}
	t.Run("quorum 2, terminate_delay", func(t *testing.T) {
		trackerCase(t, []*config.TrackProcess{procCfg("P", "haproxy", 2, -1, 2*time.Second, time.Second)}, func(tr *ProcTracker, ch *atomic.Int32) {
			tr.Scan(map[int]ProcInfo{10: hap, 11: other})
			wantUp(t, tr, "P", false, 1, "scan")
			tr.Exec(12, hap)
			wantUp(t, tr, "P", true, 2, "an exec: at once, fork_delay or not")
			tr.Exit(10)
			wantUp(t, tr, "P", true, 1, "exit")
			time.Sleep(2*time.Second - time.Microsecond)
			wantUp(t, tr, "P", true, 1, "just before terminate_delay")
			time.Sleep(time.Microsecond)
			synctest.Wait()
			wantUp(t, tr, "P", false, 1, "after terminate_delay")
			if n := ch.Load(); n != 2 {
				t.Errorf("%d changes, want 2", n)
			}
		})
	})
	t.Run("a fork within terminate_delay cancels it", func(t *testing.T) {
		trackerCase(t, []*config.TrackProcess{procCfg("P", "haproxy", 1, -1, 2*time.Second, time.Second)}, func(tr *ProcTracker, ch *atomic.Int32) {
			tr.Scan(map[int]ProcInfo{10: hap, 11: hap})
			tr.Fork(10, 20) // 3
			tr.Exit(10)
			tr.Exit(11)
			tr.Exit(20)
			wantUp(t, tr, "P", true, 0, "all gone, within terminate_delay")
			tr.Exec(30, hap)
			time.Sleep(time.Hour)
			wantUp(t, tr, "P", true, 1, "back before the delay ended")
			if n := ch.Load(); n != 0 {
				t.Errorf("%d changes, want none", n)
			}
		})
	})
	t.Run("fork_delay", func(t *testing.T) {
		trackerCase(t, []*config.TrackProcess{procCfg("P", "haproxy", 2, -1, 0, time.Second)}, func(tr *ProcTracker, ch *atomic.Int32) {
			tr.Scan(map[int]ProcInfo{10: hap})
			tr.Fork(11, 12) // not a counted parent
			wantUp(t, tr, "P", false, 1, "fork of another process")
			tr.Fork(10, 13)
			wantUp(t, tr, "P", false, 2, "within fork_delay")
			time.Sleep(time.Second)
			synctest.Wait()
			wantUp(t, tr, "P", true, 2, "after fork_delay")
			tr.Exit(13)
			wantUp(t, tr, "P", false, 1, "exit without terminate_delay")
			tr.Fork(10, 14)
			tr.Exit(14) // the loss cancels the gain's delay: at once
			time.Sleep(time.Hour)
			wantUp(t, tr, "P", false, 1, "a child gone within fork_delay")
			if n := ch.Load(); n != 2 {
				t.Errorf("%d changes, want 2", n)
			}
		})
	})
	t.Run("quorum_max", func(t *testing.T) {
		trackerCase(t, []*config.TrackProcess{procCfg("P", "haproxy", 1, 2, time.Second, 0)}, func(tr *ProcTracker, ch *atomic.Int32) {
			tr.Scan(map[int]ProcInfo{10: hap, 11: hap})
			wantUp(t, tr, "P", true, 2, "two of 1..2")
			tr.Exec(12, hap)
			wantUp(t, tr, "P", false, 3, "three: at once")
			tr.Exit(12)
			wantUp(t, tr, "P", false, 2, "back to two: after terminate_delay")
			time.Sleep(time.Second)
			synctest.Wait()
			wantUp(t, tr, "P", true, 2, "back to two")
		})
	})
	t.Run("quorum_max 0: none may run", func(t *testing.T) {
		trackerCase(t, []*config.TrackProcess{procCfg("P", "haproxy", 0, 0, 0, 0)}, func(tr *ProcTracker, ch *atomic.Int32) {
			tr.Scan(nil)
			wantUp(t, tr, "P", true, 0, "none")
			tr.Exec(10, hap)
			wantUp(t, tr, "P", false, 1, "one")
			tr.Exit(10)
			wantUp(t, tr, "P", true, 0, "none again")
		})
	})
	t.Run("exec and comm changes count at once", func(t *testing.T) {
		trackerCase(t, []*config.TrackProcess{procCfg("P", "haproxy", 1, -1, time.Hour, time.Hour), {Name: "F", Process: "/bin/hap", FullCommand: true, Quorum: 1}}, func(tr *ProcTracker, ch *atomic.Int32) {
			tr.Scan(map[int]ProcInfo{10: {Comm: "haproxy", Cmdline: cmdline("/bin/hap")}})
			wantUp(t, tr, "P", true, 1, "scan")
			wantUp(t, tr, "F", true, 1, "scan")
			tr.Exec(10, ProcInfo{Comm: "haproxy", Cmdline: cmdline("/bin/hap")})
			wantUp(t, tr, "P", true, 1, "an exec of the same program counts once")
			tr.Comm(10, "worker")
			wantUp(t, tr, "P", false, 0, "renamed: at once, terminate_delay or not")
			wantUp(t, tr, "F", true, 1, "the command line is unchanged")
			tr.Comm(10, "haproxy")
			wantUp(t, tr, "P", true, 1, "named back")
			tr.Exec(10, ProcInfo{Comm: "sleep", Cmdline: cmdline("/bin/sleep")})
			wantUp(t, tr, "P", false, 0, "exec of another program: at once")
			wantUp(t, tr, "F", false, 0, "exec of another program: at once")
			tr.Exit(10)
			wantUp(t, tr, "P", false, 0, "exit of a process no longer counted")
		})
	})
	t.Run("rescan after lost events", func(t *testing.T) {
		trackerCase(t, []*config.TrackProcess{procCfg("P", "haproxy", 1, -1, time.Second, 0)}, func(tr *ProcTracker, ch *atomic.Int32) {
			tr.Scan(map[int]ProcInfo{10: hap})
			tr.Rescan(map[int]ProcInfo{11: hap, 12: hap})
			wantUp(t, tr, "P", true, 2, "more, still up")
			tr.Exit(11)
			tr.Exit(12)
			wantUp(t, tr, "P", true, 0, "within terminate_delay")
			tr.Rescan(map[int]ProcInfo{13: other})
			wantUp(t, tr, "P", true, 0, "rescan: a fresh terminate_delay")
			time.Sleep(time.Second)
			synctest.Wait()
			wantUp(t, tr, "P", false, 0, "after it")
			tr.Rescan(map[int]ProcInfo{14: hap})
			wantUp(t, tr, "P", true, 1, "found again: at once")
			if n := ch.Load(); n != 2 {
				t.Errorf("%d changes, want 2", n)
			}
		})
	})
}

// TestProcessTracked: what a tracked process's quorum does to priority
// and fault, as keepalived's process_update_track_process_status: a
// reversed weight is negated (not the quorum inverted, as for
// track_interface).
func TestProcessTracked(t *testing.T) {
	tests := []struct {
		weight    int
		reverse   bool
		up        bool
		prio      uint8
		wantFault bool
	}{
		{0, false, true, 100, false},
		{0, false, false, 100, true},
		{0, true, true, 100, true},
		{0, true, false, 100, false},
		{10, false, true, 110, false},
		{10, false, false, 100, false},
		{-10, false, true, 100, false},
		{-10, false, false, 90, false},
		{10, true, true, 90, false},
		{10, true, false, 100, false},
		{-10, true, true, 100, false},
		{-10, true, false, 110, false},
	}
	for _, tt := range tests {
		p, f := Effective(100, []Tracked{processTracked(config.TrackProcessUse{Weight: tt.weight, Reverse: tt.reverse}, tt.up)})
		if p != tt.prio || f != tt.wantFault {
			t.Errorf("weight %d reverse %v up %v: priority %d fault %v, want %d %v", tt.weight, tt.reverse, tt.up, p, f, tt.prio, tt.wantFault)
		}
	}
}

// TestProcessUses: a sync group's entry gives an instance's weighted
// entry for the same process its weight, not its reverse.
func TestProcessUses(t *testing.T) {
	in := &config.Instance{TrackProcesses: []config.TrackProcessUse{{Name: "a", Weight: 5, Reverse: true}, {Name: "b"}}}
	g := &config.SyncGroup{TrackProcesses: []config.TrackProcessUse{{Name: "a", Weight: 7}, {Name: "b", Weight: 3}, {Name: "c", Weight: -2, Reverse: true}}}
	got := ProcessUses(in, g)
	want := []config.TrackProcessUse{{Name: "a", Weight: 7, Reverse: true}, {Name: "b"}, {Name: "c", Weight: -2, Reverse: true}}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}
