package healthcheck

import (
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/directord/directord/internal/nstest"
)

func TestEgressDown(t *testing.T) {
	nstest.RequireRoot(t)
	a := nstest.New(t, fmt.Sprintf("hca-%d", os.Getpid()))
	b := nstest.New(t, fmt.Sprintf("hcb-%d", os.Getpid()))
	nstest.Link(t, a, b, "eth0", "eth0", "10.9.0.1/24", "10.9.0.2/24")
	rs := netip.MustParseAddr("10.9.0.2")
	check := func(want string) {
		t.Helper()
		a.Do(t, func() {
			why, down := EgressDown(rs)
			if (want == "") == down || !strings.Contains(why, want) {
				t.Errorf("EgressDown: %q %v, want %q", why, down, want)
			}
		})
	}
	check("")
	a.Do(t, func() {
		if why, down := EgressDown(netip.MustParseAddr("198.51.100.1")); !down || !strings.Contains(why, "no route") {
			t.Errorf("no route: %q %v", why, down)
		}
	})
	// The peer goes down: our side loses its carrier.
	l, _ := b.NL.LinkByName("eth0")
	b.NL.LinkSetDown(l)
	nstest.WaitFor(t, 2*time.Second, "no carrier", func() bool {
		var down bool
		a.Do(t, func() { _, down = EgressDown(rs) })
		return down
	})
	check("has no carrier")
	b.NL.LinkSetUp(l)
	// Our own interface down: the route goes with it.
	m, _ := a.NL.LinkByName("eth0")
	a.NL.LinkSetDown(m)
	check("no route")
}
