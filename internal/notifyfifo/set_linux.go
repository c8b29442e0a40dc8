package notifyfifo

import (
	"log/slog"

	"github.com/directord/directord/config"
	"github.com/directord/directord/internal/script"
)

// Set is a configuration's notify FIFOs: notify_fifo, which takes every
// line, and the VRRP and LVS ones. A FIFO that cannot be made or opened
// is logged and left out, as keepalived does; the nil Set writes nothing.
type Set struct {
	Global, VRRP, LVS *FIFO
}

// OpenSet opens the FIFOs of g (each FIFO once, and its script once,
// where keepalived's two processes open notify_fifo and run its script
// each).
func OpenSet(g *config.Global, r script.Runner, log *slog.Logger) *Set {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Set{}
	open := func(nf *config.NotifyFIFO, kw string) *FIFO {
		if nf == nil {
			return nil
		}
		f, err := Open(nf, r, log)
		if err != nil {
			log.Error("notify fifo: not written", "keyword", kw, "at", nf.Pos.String(), "err", err)
			return nil
		}
		return f
	}
	s.Global = open(g.NotifyFIFO, "notify_fifo")
	s.VRRP = open(g.VRRPNotifyFIFO, "vrrp_notify_fifo")
	s.LVS = open(g.LVSNotifyFIFO, "lvs_notify_fifo")
	return s
}

// WriteVRRP writes a VRRP line to notify_fifo and vrrp_notify_fifo.
func (s *Set) WriteVRRP(line string) {
	if s != nil {
		s.Global.write(line)
		s.VRRP.write(line)
	}
}

// WriteLVS writes an LVS line to notify_fifo and lvs_notify_fifo.
func (s *Set) WriteLVS(line string) {
	if s != nil {
		s.Global.write(line)
		s.LVS.write(line)
	}
}

// Close closes the FIFOs (notify_fifo last: a line in flight to both
// finds it still open).
func (s *Set) Close() {
	if s == nil {
		return
	}
	for _, f := range []*FIFO{s.VRRP, s.LVS, s.Global} {
		if f != nil {
			f.Close()
		}
	}
}

func (f *FIFO) write(line string) {
	if f != nil {
		f.Write(line)
	}
}
