package ipvs

import (
	"errors"
	"fmt"
	"time"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
)

// OpKind is what an Op does.
type OpKind uint8

// The operations on the table.
const (
	AddService OpKind = iota + 1
	EditService
	DelService
	AddDest
	EditDest
	DelDest
)

var opNames = [...]string{
	AddService:  "add service",
	EditService: "edit service",
	DelService:  "delete service",
	AddDest:     "add destination",
	EditDest:    "edit destination",
	DelDest:     "delete destination",
}

func (k OpKind) String() string {
	if int(k) < len(opNames) && opNames[k] != "" {
		return opNames[k]
	}
	return fmt.Sprintf("op-%d", k)
}

// Op is one change to the kernel's table: a service's (Dest unused), or
// one of its destinations'.
type Op struct {
	Kind    OpKind
	Service Service
	Dest    Destination
}

// object names what the op changes.
func (o *Op) object() string {
	switch o.Kind {
	case AddDest, EditDest, DelDest:
		return destObject(o.Service.ServiceKey, &o.Dest)
	}
	return o.Service.ServiceKey.String()
}

// String says what the op does, with the values it sets: "add destination
// 192.0.2.10:80 of TCP 192.0.2.1:80 (route, weight 1)".
func (o Op) String() string {
	s := o.Kind.String() + " " + o.object()
	switch o.Kind {
	case AddService, EditService:
		s += fmt.Sprintf(" (%s", o.Service.Scheduler)
		if o.Service.Flags != 0 {
			s += ", flags " + o.Service.Flags.String()
		}
		if o.Service.Flags&Persistent != 0 {
			s += fmt.Sprintf(", persistent %s", o.Service.Timeout)
		}
		s += ")"
	case AddDest, EditDest:
		s += fmt.Sprintf(" (%s, weight %d)", o.Dest.Forward, o.Dest.Weight)
	}
	return s
}

func (o *Op) message() (genetlink.Message, error) {
	switch o.Kind {
	case AddService:
		return serviceRequest(cmdNewService, &o.Service)
	case EditService:
		return serviceRequest(cmdSetService, &o.Service)
	case DelService:
		return serviceRequest(cmdDelService, &o.Service)
	case AddDest:
		return destRequest(cmdNewDest, o.Service.ServiceKey, &o.Dest)
	case EditDest:
		return destRequest(cmdSetDest, o.Service.ServiceKey, &o.Dest)
	case DelDest:
		return destRequest(cmdDelDest, o.Service.ServiceKey, &o.Dest)
	}
	return genetlink.Message{}, fmt.Errorf("unknown operation %d", o.Kind)
}

// Validate returns the error Apply reports for o without asking the
// kernel (a value the request cannot carry: a negative weight, a
// netmask too long), or nil.
func (o *Op) Validate() error {
	if _, err := o.message(); err != nil {
		return o.fail(err)
	}
	return nil
}

// batchSize bounds the requests sent in one write: the kernel answers
// each that fails with an error that must fit the socket's receive
// buffer (a few hundred bytes of it each, whatever their length).
const batchSize = 256

// Apply carries out ops in order. It writes them to the kernel in batches
// (one system call for up to batchSize requests, instead of one each), and
// the kernel answers only the requests that fail and the last of each
// batch (netlink sends an error always, an acknowledgement only when the
// request asks for one), so that a batch costs one read, not one per op,
// and each failed op is still reported: the error joins one *Error per
// failure, and the ops after a failure are still carried out, as the
// kernel would.
func (c *Client) Apply(ops []Op) error {
	var errs []error
	for len(ops) > 0 {
		n := min(len(ops), batchSize)
		errs = append(errs, c.applyBatch(ops[:n])...)
		ops = ops[n:]
	}
	return errors.Join(errs...)
}

func (c *Client) applyBatch(ops []Op) []error {
	var errs []error
	msgs := make([]netlink.Message, 0, len(ops))
	index := make([]int, 0, len(ops)) // msgs[i] is ops[index[i]]
	for i := range ops {
		m, err := ops[i].message()
		if err != nil {
			errs = append(errs, ops[i].fail(err))
			continue
		}
		msgs = append(msgs, c.request(m, 0))
		index = append(index, i)
	}
	if len(msgs) == 0 {
		return errs
	}
	// The last request's answer, an acknowledgement or its error, comes
	// after every other answer of the batch: the kernel handles the
	// requests of a write in order.
	msgs[len(msgs)-1].Header.Flags |= netlink.Acknowledge

	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.recover(); err != nil {
		for _, i := range index {
			errs = append(errs, ops[i].fail(err))
		}
		return errs
	}
	_ = c.c.SetDeadline(time.Now().Add(c.timeout))
	sent, err := c.c.SendMessages(msgs)
	if err != nil {
		c.broken = true
		for _, i := range index {
			errs = append(errs, ops[i].fail(err))
		}
		return errs
	}
	// Answers to earlier requests are skipped. next is the first request
	// whose outcome is not known: those before it without an error
	// succeeded, as an answer to a later one shows.
	first := sent[0].Header.Sequence
	ours := func(seq uint32) bool { return seq-first < uint32(len(sent)) }
	next := 0
	fail := func(j int, err error) {
		i := index[j]
		errs = append(errs, ops[i].fail(explain(ops[i].Kind.String(), err)))
	}
	failRest := func(err error) {
		c.broken = true // the rest of the answers may still come
		for ; next < len(sent); next++ {
			fail(next, err)
		}
	}
	for next < len(sent) {
		replies, err := c.c.Receive()
		if err != nil {
			var oe *netlink.OpError
			switch {
			case errors.As(err, &oe) && ours(oe.Sequence) && int(oe.Sequence-first) >= next:
				j := int(oe.Sequence - first)
				fail(j, err)
				next = j + 1
			case errors.As(err, &oe) && oe.Sequence != 0 && !ours(oe.Sequence):
				// an earlier request's
			default:
				// A broken socket, a timeout or an overrun: the rest
				// are unknown.
				failRest(err)
			}
			continue
		}
		for _, r := range replies {
			switch {
			case next >= len(sent) || !ours(r.Header.Sequence):
				continue
			case r.Header.Type != netlink.Error || r.Header.Sequence != sent[len(sent)-1].Header.Sequence:
				failRest(fmt.Errorf("unexpected reply %v", r.Header))
			default:
				next = len(sent) // the last one's acknowledgement
			}
		}
	}
	return errs
}
