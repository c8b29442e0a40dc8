package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoGoBGP: directord does not link GoBGP or gRPC (their package init
// alone cost 6 MB of idle RSS); the speaker runs in directord-bgp.
// protobuf is allowed: Prometheus's client_golang needs it.
func TestNoGoBGP(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	var bad []string
	for p := range strings.Lines(string(out)) {
		p = strings.TrimSpace(p)
		if strings.HasPrefix(p, "github.com/osrg/gobgp") || strings.HasPrefix(p, "google.golang.org/grpc") {
			bad = append(bad, p)
		}
	}
	if len(bad) > 0 {
		t.Errorf("directord links %d packages it must not (they belong in cmd/directord-bgp):\n%s", len(bad), strings.Join(bad, "\n"))
	}
}
