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

func (n *Node) fifoGroup(name, state string) {
	if n.fifo != nil {
		n.fifo(notifyfifo.GroupLine(name, state))
	}
}
