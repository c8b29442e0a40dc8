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
