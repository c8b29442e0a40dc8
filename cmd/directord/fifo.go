package main

import (
	"github.com/directord/directord/config"
	"github.com/directord/directord/internal/notifyfifo"
	"github.com/directord/directord/internal/script"
)

// The notify FIFOs live beside VRRP and the data plane, across reloads:
// the parts write through d.fifos, which a reload that changes the FIFO
// settings replaces (keepalived closes and reopens them at each reload:
// a FIFO that stays the same stays open here, and its script running).

// fifoConf is what of cfg's FIFOs this daemon opens: keepalived's VRRP
// process opens notify_fifo and vrrp_notify_fifo, its checker process
// notify_fifo and lvs_notify_fifo.
func (d *daemon) fifoConf(cfg *config.Config) config.Global {
	g := config.Global{ScriptUser: cfg.Global.ScriptUser, ScriptGroup: cfg.Global.ScriptGroup,
		EnableScriptSecurity: cfg.Global.EnableScriptSecurity}
	vrrp, lvs := d.runVRRP() && len(cfg.Instances) > 0, d.runLVS(cfg)
	if vrrp || lvs {
		g.NotifyFIFO = cfg.Global.NotifyFIFO
	}
	if vrrp {
		g.VRRPNotifyFIFO = cfg.Global.VRRPNotifyFIFO
	}
	if lvs {
		g.LVSNotifyFIFO = cfg.Global.LVSNotifyFIFO
	}
	return g
}

// openFIFOs opens cfg's FIFOs, unless they are those open already.
func (d *daemon) openFIFOs(cfg *config.Config) {
	g := d.fifoConf(cfg)
	key := config.Canonical(g)
	if key == d.fifoKey && d.fifos.Load() != nil {
		return
	}
	set := notifyfifo.OpenSet(&g, script.NewRunner(&g), d.log)
	old := d.fifos.Swap(set)
	d.fifoKey = key
	// Closing gives the old script a while to read its last lines: not
	// under d.mu.
	go old.Close()
}

// closeFIFOs closes the FIFOs at stop, after the last lines (STOP).
func (d *daemon) closeFIFOs() {
	d.fifos.Swap(nil).Close()
}

func (d *daemon) writeVRRP(line string) { d.fifos.Load().WriteVRRP(line) }
func (d *daemon) writeLVS(line string)  { d.fifos.Load().WriteLVS(line) }
