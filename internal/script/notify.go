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

// The kinds of notify job: Job.Kind, and the label of the
// dropped-scripts metric.
const (
	KindVRRP      = "vrrp"
	KindSyncGroup = "sync_group"
	KindLVS       = "lvs"
)

// NotifyJobs are the Queue's jobs for a VRRP instance (typ INSTANCE) or a
// sync group (typ GROUP) named name entering state: Notify's calls, in
// its order, on the lane of that instance or group, so that they run in
// the order of its transitions.
func NotifyJobs(r Runner, n *config.Notify, typ, name, state string, prio int) []Job {
	key, kind := "instance "+name, KindVRRP
	if typ == "GROUP" {
		key, kind = "group "+name, KindSyncGroup
	}
	var out []Job
	for _, c := range Notify(n, typ, name, state, prio) {
		out = append(out, Job{Key: key, Kind: kind, Runner: r, Script: c.Script, Args: c.Args})
	}
	return out
}

// PoolJob is the Queue's job for a script of the data plane (quorum_up,
// quorum_down, notify_up, notify_down): one lane for them all, so that
// they run in the order of the transitions.
func PoolJob(r Runner, s *config.Script) Job {
	return Job{Key: "lvs", Kind: KindLVS, Runner: r, Script: s}
}

// RealServer is the script of a real server that went up (notify_up) or
// down (notify_down); nil if none.
func RealServer(rs *config.RealServer, up bool) *config.Script {
	if up {
		return rs.NotifyUp()
	}
	return rs.NotifyDown()
}

// Quorum is the script of a virtual server that gained (quorum_up) or
// lost (quorum_down) its quorum; nil if none.
func Quorum(vs *config.VirtualServer, up bool) *config.Script {
	if up {
		return vs.QuorumUp
	}
	return vs.QuorumDown
}
