package nstest

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// userHZ is the unit of /proc's CPU times (USER_HZ, 100 on Linux).
const userHZ = 100

// TopCPU lists the n processes of this machine (or guest) that used the
// most CPU, with their nice value and age, and the CPU's split since
// boot: what a test whose peers time out needs to know of the machine it
// ran on (something busy at a high priority starves what it checks).
func TopCPU(n int) string {
	b, _ := os.ReadFile("/proc/uptime")
	var up float64
	fmt.Sscanf(string(b), "%f", &up)
	type proc struct {
		pid       int
		comm      string
		state     string
		nice      int
		cpu, age  time.Duration
		cmdline   string
		ppid      int
		threads   int
		startTick int64
	}
	var ps []proc
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
		s := string(b)
		open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || close < open {
			continue
		}
		f := strings.Fields(s[close+2:])
		if len(f) < 20 {
			continue
		}
		num := func(i int) int64 { v, _ := strconv.ParseInt(f[i], 10, 64); return v }
		p := proc{pid: pid, comm: s[open+1 : close], state: f[0], ppid: int(num(1)),
			nice: int(num(16)), threads: int(num(17)), startTick: num(19)}
		p.cpu = time.Duration(num(11)+num(12)) * time.Second / userHZ
		p.age = time.Duration(up*float64(time.Second)) - time.Duration(p.startTick)*time.Second/userHZ
		if c, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil {
			p.cmdline = strings.TrimSpace(strings.ReplaceAll(string(c), "\x00", " "))
			if len(p.cmdline) > 100 {
				p.cmdline = p.cmdline[:100] + "..."
			}
		}
		ps = append(ps, p)
	}
	slices.SortFunc(ps, func(a, b proc) int { return cmp.Compare(b.cpu, a.cpu) })
	var w strings.Builder
	if st, err := os.ReadFile("/proc/stat"); err == nil {
		line, _, _ := strings.Cut(string(st), "\n")
		fmt.Fprintf(&w, "/proc/stat (user nice system idle iowait irq softirq steal, in 1/%d s): %s\n", userHZ, line)
	}
	if la, err := os.ReadFile("/proc/loadavg"); err == nil {
		fmt.Fprintf(&w, "loadavg: %s", la)
	}
	fmt.Fprintf(&w, "%7s %7s %5s %3s %4s %9s %9s %s\n", "pid", "ppid", "state", "ni", "thr", "cpu", "age", "command")
	for i, p := range ps {
		if i == n {
			break
		}
		cmd := p.cmdline
		if cmd == "" {
			cmd = "[" + p.comm + "]"
		}
		fmt.Fprintf(&w, "%7d %7d %5s %3d %4d %9v %9v %s\n", p.pid, p.ppid, p.state, p.nice, p.threads,
			p.cpu.Round(10*time.Millisecond), p.age.Round(100*time.Millisecond), cmd)
	}
	return w.String()
}

// topOnce logs TopCPU once per failed test.
var topOnce sync.Map // TB → struct{}

func logTopCPU(t TB) {
	if _, done := topOnce.LoadOrStore(t, struct{}{}); !done {
		t.Logf("the processes that used the most CPU:\n%s", TopCPU(15))
	}
}
