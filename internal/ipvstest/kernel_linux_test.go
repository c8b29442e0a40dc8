package ipvstest

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/directord/directord/internal/nstest"
	"github.com/directord/directord/ipvs"
)

// TestFakeMatchesKernel runs the sequence against the kernel (in a
// namespace of the User-Mode Linux guest) and the fake, and compares
// both with the transcript: the fake cannot drift from the kernel, nor
// the transcript the host's tests compare the fake with. -update
// rewrites the transcript from the kernel.
func TestFakeMatchesKernel(t *testing.T) {
	Require(t)
	RequireRoot(t)
	ns := nstest.New(t, fmt.Sprintf("ipvsf-%d", os.Getpid()))
	peer := nstest.New(t, fmt.Sprintf("ipvsfp-%d", os.Getpid()))
	nstest.Link(t, ns, peer, syncLink, "sync1", "10.9.0.1/24", "10.9.0.2/24")
	c, err := ipvs.Dial(&ipvs.Options{NetNS: int(ns.NS)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	real := run(t, c)
	if *update {
		if err := os.WriteFile(transcriptFile, []byte(strings.Join(real, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	diff(t, "fake", run(t, fake()), "kernel", real)
	diff(t, "kernel", real, "transcript", readTranscript(t))
}
