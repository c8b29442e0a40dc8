package director

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
)

// TestLVSReloadMemoryFlat: 100 reloads, each changing one real server's
// weight, leave the live heap where the tenth left it (within 5 %): a
// reload keeps nothing of the configuration it replaced (issue 20). The
// live heap after a collection is what the process's RSS follows; it is
// measured, not timed.
func TestLVSReloadMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("100 reloads of 100 x 10 real servers")
	}
	const vs, rs = 100, 10
	conf := func(changed int) string {
		var b strings.Builder
		for v := range vs {
			fmt.Fprintf(&b, "virtual_server 10.1.%d.%d 443 {\n    lb_algo rr\n    lb_kind DR\n    protocol TCP\n", v>>8, v&0xff)
			for r := range rs {
				n, w := v*rs+r, 1
				if n < changed {
					w = 2
				}
				fmt.Fprintf(&b, "    real_server 172.16.%d.%d 443 {\n        weight %d\n    }\n", n>>8, n&0xff, w)
			}
			b.WriteString("}\n")
		}
		return b.String()
	}
	synctest.Test(t, func(t *testing.T) {
		k := newFakeKernel()
		l, err := NewLVS(parse(t, conf(0)), k, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, stop := running(t, l)
		defer stop()
		var at10 uint64
		for i := 1; i <= 100; i++ {
			if _, err := l.Reload(ctx, parse(t, conf(i)), nil); err != nil {
				t.Fatalf("reload %d: %v", i, err)
			}
			synctest.Wait()
			switch i {
			case 10:
				at10 = liveHeap()
			case 100:
				at100 := liveHeap()
				t.Logf("live heap after 10 reloads %.2f MB, after 100 %.2f MB", float64(at10)/1e6, float64(at100)/1e6)
				if float64(at100) > 1.05*float64(at10) {
					t.Errorf("live heap grew from %d to %d bytes over 90 reloads (more than 5 %%)", at10, at100)
				}
			}
		}
		if got := strings.Join(k.lines(), "\n"); !strings.Contains(got, "172.16.0.99:443 route 2") || strings.Contains(got, "172.16.0.100:443 route 2") {
			t.Errorf("the last reload's weights are not in the kernel")
		}
	})
}

// liveHeap is the heap's live bytes after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC() // and what the first one's finalizers released
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestAfterFirstSync: AfterFirstSync runs once, when the kernel first
// holds the wanted table, and not at the syncs after it (a reload's).
func TestAfterFirstSync(t *testing.T) {
	conf := "virtual_server 10.1.0.1 443 {\n    lb_algo rr\n    lb_kind DR\n    protocol TCP\n    real_server 172.16.0.1 443 {\n        weight %d\n    }\n}\n"
	synctest.Test(t, func(t *testing.T) {
		k := newFakeKernel()
		l, err := NewLVS(parse(t, fmt.Sprintf(conf, 1)), k, nil)
		if err != nil {
			t.Fatal(err)
		}
		calls := 0
		var held string
		l.AfterFirstSync = func() {
			calls++
			held = strings.Join(k.lines(), "\n")
		}
		ctx, stop := running(t, l)
		defer stop()
		if calls != 1 || !strings.Contains(held, "172.16.0.1:443 route 1") {
			t.Fatalf("after the first sync: %d calls, the kernel holding\n%s", calls, held)
		}
		if _, err := l.Reload(ctx, parse(t, fmt.Sprintf(conf, 2)), nil); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if calls != 1 {
			t.Errorf("%d calls after a reload, want 1", calls)
		}
	})
}
