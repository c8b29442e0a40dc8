package vrrp

import (
	"bytes"
	"errors"
	"log/slog"
	"net/netip"
	"strings"
	"testing"

	"github.com/directord/directord/config"
)

// failingFirewall refuses every change.
type failingFirewall struct{}

func (failingFirewall) Drop([]netip.Addr, bool) error { return errors.New("nft: refused") }

// TestInstanceLogAttributes checks that an instance's records carry its
// name and VRID (docs/operations.md's instance and vrid), here a failed
// firewall change's, which named the instance alone before.
func TestInstanceLogAttributes(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	in := &instance{node: &Node{log: log, fw: failingFirewall{}},
		cfg: &config.Instance{Name: "VI_1", VRID: 51, Priority: 100}}
	in.firewall(true)
	got := buf.String()
	for _, want := range []string{"msg=\"vrrp firewall\"", "instance=VI_1", "vrid=51", "err=\"nft: refused\""} {
		if !strings.Contains(got, want) {
			t.Errorf("log %q lacks %s", got, want)
		}
	}
}
