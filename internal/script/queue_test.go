package script

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/directord/directord/config"
)

func shScript(line string) *config.Script {
	return &config.Script{Command: line, Args: []string{"/bin/sh", "-c", line}}
}

// TestQueueOrderAndDrops: a key's scripts run one after another in the
// order submitted; when too many wait behind a running one, the oldest
// waiting is dropped and counted; another key runs meanwhile. The
// scripts block on FIFOs, which are the test's events.
func TestQueueOrderAndDrops(t *testing.T) {
	dir := t.TempDir()
	hold, other, out := filepath.Join(dir, "hold"), filepath.Join(dir, "other"), filepath.Join(dir, "out")
	for _, f := range []string{hold, other} {
		if err := syscall.Mkfifo(f, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	q := NewQueue(nil)
	q.Limit = 2
	var mu sync.Mutex
	var dropped []string
	q.OnDrop = func(j Job) { mu.Lock(); dropped = append(dropped, j.Script.Command); mu.Unlock() }
	job := func(key, line string) Job { return Job{Key: key, Kind: "vrrp", Script: shScript(line)} }

	q.Submit(job("instance A", "read x < "+hold+"; echo 1 >> "+out))
	// Opening the FIFO returns once the first script has it open: it runs.
	w, err := os.OpenFile(hold, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	q.Submit(job("instance A", "echo 2 >> "+out))
	q.Submit(job("instance A", "echo 3 >> "+out))
	q.Submit(job("instance A", "echo 4 >> "+out)) // 2 is the oldest waiting: dropped
	mu.Lock()
	if !slices.Equal(dropped, []string{"echo 2 >> " + out}) {
		t.Errorf("dropped %q, want the oldest waiting", dropped)
	}
	mu.Unlock()
	// Another key is not held up by A's running script.
	q.Submit(job("instance B", "echo B > "+other))
	r, err := os.Open(other)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 8)
	n, _ := r.Read(b)
	r.Close()
	if strings.TrimSpace(string(b[:n])) != "B" {
		t.Errorf("instance B's script wrote %q", b[:n])
	}
	w.WriteString("go\n")
	w.Close()
	if err := q.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(out)
	if string(got) != "1\n3\n4\n" {
		t.Errorf("ran %q, want 1 3 4 in order", got)
	}
	q.Close()
	q.Submit(job("instance A", "echo 5 >> "+out))
	q.Wait(t.Context())
	if got, _ := os.ReadFile(out); string(got) != "1\n3\n4\n" {
		t.Errorf("a script ran after Close: %q", got)
	}
}

// TestQueueSkipsDisabled: a disabled script is not queued.
func TestQueueSkipsDisabled(t *testing.T) {
	q := NewQueue(nil)
	q.Submit(Job{Key: "k", Script: &config.Script{Command: "/no/such/script", Args: []string{"/no/such/script"}}})
	select {
	case <-q.Idle():
	default:
		t.Error("a disabled script was queued")
	}
}

func TestNotifyMapping(t *testing.T) {
	m, b, f, s, any := shScript("m"), shScript("b"), shScript("f"), shScript("s"), shScript("any")
	n := &config.Notify{Master: m, Backup: b, Fault: f, Stop: s, Any: any}
	for _, tt := range []struct {
		state string
		own   *config.Script
	}{{"MASTER", m}, {"BACKUP", b}, {"FAULT", f}, {"STOP", s}} {
		calls := Notify(n, "INSTANCE", "VI_1", tt.state, 100)
		if len(calls) != 2 || calls[0].Script != tt.own || calls[0].Args != nil || calls[1].Script != any ||
			!slices.Equal(calls[1].Args, []string{"INSTANCE", "VI_1", tt.state, "100"}) {
			t.Errorf("%s: %+v", tt.state, calls)
		}
	}
	if calls := Notify(&config.Notify{Any: any}, "GROUP", "G", "BACKUP", 0); len(calls) != 1 || !slices.Equal(calls[0].Args, []string{"GROUP", "G", "BACKUP", "0"}) {
		t.Errorf("group: %+v", calls)
	}
	if calls := Notify(&config.Notify{}, "INSTANCE", "VI_1", "MASTER", 1); len(calls) != 0 {
		t.Errorf("no scripts: %+v", calls)
	}
	rs := &config.RealServer{RealServerExtra: &config.RealServerExtra{NotifyUp: m, NotifyDown: b}}
	vs := &config.VirtualServer{QuorumUp: s, QuorumDown: f}
	if RealServer(rs, true) != m || RealServer(rs, false) != b || Quorum(vs, true) != s || Quorum(vs, false) != f {
		t.Error("pool mapping")
	}
}

// TestNotifyJobs: the jobs of an instance, a sync group and the data
// plane, each on its own lane and counted under its own kind, an
// instance's in keepalived's order (its state's script, then notify with
// TYPE NAME STATE PRIORITY).
func TestNotifyJobs(t *testing.T) {
	m, any := shScript("m"), shScript("any")
	n := &config.Notify{Master: m, Any: any}
	r := Runner{User: "u"}
	got := NotifyJobs(r, n, "INSTANCE", "VI_1", "MASTER", 100)
	want := []Job{
		{Key: "instance VI_1", Kind: KindVRRP, Runner: r, Script: m},
		{Key: "instance VI_1", Kind: KindVRRP, Runner: r, Script: any, Args: []string{"INSTANCE", "VI_1", "MASTER", "100"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("instance:\n got %+v\nwant %+v", got, want)
	}
	got = NotifyJobs(r, n, "GROUP", "G", "MASTER", 0)
	want = []Job{
		{Key: "group G", Kind: KindSyncGroup, Runner: r, Script: m},
		{Key: "group G", Kind: KindSyncGroup, Runner: r, Script: any, Args: []string{"GROUP", "G", "MASTER", "0"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("group:\n got %+v\nwant %+v", got, want)
	}
	if got, want := PoolJob(r, m), (Job{Key: "lvs", Kind: KindLVS, Runner: r, Script: m}); !reflect.DeepEqual(got, want) {
		t.Errorf("pool: got %+v, want %+v", got, want)
	}
}

// TestDropPolicyOfEveryKind: the jobs of VRRP instances, sync groups and
// the data plane, as their submitters make them, share the one drop
// policy: with a script running and the lane full, the oldest waiting is
// dropped, counted under its kind; the newest runs.
func TestDropPolicyOfEveryKind(t *testing.T) {
	dir := t.TempDir()
	q := NewQueue(nil)
	q.Limit = 1
	var mu sync.Mutex
	var dropped []string
	q.OnDrop = func(j Job) { mu.Lock(); dropped = append(dropped, j.Kind+" "+j.Script.Command); mu.Unlock() }
	type lane struct {
		kind       string
		jobs       func(s *config.Script) []Job
		hold, out  string
		holdWriter *os.File
	}
	lanes := []*lane{
		{kind: KindVRRP, jobs: func(s *config.Script) []Job {
			return NotifyJobs(Runner{}, &config.Notify{Master: s}, "INSTANCE", "VI_1", "MASTER", 100)
		}},
		{kind: KindSyncGroup, jobs: func(s *config.Script) []Job {
			return NotifyJobs(Runner{}, &config.Notify{Master: s}, "GROUP", "G", "MASTER", 0)
		}},
		{kind: KindLVS, jobs: func(s *config.Script) []Job { return []Job{PoolJob(Runner{}, s)} }},
	}
	for _, l := range lanes {
		l.hold, l.out = filepath.Join(dir, l.kind+".hold"), filepath.Join(dir, l.kind+".out")
		if err := syscall.Mkfifo(l.hold, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, j := range l.jobs(shScript("read x < " + l.hold + "; echo 1 >> " + l.out)) {
			q.Submit(j)
		}
		// Open returns once the script has the FIFO open: it runs.
		w, err := os.OpenFile(l.hold, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		l.holdWriter = w
		for _, line := range []string{"echo 2 >> " + l.out, "echo 3 >> " + l.out} {
			for _, j := range l.jobs(shScript(line)) {
				q.Submit(j)
			}
		}
	}
	mu.Lock()
	var want []string
	for _, l := range lanes {
		want = append(want, l.kind+" echo 2 >> "+l.out)
	}
	if !slices.Equal(dropped, want) {
		t.Errorf("dropped %q, want the oldest waiting of each kind %q", dropped, want)
	}
	mu.Unlock()
	for _, l := range lanes {
		l.holdWriter.WriteString("go\n")
		l.holdWriter.Close()
	}
	if err := q.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, l := range lanes {
		if got, _ := os.ReadFile(l.out); string(got) != "1\n3\n" {
			t.Errorf("%s ran %q, want 1 then 3", l.kind, got)
		}
	}
}
