package vrrp

import (
	"errors"
	"log/slog"
	"net/netip"
	"strings"
	"testing"

	"github.com/directord/directord/config"
)

// TestGuardianReads: a goodbye ends the guardian quietly; messages it
// cannot read end it without acting (it cannot tell the daemon is dead);
// the pipe's end, clean or in the middle of a message, is the daemon's
// death.
func TestGuardianReads(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	empty := `{"testament":{"adverts":[],"addrs":[]}}` + "\n"
	for _, tt := range []struct {
		name, in string
		died     bool
		err      bool
	}{
		{"bye", empty + `{"bye":true}` + "\n", false, false},
		{"garbage", empty + "not json\n", false, true},
		{"end", empty, true, false},
		{"end mid-message", empty + `{"testament":{"adv`, true, false},
		{"nothing", "", true, false},
	} {
		err := RunGuardian(strings.NewReader(tt.in), nil, log)
		died := errors.Is(err, ErrDaemonDied)
		if died != tt.died || (err != nil && !died) != tt.err {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
}

// TestTestamentSkipsAH: an AH master gets no priority 0 advert in the
// testament (its sequence number at the daemon's death is unknown; a plain
// advert its peer would refuse); a PASS master does.
func TestTestamentSkipsAH(t *testing.T) {
	var got Testament
	n := &Node{addrs: NewAddrs(nil), will: func(w Testament) { got = w }}
	for i, auth := range []string{"PASS", "AH"} {
		in := &instance{node: n, cfg: &config.Instance{Name: auth, Interface: "eth0"},
			params: Params{Version: 2, VRID: uint8(51 + i)}, primary: netip.MustParseAddr("192.0.2.1"),
			dsts: []netip.Addr{Group4}, vips: addrs("192.0.2.100"), sock: &sock{}}
		in.expect.AuthType = AuthSimple
		if auth == "AH" {
			in.expect.AuthType, in.ah = AuthAH, &AHState{Key: NewAHKey("x")}
		}
		in.state.Store(uint32(Master))
		n.insts = append(n.insts, in)
	}
	n.bequeath()
	if len(got.Adverts) != 1 || got.Adverts[0].Instance != "PASS" {
		t.Errorf("testament adverts: %+v, want the PASS instance's only", got.Adverts)
	}
}
