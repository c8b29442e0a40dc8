// Package ipvstest decides whether a test that needs the kernel's IPVS can
// run here.
//
// The kernels of our machines have no IPVS and no loadable modules, so
// such tests skip on the host; `make integration` runs them again as root
// in a User-Mode Linux guest whose kernel has IPVS (integration/uml, see
// docs/testing.md). The guest sets DIRECTORD_REQUIRE_IPVS=1, which turns
// each skip into a failure: a guest that lost IPVS, root or a tool cannot
// pass by skipping everything.
//
// Kernel is the fake IPVS kernel of the tests that need none: it answers
// as an ipvs.Client over the real kernel does, which TestFakeMatchesKernel
// checks in the guest.
package ipvstest

import (
	"os"
	"os/exec"
	"testing"
)

// EnvRequire is the variable that turns skips into failures when it is "1".
const EnvRequire = "DIRECTORD_REQUIRE_IPVS"

// ProcFile exists when the running kernel has IPVS loaded.
const ProcFile = "/proc/net/ip_vs"

// Required reports whether the environment demands IPVS (EnvRequire=1):
// true in the User-Mode Linux guest of make integration.
func Required() bool { return os.Getenv(EnvRequire) == "1" }

// Available reports whether the running kernel has IPVS.
func Available() bool {
	_, err := os.Stat(ProcFile)
	return err == nil
}

// Require skips the test when the running kernel has no IPVS, or fails it
// if EnvRequire=1.
func Require(t testing.TB) {
	t.Helper()
	if Available() {
		return
	}
	if Required() {
		t.Fatalf("no IPVS in this kernel (%s is missing) although %s=1", ProcFile, EnvRequire)
	}
	t.Skip("no IPVS in this kernel: make integration runs this test in a User-Mode Linux guest")
}

// RequireRoot skips the test when it does not run as root, or fails it if
// EnvRequire=1.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if Required() {
		t.Fatalf("not root although %s=1", EnvRequire)
	}
	t.Skip("needs root (make integration runs its guest as root)")
}

// RequireCommand returns the path of the program name, skipping the test
// when it is not installed, or failing it if EnvRequire=1.
func RequireCommand(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	if Required() {
		t.Fatalf("%s: %v (%s=1)", name, err, EnvRequire)
	}
	t.Skipf("%s is not installed: %v", name, err)
	return ""
}
