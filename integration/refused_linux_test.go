package integration

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netns"

	"github.com/directord/directord/internal/control"
	"github.com/directord/directord/internal/nstest"
)

const refusedGood = `vrrp_instance VI_1 {
    interface dda
    virtual_router_id 51
    priority 150
    version 3
    advert_int 0.1
    virtual_ipaddress {
        192.0.2.100/24
    }
}
`

// refusedKinds are the two ways a reload is refused. A file with an error
// is refused by the reader, before anything is built. A file that reads
// well but names an interface the namespace lacks passes the reader and
// the checks (directord -t says OK: interfaces are looked up when VRRP is
// built) and fails while the new VRRP node is built: its first instance,
// VI_1 on dda, is made (sockets open, netlink handle) before the second
// fails, so a refusal half-way must close what the first one opened.
var refusedKinds = []struct {
	name, text, want string
}{
	{"bad VRID", strings.Replace(refusedGood, "virtual_router_id 51", "virtual_router_id 256", 1), "keepalived.conf:3"},
	{"missing interface", refusedGood + `vrrp_instance VI_2 {
    interface nosuch0
    virtual_router_id 52
    priority 150
    version 3
    advert_int 0.1
    virtual_ipaddress {
        192.0.2.101/24
    }
}
`, "nosuch0"},
}

// TestRefusedReloadsLeakNothing: the directord binary, master of VI_1
// alone, is sent 100 refused reloads of each kind (refusedKinds) by
// SIGHUP. Its open file descriptors (/proc/PID/fd) and goroutines (the
// go_goroutines of its metrics) do not grow, it still runs the old
// configuration (the VIP on dda, the instance MASTER without a
// transition) and every refusal is counted and names the fault.
//
// The baseline is taken before any reload: a refused reload allocates
// nothing that lasts, not even on the first one. Each figure is read
// after a status call over the control socket, whose kept-alive
// connection (one descriptor, one goroutine in the daemon) is then in
// both figures alike, and after a metrics scrape on a connection kept
// alive too.
func TestRefusedReloadsLeakNothing(t *testing.T) {
	nstest.RequireRoot(t)
	a := nstest.New(t, "dd-ref-a")
	b := nstest.New(t, "dd-ref-b")
	nstest.Link(t, a, b, "dda", "ddb", "192.0.2.1/24", "192.0.2.2/24")
	dir := t.TempDir()
	file, sock := filepath.Join(dir, "keepalived.conf"), filepath.Join(dir, "d.sock")
	if err := os.WriteFile(file, []byte(refusedGood), 0o644); err != nil {
		t.Fatal(err)
	}
	const metricsAddr = "127.0.0.1:9650"
	d := nstest.Start(t, a, binary, "-n", "-l", "-f", file, "--control-socket", sock, "--metrics-address", metricsAddr)
	pid := d.Cmd.Process.Pid // ip netns exec execs directord: the same process
	c := control.Dial(sock)
	m := newScraper(a, metricsAddr)
	var st control.Status
	var err error
	master := func() bool {
		st, err = c.Status(context.Background())
		return err == nil && len(st.Instances) == 1 && st.Instances[0].State == "MASTER"
	}
	nstest.WaitFor(t, 5*time.Second, "directord master of VI_1", master)
	nstest.WaitFor(t, 5*time.Second, "the metrics served", func() bool {
		_, err := m.goroutines()
		return err == nil
	})

	// counts reads the daemon's figures, the same twice in a row: a
	// connection the daemon is still closing (the control client drops
	// an idle one after 30 s) is not taken for a leak.
	counts := func() (fds, gs int) {
		t.Helper()
		nstest.WaitFor(t, 5*time.Second, "steady counts", func() bool {
			f1, g1 := countOnce(t, c, m, pid)
			fds, gs = countOnce(t, c, m, pid)
			return f1 == fds && g1 == gs
		})
		return fds, gs
	}
	fds0, gs0 := counts()
	before := st
	t.Logf("before the reloads: %d descriptors, %d goroutines", fds0, gs0)

	const rounds = 100
	var failed uint64
	for _, k := range refusedKinds {
		if err := os.WriteFile(file, []byte(k.text), 0o644); err != nil {
			t.Fatal(err)
		}
		for i := range rounds {
			d.Signal(syscall.SIGHUP)
			failed++
			nstest.WaitFor(t, 10*time.Second, fmt.Sprintf("%s: refused reload %d", k.name, i+1), func() bool {
				st, err = c.Status(context.Background())
				return err == nil && st.ReloadsOK+st.ReloadsFailed >= failed
			})
			if st.ReloadsOK != 0 || st.ReloadsFailed != failed {
				t.Fatalf("%s: reload %d: %d taken, %d refused; want 0 and %d: %+v", k.name, i+1, st.ReloadsOK, st.ReloadsFailed, failed, st.LastReload)
			}
		}
		if st.LastReload == nil || st.LastReload.OK || !strings.Contains(st.LastReload.Error, k.want) {
			t.Errorf("%s: last reload %+v, want refused naming %q", k.name, st.LastReload, k.want)
		}
		if st.LastReload != nil && strings.Contains(st.LastReload.Error, "vrrp: vrrp:") {
			t.Errorf("%s: the refusal says its package twice: %q", k.name, st.LastReload.Error)
		}
		fds, gs := counts()
		t.Logf("after %d refused reloads (%s): %d descriptors, %d goroutines", rounds, k.name, fds, gs)
		if fds > fds0 || gs > gs0 {
			t.Errorf("%s: %d descriptors and %d goroutines after %d refused reloads, %d and %d before", k.name, fds, gs, rounds, fds0, gs0)
			t.Logf("descriptors now: %s", fdTargets(pid))
		}
		if !a.HasAddr(t, "dda", "192.0.2.100") {
			t.Errorf("%s: the VIP is gone after the refused reloads", k.name)
		}
		if !master() {
			t.Fatalf("%s: after the refused reloads: %+v, %v", k.name, st.Instances, err)
		}
		if got, was := st.Instances[0], before.Instances[0]; got.Transitions != was.Transitions || got.EffectivePriority != was.EffectivePriority {
			t.Errorf("%s: VI_1 %+v after the refused reloads, %+v before", k.name, got, was)
		}
	}
	if a.HasAddr(t, "dda", "192.0.2.101") {
		t.Error("the refused file's VI_2 VIP is on dda")
	}
}

