package director

import (
	"fmt"

	"github.com/directord/directord/config"
	"github.com/directord/directord/ipvs"
)

// timeouts keeps the kernel's IPVS connection timeouts as lvs_timeouts
// asks, and the kernel's own from before the first change, which go back
// when the file no longer sets them (a reload) and at stop, as keepalived
// does (its libipvs saves them at the first ipvs_set_timeout, and
// ipvs_stop and a reload without lvs_timeouts restore them).
type timeouts struct {
	orig *ipvs.Timeouts // the kernel's, read before the first change
	set  bool           // the kernel holds ours
}

// apply sets the timeouts t asks for (a field it leaves unset is the
// kernel's original), or, with t nil or empty, puts the originals back.
func (s *timeouts) apply(k Kernel, t *config.LVSTimeouts) error {
	if t == nil || *t == (config.LVSTimeouts{}) {
		return s.restore(k)
	}
	if s.orig == nil {
		o, err := k.Timeouts()
		if err != nil {
			return fmt.Errorf("lvs_timeouts: reading the kernel's before changing them: %w", err)
		}
		s.orig = &o
	}
	want := *s.orig
	if t.TCP > 0 {
		want.TCP = t.TCP
	}
	if t.TCPFin > 0 {
		want.TCPFin = t.TCPFin
	}
	if t.UDP > 0 {
		want.UDP = t.UDP
	}
	if err := k.SetTimeouts(want); err != nil {
		return fmt.Errorf("lvs_timeouts: %w", err)
	}
	s.set = true
	return nil
}

// restore puts the kernel's original timeouts back, if ours are set.
func (s *timeouts) restore(k Kernel) error {
	if !s.set || s.orig == nil {
		return nil
	}
	if err := k.SetTimeouts(*s.orig); err != nil {
		return fmt.Errorf("lvs_timeouts: restoring the kernel's: %w", err)
	}
	s.set = false
	return nil
}
