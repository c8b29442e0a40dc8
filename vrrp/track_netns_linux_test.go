package vrrp

import (
	"strings"
	"testing"
	"time"

	"github.com/directord/directord/internal/nstest"
)

// TestReverseWeightBesideKeepalived: keepalived (priority 100) and
// directord (95) both track lo, up, with weight 10 reverse: both take 10
// from their priority (keepalived logs "Changing effective priority from
// 100 to 90"), so keepalived (90) is master over directord (85).
func TestReverseWeightBesideKeepalived(t *testing.T) {
	nstest.RequireRoot(t)
	a, b := peers(t, "dd-rev")
	track := "track_interface {\n        lo weight 10 reverse\n    }"
	ka := nstest.Keepalived(t, b, nstest.Instance("ddb", 100, 2, "1", "192.0.2.100/24", track))
	nd := startNode(t, a, nstest.Instance("dda", 95, 2, "1", "192.0.2.100/24", track))
	nstest.WaitFor(t, 10*time.Second, "keepalived master, directord backup at 85", func() bool {
		st := nd.status(t)
		return st.Priority == 85 && st.State == Backup && b.HasAddr(t, "ddb", "192.0.2.100")
	})
	ka.Stop(10 * time.Second)
	if !strings.Contains(ka.Output(), "Changing effective priority from 100 to 90") {
		t.Error("keepalived did not take its priority to 90")
	}
}