// countOnce is the daemon's open descriptors and goroutines, read after a
// status call and a metrics scrape, both on connections kept alive.
func countOnce(t *testing.T, c *control.Client, m *scraper, pid int) (fds, gs int) {
	t.Helper()
	if _, err := c.Status(context.Background()); err != nil {
		t.Fatal(err)
	}
	gs, err := m.goroutines()
	if err != nil {
		t.Fatal(err)
	}
	es, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(es), gs
}

// scraper reads the daemon's metrics from inside its namespace, on one
// connection kept alive: the daemon's side of it is one descriptor and
// one goroutine at every count. (A connection per scrape would not do:
// the daemon keeps a closed one's descriptor half a second, against
// resets.)
type scraper struct {
	hc  *http.Client
	url string
}

func newScraper(ns *nstest.NS, addr string) *scraper {
	var d net.Dialer
	tr := &http.Transport{
		MaxIdleConns: 1,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return dialIn(ctx, &d, ns, network, addr)
		},
	}
	return &scraper{hc: &http.Client{Transport: tr, Timeout: 10 * time.Second}, url: "http://" + addr + "/metrics"}
}

// dialIn dials from inside ns on a thread of its own.
func dialIn(ctx context.Context, d *net.Dialer, ns *nstest.NS, network, addr string) (net.Conn, error) {
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	defer orig.Close()
	if err := netns.Set(ns.NS); err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	conn, err := d.DialContext(ctx, network, addr)
	if netns.Set(orig) == nil {
		runtime.UnlockOSThread() // else the thread ends with the goroutine
	}
	return conn, err
}

// goroutines is go_goroutines of the daemon's metrics.
func (s *scraper) goroutines() (int, error) {
	resp, err := s.hc.Get(s.url)
	if err != nil {
		return 0, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("metrics: %s", resp.Status)
	}
	for line := range strings.Lines(string(body)) {
		if v, ok := strings.CutPrefix(line, "go_goroutines "); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, fmt.Errorf("metrics: no go_goroutines in %d bytes", len(body))
}

// fdTargets lists what the process's descriptors point to, for a failure
// message.
func fdTargets(pid int) string {
	es, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	var out []string
	for _, e := range es {
		l, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, e.Name()))
		out = append(out, e.Name()+"="+l)
	}
	return strings.Join(out, " ")
}
