package integration

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/directord/directord/internal/control"
	"github.com/directord/directord/internal/nstest"
	"github.com/directord/directord/vrrp"
)

const reloadConf = `global_defs {
    router_id %s
}
vrrp_instance VI_1 {
    interface dda
    virtual_router_id 51
    priority 150
    version 3
    advert_int 0.1
    notify_master "/bin/sh -c 'echo %s >> %s'"
    virtual_ipaddress {
        192.0.2.100/24
    }
}
vrrp_instance VI_2 {
    interface dda
    virtual_router_id 52
    priority %d
    version 3
    advert_int 0.1
    virtual_ipaddress {
        192.0.2.101/24
    }
}
`

// TestReloadKeepsLoneMaster: the directord binary, master alone (its peer
// away), reloaded by SIGHUP with another router_id, another notify script
// and another priority on its other instance: neither instance makes a
// transition and the VIP is on the interface at every 10 ms sample taken
// through netlink across the reload. Before, any change to the VRRP part
// restarted VRRP and the VIP went for Master_Down_Interval.
func TestReloadKeepsLoneMaster(t *testing.T) {
	nstest.RequireRoot(t)
	a := nstest.New(t, "dd-rld-a")
	b := nstest.New(t, "dd-rld-b")
	nstest.Link(t, a, b, "dda", "ddb", "192.0.2.1/24", "192.0.2.2/24")
	dir := t.TempDir()
	file, sock, notes := filepath.Join(dir, "keepalived.conf"), filepath.Join(dir, "d.sock"), filepath.Join(dir, "notes")
	if err := os.WriteFile(file, []byte(fmt.Sprintf(reloadConf, "one", "first", notes, 120)), 0o644); err != nil {
		t.Fatal(err)
	}
	d := nstest.Start(t, a, binary, "-n", "-l", "-f", file, "--control-socket", sock)
	c := control.Dial(sock)
	var st control.Status
	var err error
	masters := func() bool {
		st, err = c.Status(context.Background())
		return err == nil && len(st.Instances) == 2 && st.Instances[0].State == "MASTER" && st.Instances[1].State == "MASTER"
	}
	nstest.WaitFor(t, 5*time.Second, "a master of both", masters)
	before := st

	var samples, missing atomic.Int64
	done := make(chan struct{})
	stopped := make(chan struct{})
	vip := netip.MustParseAddr("192.0.2.100")
	go func() {
		defer close(stopped)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			if ok, err := vrrp.Has(a.NL, "dda", vip); err != nil || !ok {
				missing.Add(1)
			}
			samples.Add(1)
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	nstest.WaitFor(t, 5*time.Second, "20 samples before the reload", func() bool { return samples.Load() >= 20 })
	if err := os.WriteFile(file, []byte(fmt.Sprintf(reloadConf, "two", "second", notes, 90)), 0o644); err != nil {
		t.Fatal(err)
	}
	d.Signal(syscall.SIGHUP)
	nstest.WaitFor(t, 5*time.Second, "the reload", func() bool {
		st, err = c.Status(context.Background())
		return err == nil && st.ReloadsOK+st.ReloadsFailed == 1
	})
	at := samples.Load()
	nstest.WaitFor(t, 5*time.Second, "40 samples after the reload", func() bool { return samples.Load() >= at+40 })
	close(done)
	<-stopped
	if st.ReloadsOK != 1 {
		t.Fatalf("the reload failed: %+v", st.LastReload)
	}
	if n := samples.Load(); n < 50 {
		t.Errorf("%d samples, want 50 or more", n)
	}
	if m := missing.Load(); m > 0 {
		t.Errorf("the VIP was missing at %d of %d samples through the reload", m, samples.Load())
	}
	if !masters() {
		t.Fatalf("after the reload: %+v, %v", st.Instances, err)
	}
	for i, in := range st.Instances {
		if in.Transitions != before.Instances[i].Transitions {
			t.Errorf("%s: %d transitions before the reload, %d after", in.Name, before.Instances[i].Transitions, in.Transitions)
		}
	}
	if p := st.Instances[1].EffectivePriority; p != 90 {
		t.Errorf("VI_2 priority %d after the reload, want 90", p)
	}
	if got, _ := os.ReadFile(notes); string(got) != "first\n" {
		t.Errorf("notify_master ran %q, want only the first, at the start", got)
	}
}
