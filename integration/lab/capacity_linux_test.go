package lab

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// cpuSample is the guest's CPU time so far: /proc/stat's split and each
// process's (utime + stime), by the lab's role.
type cpuSample struct {
	at    time.Time
	stat  []int64 // user nice system idle iowait irq softirq, in 1/100 s
	roles map[string]int64
}

// role names what a process is in the lab.
func (l *Lab) role(pid, ppid int, comm string) string {
	if pid == os.Getpid() {
		return "client+test"
	}
	for _, r := range l.Reals {
		if r.proc != nil && r.proc.Cmd.Process.Pid == pid {
			return "real servers"
		}
	}
	switch {
	case comm == "directord":
		return "directord"
	case slices.Contains([]string{"zebra", "bgpd", "bfdd", "staticd", "watchfrr", "mgmtd"}, comm):
		return "frr"
	case ppid == 2 || pid == 2:
		return "kernel threads"
	}
	return "other"
}

func (l *Lab) sampleCPU() cpuSample {
	s := cpuSample{at: time.Now(), roles: map[string]int64{}}
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		line, _, _ := strings.Cut(string(b), "\n")
		for _, f := range strings.Fields(line)[1:8] {
			v, _ := strconv.ParseInt(f, 10, 64)
			s.stat = append(s.stat, v)
		}
	}
	es, _ := os.ReadDir("/proc")
	for _, e := range es {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		str := string(b)
		open, close := strings.IndexByte(str, '('), strings.LastIndexByte(str, ')')
		if open < 0 || close < open {
			continue
		}
		f := strings.Fields(str[close+2:])
		if len(f) < 13 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		u, _ := strconv.ParseInt(f[11], 10, 64)
		k, _ := strconv.ParseInt(f[12], 10, 64)
		s.roles[l.role(pid, ppid, str[open+1:close])] += u + k
	}
	return s
}

// cpuSince says where the guest's CPU went since a, in percent of the
// wall time.
func (l *Lab) cpuSince(a cpuSample) string {
	b := l.sampleCPU()
	wall := b.at.Sub(a.at).Seconds() * 100 // ticks
	pct := func(v int64) string { return fmt.Sprintf("%.0f%%", float64(v)/wall*100) }
	var w strings.Builder
	names := []string{"user", "nice", "system", "idle", "iowait", "irq", "softirq"}
	for i, n := range names {
		if i < len(a.stat) && i < len(b.stat) {
			fmt.Fprintf(&w, "%s %s ", n, pct(b.stat[i]-a.stat[i]))
		}
	}
	type kv struct {
		k string
		v int64
	}
	var rs []kv
	for k, v := range b.roles {
		rs = append(rs, kv{k, v - a.roles[k]})
	}
	slices.SortFunc(rs, func(x, y kv) int { return cmp.Compare(y.v, x.v) })
	w.WriteString("| by process (user+system):")
	for _, r := range rs {
		fmt.Fprintf(&w, " %s %s", r.k, pct(r.v))
	}
	return w.String()
}

// TestActiveCapacity measures what the guest carries: long-lived
// connections each sending a request every activeEvery, at growing
// counts, with where the guest's CPU goes. A measurement, not a check:
// it runs only with DIRECTORD_LAB_CAPACITY=1 (docs/lab.md).
func TestActiveCapacity(t *testing.T) {
	if os.Getenv("DIRECTORD_LAB_CAPACITY") != "1" {
		t.Skip("a measurement: DIRECTORD_LAB_CAPACITY=1")
	}
	l := newActiveLab(t)
	l.Up()
	idle := l.sampleCPU()
	time.Sleep(5 * time.Second)
	t.Logf("idle lab, 5 s: %s", l.cpuSince(idle))
	var conns []*Conn
	for _, n := range []int{20, 100, 300} {
		conns = append(conns, dialActive(t, l, n-len(conns))...)
		ch := chat(conns)
		start := l.sampleCPU()
		time.Sleep(12 * time.Second)
		ch.end()
		broken, reqs, first := ch.broken()
		took := time.Since(start.at)
		t.Logf("%d connections, a request every %v each (%d/s offered): %d requests in %v, %.0f/s; %d broken (first: %v); %s; machine: %s",
			n, activeEvery, n*int(time.Second/activeEvery), reqs, took.Round(time.Millisecond), float64(reqs)/took.Seconds(), broken, first,
			l.cpuSince(start), l.Starve.Between(start.at, time.Now()))
		if broken > 0 {
			// A connection that waited RequestTimeout for an answer:
			// more than the guest carries.
			break
		}
	}
}
