package vrrp

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
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
