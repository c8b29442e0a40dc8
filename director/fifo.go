package director

import (
	"github.com/directord/directord/config"
	"github.com/directord/directord/internal/notifyfifo"
)

// fifoVS writes keepalived's "VS ... UP|DOWN" line where the quorum
// scripts run.
func (l *LVS) fifoVS(vs *config.VirtualServer, up bool) {
	if l.FIFO != nil {
		l.FIFO(notifyfifo.VSLine(vs, up))
	}
}

// fifoRS writes keepalived's "RS ... UP|DOWN" line where notify_up and
// notify_down run.
func (l *LVS) fifoRS(vs *config.VirtualServer, rs *config.RealServer, up bool) {
	if l.FIFO != nil {
		l.FIFO(notifyfifo.RSLine(vs, rs, up))
	}
}

// fifoOmegaStop writes, at stop, what keepalived's checker writes for a
// virtual server with omega: each live real server DOWN (alive: as last
// told, see stop), then the virtual server DOWN.
func (l *LVS) fifoOmegaStop(alive func(pool, rs int) bool) {
	for i, p := range l.pools {
		if !p.VS.Omega {
			continue
		}
		for j, rs := range p.VS.RealServers {
			if alive(i, j) {
				l.fifoRS(p.VS, rs, false)
			}
		}
		l.fifoVS(p.VS, false)
	}
}
