package vrrp

import (
	"errors"
	"os"
	"sync"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// linkWatch follows the link changes of one network namespace: an
// rtnetlink socket joined to RTNLGRP_LINK.
//
// # Network namespaces
//
// The socket belongs to the namespace of the thread that opens it, which
// is why openLinkWatch must run inside the instances' namespace (NewNode
// does). netlink.LinkSubscribeWithOptions with a Namespace would setns(2)
// into it instead, even when the thread is already there, and setns needs
// CAP_SYS_ADMIN: the daemon would need a capability it has no other use
// for.
//
// The socket is never replaced: when the kernel drops messages because the
// socket's buffer is full (ENOBUFS), it stays joined, and lost says so,
// for the reader of updates to read every link afresh.
type linkWatch struct {
	sock    *nl.NetlinkSocket
	updates chan netlink.LinkUpdate
	lost    chan struct{} // one pending signal at most
	stop    chan struct{}
	done    chan struct{} // the reader has returned
	closing sync.Once
}

// linkWatchBuffer is the socket's receive buffer: room for a burst of
// link changes (a bond or many VLANs going down at once) before ENOBUFS.
const linkWatchBuffer = 1 << 20

// openLinkWatch subscribes, on the calling thread's namespace.
func openLinkWatch() (*linkWatch, error) {
	s, err := nl.Subscribe(unix.NETLINK_ROUTE, unix.RTNLGRP_LINK)
	if err != nil {
		return nil, err
	}
	s.SetReceiveBufferSize(linkWatchBuffer, false) // the default is a smaller room, no worse
	w := &linkWatch{sock: s, updates: make(chan netlink.LinkUpdate, 64), lost: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
	go w.read()
	return w, nil
}

// read passes every link message on until Close.
func (w *linkWatch) read() {
	defer close(w.done)
	for {
		msgs, from, err := w.sock.Receive()
		if err != nil {
			select {
			case <-w.stop:
				return // closed, whichever error that gave
			default:
			}
			if errors.Is(err, os.ErrClosed) {
				return
			}
			// ENOBUFS: messages were lost; anything else we cannot tell
			// from it. Either way the state is read afresh.
			select {
			case w.lost <- struct{}{}:
			default:
			}
			continue
		}
		if from.Pid != nl.PidKernel {
			continue
		}
		for _, m := range msgs {
			if m.Header.Type != unix.RTM_NEWLINK && m.Header.Type != unix.RTM_DELLINK {
				continue
			}
			h := unix.NlMsghdr(m.Header)
			l, err := netlink.LinkDeserialize(&h, m.Data)
			if err != nil {
				continue
			}
			select {
			case w.updates <- netlink.LinkUpdate{IfInfomsg: *nl.DeserializeIfInfomsg(m.Data), Header: h, Link: l}:
			case <-w.stop:
				return
			}
		}
	}
}

// Close ends the subscription and returns when its goroutine has.
func (w *linkWatch) Close() {
	w.closing.Do(func() {
		close(w.stop)
		w.sock.Close()
		<-w.done
	})
}
