package vrrp

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/directord/directord/internal/nstest"
)

// TestDisableLocalIGMP: with disable_local_igmp the Node's namespace
// reports no link-local group while it runs
// (net.ipv4.igmp_link_local_mcast_reports 0, as keepalived's
// set_disable_local_igmp), and has its value back after the stop; without
// the keyword nothing changes.
func TestDisableLocalIGMP(t *testing.T) {
	nstest.RequireRoot(t)
	a := nstest.New(t, "dd-igmp-a")
	b := nstest.New(t, "dd-igmp-b")
	nstest.Link(t, a, b, "ddi", "ddib", "192.0.2.1/24", "192.0.2.2/24")
	read := func() string {
		var v []byte
		var err error
		a.Do(t, func() { v, err = os.ReadFile(igmpLinkLocal) })
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(v))
	}
	if v := read(); v != "1" {
		t.Fatalf("a new namespace's %s is %s, want the kernel's default 1", igmpLinkLocal, v)
	}
	inst := nstest.Instance("ddi", 100, 3, "1", "192.0.2.100/24", "")
	plain := startNode(t, a, inst)
	nstest.HoldFor(t, 300*time.Millisecond, "reports on without the keyword", func() bool { return read() == "1" })
	plain.stop()
	na := startNode(t, a, "global_defs {\n disable_local_igmp\n}\n"+inst)
	if v := read(); v != "0" {
		t.Errorf("with disable_local_igmp, %s is %s while running, want 0", igmpLinkLocal, v)
	}
	na.stop()
	if v := read(); v != "1" {
		t.Errorf("after the stop, %s is %s, want 1 back", igmpLinkLocal, v)
	}
}
