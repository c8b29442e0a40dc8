package director

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestLVSServing: OnServing says programmed only once the kernel took the
// table, not while it refuses it, and follows the pool's quorum.
func TestLVSServing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := newFakeKernel()
		k.breaks(true)
		l := newLVS(t, parse(t, lvsConf), k)
		var mu sync.Mutex
		var last []Serving
		l.OnServing = func(s []Serving) {
			mu.Lock()
			defer mu.Unlock()
			last = s
		}
		get := func() Serving {
			mu.Lock()
			defer mu.Unlock()
			if len(last) != 1 {
				t.Fatalf("OnServing gave %d pools", len(last))
			}
			return last[0]
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go l.Run(ctx)
		synctest.Wait()
		if s := get(); s.Programmed {
			t.Errorf("programmed while the kernel refuses: %+v", s)
		}
		k.breaks(false)
		time.Sleep(time.Second)
		synctest.Wait()
		if s := get(); !s.Programmed || !s.Quorum {
			t.Errorf("after the kernel took the table: %+v", s)
		}
		// Both real servers down: the quorum goes.
		l.Report(ctx, 0, 0, RealState{})
		l.Report(ctx, 0, 1, RealState{})
		synctest.Wait()
		if s := get(); !s.Programmed || s.Quorum {
			t.Errorf("after both real servers died: %+v", s)
		}
		l.Report(ctx, 0, 1, RealState{Alive: true, Weight: 2})
		synctest.Wait()
		if s := get(); !s.Quorum {
			t.Errorf("after one came back: %+v", s)
		}
	})
}
