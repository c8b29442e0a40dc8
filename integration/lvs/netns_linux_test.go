package lvs

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/directord/directord/internal/nstest"
)

// netnsVS is a virtual server whose real server has no checker (always
// alive): the table directord programs at once.
const netnsVS = `virtual_server 10.1.0.100 80 {
    lb_algo rr
    lb_kind DR
    protocol TCP
    real_server 10.1.0.3 80 {
        weight 1
    }
}
`

// TestNetNamespaceIPVS: with net_namespace_ipvs NAME the virtual servers
// go to NAME's IPVS table, not to that of the namespace directord runs
// in; without a name, to the host's (PID 1's), from a directord that
// runs in another with net_namespace, as keepalived 2.2.7's
// open_ipvs_namespace. At stop they are removed from there.
func TestNetNamespaceIPVS(t *testing.T) {
	bin := binary(t)
	root := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("ipvsadm", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("ipvsadm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	const want = "-a -t 10.1.0.100:80 -r 10.1.0.3:80 -g -w 1"
	t.Run("named", func(t *testing.T) {
		lb := nstest.New(t, name(t, "lb"))
		other := nstest.New(t, name(t, "ipvs"))
		p := start(t, bin, lb, "net_namespace_ipvs "+other.Name+"\n"+netnsVS, "-C")
		nstest.WaitFor(t, 10*time.Second, "the service in "+other.Name, func() bool {
			return strings.Contains(ipvsadm(t, other, "-Sn"), want)
		})
		if got := ipvsadm(t, lb, "-Sn"); strings.TrimSpace(got) != "" {
			t.Errorf("directord's own namespace has a table:\n%s", got)
		}
		p.Stop(10 * time.Second)
		if got := ipvsadm(t, other, "-Sn"); strings.TrimSpace(got) != "" {
			t.Errorf("left at stop in %s:\n%s", other.Name, got)
		}
	})
	t.Run("the host's", func(t *testing.T) {
		if strings.TrimSpace(root("-Sn")) != "" {
			t.Skip("the guest's own table is in use")
		}
		lb := nstest.New(t, name(t, "lb"))
		// Started inside lb, which its net_namespace names (no second
		// exec); net_namespace_ipvs without a name sends IPVS to the
		// host's.
		file := filepath.Join(t.TempDir(), "keepalived.conf")
		if err := os.WriteFile(file, []byte("net_namespace "+lb.Name+"\nnet_namespace_ipvs\n"+netnsVS), 0o644); err != nil {
			t.Fatal(err)
		}
		p := nstest.Start(t, lb, bin, "-n", "-l", "-C", "--control-socket", "none", "-f", file)
		nstest.WaitFor(t, 10*time.Second, "the service in the host's namespace", func() bool {
			return strings.Contains(root("-Sn"), want)
		})
		if got := ipvsadm(t, lb, "-Sn"); strings.TrimSpace(got) != "" {
			t.Errorf("directord's namespace %s has a table:\n%s", lb.Name, got)
		}
		p.Stop(10 * time.Second)
		if got := root("-Sn"); strings.TrimSpace(got) != "" {
			t.Errorf("left at stop in the host's namespace:\n%s", got)
		}
	})
}
