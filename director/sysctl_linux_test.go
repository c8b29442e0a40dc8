package director

import (
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/directord/directord/internal/ipvstest"
	"github.com/directord/directord/internal/nstest"
)

// TestNamespaceSysctls: the settings read and written are those of the
// namespace given, not directord's (in the guest, where IPVS is: make
// integration RUN=TestNamespaceSysctls UML_PACKAGES=./director).
func TestNamespaceSysctls(t *testing.T) {
	ipvstest.Require(t)
	ipvstest.RequireRoot(t)
	ns := nstest.New(t, fmt.Sprintf("sysctl-%d", os.Getpid()))
	// The namespace's settings exist once IPVS has been used in it.
	if out, err := exec.Command("ip", "netns", "exec", ns.Name, "ipvsadm", "-Ln").CombinedOutput(); err != nil {
		t.Fatalf("ipvsadm: %v\n%s", err, out)
	}
	s := NamespaceSysctls(int(ns.NS))
	if err := s.SetSysctl("sloppy_tcp", "1"); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Sysctl("sloppy_tcp"); err != nil || v != "1" {
		t.Errorf("the namespace's sloppy_tcp: %q, %v; want 1", v, err)
	}
	if v, err := (procSysctls{}).Sysctl("sloppy_tcp"); err == nil && v != "0" {
		t.Errorf("directord's own sloppy_tcp: %q, want 0 (untouched)", v)
	}
}
