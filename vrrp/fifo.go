package vrrp

import "github.com/directord/directord/internal/notifyfifo"

// NotifyFIFO makes the node write keepalived's notify FIFO lines
// (INSTANCE "VI_1" MASTER 100, GROUP "G" MASTER 0) through write, at each
// notify: where the generic notify script runs, with the same state and
// priority. write must not block (notifyfifo.Set's never does). Call it
// before Run.
func (n *Node) NotifyFIFO(write func(line string)) { n.fifo = write }

func (n *Node) fifoInstance(name, state string, prio int) {
	if n.fifo != nil {
		n.fifo(notifyfifo.InstanceLine(name, state, prio))
	}
}

// fifoPriority writes keepalived's MASTER_PRIORITY or BACKUP_PRIORITY
// line (a master, or any other state) when an instance with
// notify_priority_changes changes effective priority, as
// vrrp_set_effective_priority; the first priority computed is no change.
// It runs under n.retracking.
func (n *Node) fifoPriority(in *instance, p uint8) {
	if n.fifo == nil || !in.cfg.NotifyPriorityChanges {
		return
	}
	if n.fifoPrio == nil {
		n.fifoPrio = map[*instance]uint8{}
	}
	old, seen := n.fifoPrio[in]
	n.fifoPrio[in] = p
	if !seen || old == p {
		return
	}
	state := "BACKUP_PRIORITY"
	if State(in.state.Load()) == Master {
		state = "MASTER_PRIORITY"
	}
	n.fifoInstance(in.cfg.Name, state, int(p))
}

// fifoPriorityStart records an instance's priority at start: what later
// changes are measured from.
func (n *Node) fifoPriorityStart(in *instance, p uint8) {
	n.retracking.Lock()
	defer n.retracking.Unlock()
	if n.fifoPrio == nil {
		n.fifoPrio = map[*instance]uint8{}
	}
	if _, seen := n.fifoPrio[in]; !seen {
		n.fifoPrio[in] = p
	}
}

func (n *Node) fifoGroup(name, state string) {
	if n.fifo != nil {
		n.fifo(notifyfifo.GroupLine(name, state))
	}
}
