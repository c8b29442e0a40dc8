package script

import (
	"strconv"

	"github.com/directord/directord/config"
)

// Call is one script to run, with its extra arguments.
type Call struct {
	Script *config.Script
	Args   []string
}

// Notify is what a VRRP instance (typ INSTANCE) or sync group (typ GROUP)
// named name runs on entering state (MASTER, BACKUP, FAULT or STOP), in
// keepalived's order: the state's own script, then notify with
// keepalived's four arguments TYPE NAME STATE PRIORITY (a group's
// priority is 0). It is the one mapping from a state to its scripts.
func Notify(n *config.Notify, typ, name, state string, prio int) []Call {
	var out []Call
	var own *config.Script
	switch state {
	case "MASTER":
		own = n.Master
	case "BACKUP":
		own = n.Backup
	case "FAULT":
		own = n.Fault
	case "STOP":
		own = n.Stop
	case "DELETED":
		own = n.Deleted
	}
	if own != nil {
		out = append(out, Call{Script: own})
	}
	if n.Any != nil {
		out = append(out, Call{Script: n.Any, Args: []string{typ, name, state, strconv.Itoa(prio)}})
	}
	return out
}

// RealServer is the script of a real server that went up (notify_up) or
// down (notify_down); nil if none.
func RealServer(rs *config.RealServer, up bool) *config.Script {
	if up {
		return rs.NotifyUp
	}
	return rs.NotifyDown
}

// Quorum is the script of a virtual server that gained (quorum_up) or
// lost (quorum_down) its quorum; nil if none.
func Quorum(vs *config.VirtualServer, up bool) *config.Script {
	if up {
		return vs.QuorumUp
	}
	return vs.QuorumDown
}
