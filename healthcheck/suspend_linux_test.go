package healthcheck

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/directord/directord/internal/nstest"
)

// TestHASuspendFollowsTheHost: a director in a namespace of its own,
// following its addresses through netlink (LocalAddrs) as keepalived's
// checker does, runs no MISC_CHECK script of a virtual server with
// ha_suspend while it lacks the virtual address (a backup), runs it
// once the address is added (taking over), and stops again when it is
// removed.
func TestHASuspendFollowsTheHost(t *testing.T) {
	nstest.RequireRoot(t)
	ns := nstest.New(t, "hcsusp")
	runs := filepath.Join(t.TempDir(), "runs")
	cfg := parse(t, `
virtual_server 192.0.2.77 80 {
    lb_algo rr
    lb_kind DR
    protocol TCP
    ha_suspend
    real_server 10.0.0.1 80 {
        MISC_CHECK {
            misc_path "/bin/sh -c 'echo x >> `+runs+`'"
            delay_loop 1
            warmup 0
        }
    }
}
`)
	r := newRunner(t, cfg, func(Event) {}, nil)
	var w *LocalAddrs
	ns.Do(t, func() {
		var err error
		if w, err = WatchLocalAddrs(nil); err != nil {
			t.Fatal(err)
		}
	})
	var mu sync.Mutex
	feed := func() {
		mu.Lock()
		defer mu.Unlock()
		r.SetLocal(w.Addrs())
	}
	feed()
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); w.Run(ctx, feed) }()
	go func() { defer wg.Done(); r.Run(ctx) }()
	defer func() { cancel(); wg.Wait() }()
	count := func() int {
		b, _ := os.ReadFile(runs)
		return len(b) / 2
	}

	// A backup: the first probe would come at 1 s, then each second.
	nstest.HoldFor(t, 3*time.Second, "no script while the address is elsewhere", func() bool { return count() == 0 })

	lo, err := ns.NL.LinkByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	vip := &netlink.Addr{IPNet: &net.IPNet{IP: net.ParseIP("192.0.2.77"), Mask: net.CIDRMask(32, 32)}}
	if err := ns.NL.AddrAdd(lo, vip); err != nil {
		t.Fatal(err)
	}
	// Within a delay_loop of the address, and the script's own time.
	nstest.WaitFor(t, 3*time.Second, "the script runs once the address is here", func() bool { return count() > 0 })

	if err := ns.NL.AddrDel(lo, vip); err != nil {
		t.Fatal(err)
	}
	var settled int
	nstest.WaitFor(t, 3*time.Second, "the runs stop once the address is gone", func() bool {
		n := count()
		if !r.Checks()[0].Suspended() {
			return false
		}
		settled = n
		return true
	})
	// One probe may have been under way when the address went.
	nstest.HoldFor(t, 3*time.Second, "no script after the address left", func() bool { return count() <= settled+1 })
}
