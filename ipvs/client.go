package ipvs

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
)

// Error is a failed IPVS operation: what was done, to what, and the
// kernel's answer (a syscall.Errno: compare with errors.Is, e.g.
// os.ErrExist, os.ErrNotExist).
type Error struct {
	Op     string // "add service", "delete destination", ...
	Object string // "TCP 192.0.2.1:80", "192.0.2.10:80 of TCP 192.0.2.1:80"
	Err    error
	// Service is the service of the operation that failed (Apply,
	// Validate), nil for an error of no one operation's (a dump, the
	// socket): what a caller tells its services apart by.
	Service *ServiceKey
}

func (e *Error) Error() string {
	if e.Object == "" {
		return "ipvs: " + e.Op + ": " + e.Err.Error()
	}
	return "ipvs: " + e.Op + " " + e.Object + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// kernelError is the kernel's answer to a request, in the words ipvsadm
// uses for it where the errno alone would mislead ("no such process" for
// a missing service).
type kernelError struct {
	errno syscall.Errno
	text  string // from the errno and the operation, or the kernel's extended ack
}

func (e *kernelError) Error() string { return e.text }
func (e *kernelError) Unwrap() error { return e.errno }

// Is makes the kernel's ESRCH for a missing service os.ErrNotExist too.
func (e *kernelError) Is(target error) bool {
	return target == os.ErrNotExist && e.errno == syscall.ESRCH
}

// explain turns a netlink error of op into a kernelError; other errors
// (a closed socket, a timeout) stay as they are.
func explain(op string, err error) error {
	var oe *netlink.OpError
	var errno syscall.Errno
	if !errors.As(err, &oe) || oe.Sequence == 0 || !errors.As(oe.Err, &errno) {
		return err
	}
	return errnoError(op, errno, oe.Message)
}

// errnoError is the kernel's errno for op in ipvsadm's words, with the
// kernel's extended acknowledgement, if any.
func errnoError(op string, errno syscall.Errno, extack string) error {
	text := errno.Error()
	service := strings.Contains(op, "service")
	if !service && !strings.Contains(op, "destination") {
		op = "" // the words below are a service's or a destination's
	}
	switch {
	case op == "":
	case errno == syscall.ESRCH:
		text = "no such service"
	case errno == syscall.EEXIST && service:
		text = "service already exists"
	case errno == syscall.EEXIST:
		text = "destination already exists"
	case errno == syscall.ENOENT && (op == "add service" || op == "edit service"):
		text = "scheduler or persistence engine not found (is its module loaded?)"
	case errno == syscall.ENOENT && !service:
		text = "no such destination"
	}
	if extack != "" {
		text += " (" + extack + ")"
	}
	return &kernelError{errno: errno, text: text}
}

// KernelError is the error a Client returns when the kernel answers op
// ("add service", "start sync daemon", ...) on object with errno. Fakes
// of the kernel (internal/ipvstest) answer with it, so that their errors
// read and compare (errors.Is) as the Client's do.
func KernelError(op, object string, errno syscall.Errno) error {
	return &Error{Op: op, Object: object, Err: errnoError(op, errno, "")}
}

// OpError is the error Apply reports when the kernel answers o with errno.
func OpError(o *Op, errno syscall.Errno) error {
	return o.fail(errnoError(o.Kind.String(), errno, ""))
}

// fail is o's Error, err its cause.
func (o *Op) fail(err error) *Error {
	k := o.Service.ServiceKey
	return &Error{Op: o.Kind.String(), Object: o.object(), Err: err, Service: &k}
}

// FailedServices is the set of services whose operations err (Apply's,
// one error or several joined) reports failed, and whether every error
// in it is one operation's: when not (a dump failed, the socket broke),
// which services the kernel holds as asked is not known.
func FailedServices(err error) (failed map[ServiceKey]bool, known bool) {
	failed, known = map[ServiceKey]bool{}, true
	var walk func(error)
	walk = func(err error) {
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		var e *Error
		if errors.As(err, &e) && e.Service != nil {
			failed[*e.Service] = true
			return
		}
		known = false
	}
	if err != nil {
		walk(err)
	}
	return failed, known
}

// ErrUnavailable is returned by Dial when the kernel has no IPVS.
var ErrUnavailable = errors.New("the kernel has no IPVS (generic netlink family IPVS not found; is the ip_vs module loaded?)")

// readBuffer is the size of the buffer a Client reads each datagram into.
// The kernel makes a dump's datagrams at most 32 KiB (netlink_recvmsg caps
// the size it learns from the reader's buffer there) and every other
// answer of IPVS is far smaller; a larger one would fail the read as
// truncated, not be cut short silently.
const readBuffer = 64 << 10

// Options configure a Client.
type Options struct {
	// NetNS is a file descriptor of the network namespace to work in
	// (from netns.Get or /var/run/netns/NAME); 0 means the caller's.
	NetNS int
	// Timeout bounds each exchange with the kernel; 0 means 10 s.
	Timeout time.Duration
}

// Client talks to the kernel's IPVS over generic netlink. It is safe for
// concurrent use; operations are serialised.
type Client struct {
	mu      sync.Mutex
	c       *netlink.Conn
	family  uint16
	timeout time.Duration
	// broken is set when a call ended without its answers (a timeout, an
	// overrun): the next call starts on a clean socket.
	broken bool
	redial func() (*netlink.Conn, error)
}

// Dial opens a Client.
func Dial(o *Options) (*Client, error) {
	if o == nil {
		o = &Options{}
	}
	dial := func() (*netlink.Conn, error) {
		// A buffer of its own for every read, big enough for any datagram
		// the kernel sends (a dump's are at most 32 KiB), spares the
		// read that would first peek at each one's size.
		c, err := netlink.Dial(genetlink.Protocol, &netlink.Config{NetNS: o.NetNS, MessageBufferSize: readBuffer})
		if err != nil {
			return nil, err
		}
		// Acknowledgements without a copy of the request, and the
		// kernel's own words in errors. Neither is essential: older
		// kernels ignore them.
		_ = c.SetOption(netlink.CapAcknowledge, true)
		_ = c.SetOption(netlink.ExtendedAcknowledge, true)
		// Room for a batch's acknowledgements (see Apply); root may go
		// beyond rmem_max.
		if rc, err := c.SyscallConn(); err == nil {
			rc.Control(func(fd uintptr) {
				if syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUFFORCE, 4<<20) != nil {
					_ = c.SetReadBuffer(4 << 20)
				}
			})
		}
		return c, nil
	}
	c, err := dial()
	if err != nil {
		return nil, &Error{Op: "open generic netlink socket", Err: err}
	}
	cl, err := newClient(c, o.Timeout)
	if err != nil {
		c.Close()
		return nil, err
	}
	cl.redial = dial
	return cl, nil
}

func newClient(c *netlink.Conn, timeout time.Duration) (*Client, error) {
	f, err := genetlink.NewConn(c).GetFamily(familyName)
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrUnavailable
	}
	if err != nil {
		return nil, &Error{Op: "look up generic netlink family", Object: familyName, Err: err}
	}
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	// The first deadline; execute arms the next when it has passed.
	_ = c.SetDeadline(time.Now().Add(timeout))
	return &Client{c: c, family: f.ID, timeout: timeout}, nil
}

// Close releases the socket.
func (c *Client) Close() error { return c.c.Close() }

func (c *Client) request(m genetlink.Message, flags netlink.HeaderFlags) netlink.Message {
	b, _ := m.MarshalBinary() // cannot fail: it only copies
	return netlink.Message{
		Header: netlink.Header{Type: netlink.HeaderType(c.family), Flags: netlink.Request | flags},
		Data:   b,
	}
}

// execute sends one request and returns the replies, decoded as generic
// netlink messages. Answers to earlier requests (left by a call that
// timed out) are skipped by their sequence number.
//
// The timeout is kept without reading the clock on every call: reading
// it costs a system call in some guests (User-Mode Linux), and setting a
// deadline reads it twice more, which was a third of a resync's time
// there (1,000 dumps). The socket keeps the deadline an earlier call set;
// when it has passed, the call arms a new one, once, and goes on. The
// kernel does a generic netlink request's work inside sendmsg, so Send
// returns once the answer is queued, however long the work took
// (stopping a sync daemon waits for its thread), and a deadline that
// passed meanwhile is rearmed rather than read as a timeout. A call so
// waits for its answer at least the timeout and at most twice it.
func (c *Client) execute(m genetlink.Message, flags netlink.HeaderFlags) ([]genetlink.Message, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.recover(); err != nil {
		return nil, err
	}
	rearmed := false
	rearm := func(err error) bool {
		if rearmed || !errors.Is(err, os.ErrDeadlineExceeded) {
			return false
		}
		rearmed = true
		_ = c.c.SetDeadline(time.Now().Add(c.timeout))
		return true
	}
	req, err := c.c.Send(c.request(m, flags))
	if err != nil && rearm(err) {
		// Nothing was sent: a write past its deadline fails before
		// the system call, or after it found no room.
		req, err = c.c.Send(c.request(m, flags))
	}
	if err != nil {
		c.broken = true
		return nil, err
	}
	seq := req.Header.Sequence
	var out []genetlink.Message
	for {
		// Message by message, not Receive: a deadline fails a read
		// before it takes a datagram, so one that passed in the middle
		// of a dump can be rearmed without losing its first parts.
		done := flags&netlink.Dump != 0 // the whole dump, unless it failed
		var failed error
		for r, err := range c.c.ReceiveIter() {
			if err != nil {
				failed = err
				break
			}
			if r.Header.Sequence != seq {
				continue
			}
			if r.Header.Type == netlink.Error { // the acknowledgement
				done = true
				continue
			}
			var gm genetlink.Message
			if err := gm.UnmarshalBinary(r.Data); err != nil {
				c.broken = true // the rest of the answer is left unread
				return nil, err
			}
			out = append(out, gm)
			if flags&netlink.Acknowledge == 0 {
				done = true
			}
		}
		if failed != nil {
			var oe *netlink.OpError
			switch {
			case errors.As(failed, &oe) && oe.Sequence == seq:
				return nil, failed // the kernel's answer
			case errors.As(failed, &oe) && oe.Sequence != 0:
				continue // an earlier request's
			case rearm(failed):
				continue
			}
			c.broken = true // a timeout, an overrun: the socket's state is unknown
			return nil, failed
		}
		if done {
			return out, nil
		}
	}
}

// recover makes a socket whose state is unknown usable again: a new one
// when the Client can dial, else one drained of what is queued on it.
func (c *Client) recover() error {
	if !c.broken {
		return nil
	}
	if c.redial != nil {
		nc, err := c.redial()
		if err != nil {
			return &Error{Op: "reopen generic netlink socket", Err: err}
		}
		c.c.Close()
		c.c = nc
		_ = c.c.SetDeadline(time.Now().Add(c.timeout))
		c.broken = false
		return nil
	}
	_ = c.c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	for {
		if _, err := c.c.Receive(); err != nil {
			var oe *netlink.OpError
			if errors.As(err, &oe) && oe.Sequence != 0 {
				continue // a queued error answer
			}
			break
		}
	}
	c.broken = false
	return nil
}

func (c *Client) do(op, object string, m genetlink.Message, err error) error {
	if err == nil {
		_, err = c.execute(m, netlink.Acknowledge)
	}
	if err != nil {
		return &Error{Op: op, Object: object, Err: explain(op, err)}
	}
	return nil
}

// Info reports the kernel's IPVS version and connection table size.
func (c *Client) Info() (Info, error) {
	ms, err := c.execute(message(cmdGetInfo, nil), 0)
	if err == nil && len(ms) != 1 {
		err = fmt.Errorf("%d replies", len(ms))
	}
	var i Info
	if err == nil {
		i, err = infoFromMessage(ms[0])
	}
	if err != nil {
		return i, &Error{Op: "get info", Err: err}
	}
	return i, nil
}

// Services lists the virtual services.
func (c *Client) Services() ([]Service, error) {
	ms, err := c.execute(message(cmdGetService, nil), netlink.Dump)
	if err != nil {
		return nil, &Error{Op: "list services", Err: err}
	}
	out := make([]Service, 0, len(ms))
	for _, m := range ms {
		s, err := serviceFromMessage(m)
		if err != nil {
			return nil, &Error{Op: "list services", Err: fmt.Errorf("decode: %w", err)}
		}
		out = append(out, s)
	}
	return out, nil
}

// Service gets one virtual service; the error is os.ErrNotExist (by
// errors.Is) when there is none.
func (c *Client) Service(k ServiceKey) (Service, error) {
	s := Service{ServiceKey: k}
	m, err := serviceRequest(cmdGetService, &s)
	var ms []genetlink.Message
	if err == nil {
		ms, err = c.execute(m, 0)
	}
	if err == nil && len(ms) != 1 {
		err = fmt.Errorf("%d replies", len(ms))
	}
	if err == nil {
		s, err = serviceFromMessage(ms[0])
	}
	if err != nil {
		return s, &Error{Op: "get service", Object: k.String(), Err: explain("get service", err)}
	}
	return s, nil
}

// CreateService adds a virtual service.
func (c *Client) CreateService(s Service) error {
	m, err := serviceRequest(cmdNewService, &s)
	return c.do("add service", s.ServiceKey.String(), m, err)
}

// UpdateService changes a virtual service's scheduler, flags and
// persistence; its destinations and their connections stay.
func (c *Client) UpdateService(s Service) error {
	m, err := serviceRequest(cmdSetService, &s)
	return c.do("edit service", s.ServiceKey.String(), m, err)
}

// DeleteService removes a virtual service and its destinations.
func (c *Client) DeleteService(k ServiceKey) error {
	s := Service{ServiceKey: k}
	m, err := serviceRequest(cmdDelService, &s)
	return c.do("delete service", k.String(), m, err)
}

// Destinations lists a service's destinations.
func (c *Client) Destinations(k ServiceKey) ([]Destination, error) {
	s := Service{ServiceKey: k}
	m, err := serviceRequest(cmdGetDest, &s)
	var ms []genetlink.Message
	if err == nil {
		ms, err = c.execute(m, netlink.Dump)
	}
	if err != nil {
		return nil, &Error{Op: "list destinations of", Object: k.String(), Err: err}
	}
	out := make([]Destination, 0, len(ms))
	for _, m := range ms {
		d, err := destFromMessage(m, k.Family)
		if err != nil {
			return nil, &Error{Op: "list destinations of", Object: k.String(), Err: fmt.Errorf("decode: %w", err)}
		}
		out = append(out, d)
	}
	return out, nil
}

func destObject(k ServiceKey, d *Destination) string {
	return d.AddrPort().String() + " of " + k.String()
}

// CreateDestination adds a destination to a service.
func (c *Client) CreateDestination(k ServiceKey, d Destination) error {
	m, err := destRequest(cmdNewDest, k, &d)
	return c.do("add destination", destObject(k, &d), m, err)
}

// UpdateDestination changes a destination's weight, forwarding method
// and thresholds, keeping its connections.
func (c *Client) UpdateDestination(k ServiceKey, d Destination) error {
	m, err := destRequest(cmdSetDest, k, &d)
	return c.do("edit destination", destObject(k, &d), m, err)
}

// DeleteDestination removes the destination at d's address and port.
func (c *Client) DeleteDestination(k ServiceKey, d Destination) error {
	m, err := destRequest(cmdDelDest, k, &d)
	return c.do("delete destination", destObject(k, &d), m, err)
}

// Flush removes every service, as ipvsadm -C does. directord itself
// never calls it: it removes only what it owns.
func (c *Client) Flush() error {
	return c.do("flush", "", message(cmdFlush, nil), nil)
}

// Zero resets every service's counters.
func (c *Client) Zero() error {
	return c.do("zero counters", "", message(cmdZero, nil), nil)
}

// Timeouts reads the TCP, TCP FIN and UDP connection timeouts.
func (c *Client) Timeouts() (Timeouts, error) {
	ms, err := c.execute(message(cmdGetConfig, nil), 0)
	if err == nil && len(ms) != 1 {
		err = fmt.Errorf("%d replies", len(ms))
	}
	var t Timeouts
	if err == nil {
		t, err = timeoutsFromMessage(ms[0])
	}
	if err != nil {
		return t, &Error{Op: "get timeouts", Err: err}
	}
	return t, nil
}

// SetTimeouts sets the non-zero connection timeouts (whole seconds).
func (c *Client) SetTimeouts(t Timeouts) error {
	m, err := timeoutsRequest(t)
	return c.do("set timeouts", "", m, err)
}

// SyncDaemons lists the running sync daemons (at most a master and a
// backup).
func (c *Client) SyncDaemons() ([]SyncDaemon, error) {
	ms, err := c.execute(message(cmdGetDaemon, nil), netlink.Dump)
	if err != nil {
		return nil, &Error{Op: "list sync daemons", Err: err}
	}
	var out []SyncDaemon
	for _, m := range ms {
		d, err := daemonFromMessage(m)
		if err != nil {
			return nil, &Error{Op: "list sync daemons", Err: fmt.Errorf("decode: %w", err)}
		}
		out = append(out, d)
	}
	return out, nil
}

// StartSyncDaemon starts a master or backup sync daemon.
func (c *Client) StartSyncDaemon(d SyncDaemon) error {
	m, err := daemonRequest(cmdNewDaemon, &d)
	return c.do("start sync daemon", d.String(), m, err)
}

// StopSyncDaemon stops the sync daemon of the given role.
//
// The kernel does not answer the stop of a daemon whose thread has not
// yet run, as after a start a moment before: kthread_stop returns -EINTR,
// stop_sync_thread passes it on, and netlink_rcv_skb sends no
// acknowledgement for -EINTR. The daemon is stopped all the same. So the
// stop is followed by a list of the daemons, whose answer proves the stop
// was done: a stop left unanswered worked if the list lacks its role.
func (c *Client) StopSyncDaemon(s SyncState) error {
	d := SyncDaemon{State: s}
	m, err := daemonRequest(cmdDelDaemon, &d)
	if err == nil {
		err = c.stopDaemon(m, s)
	}
	if err != nil {
		return &Error{Op: "stop sync daemon", Object: s.String(), Err: explain("stop sync daemon", err)}
	}
	return nil
}

// stopDaemon sends the stop m, then a list of the daemons, and reads
// both answers (see StopSyncDaemon).
func (c *Client) stopDaemon(m genetlink.Message, s SyncState) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.recover(); err != nil {
		return err
	}
	_ = c.c.SetDeadline(time.Now().Add(c.timeout))
	stop, err := c.c.Send(c.request(m, netlink.Acknowledge))
	var list netlink.Message
	if err == nil {
		list, err = c.c.Send(c.request(message(cmdGetDaemon, nil), netlink.Dump))
	}
	if err != nil {
		c.broken = true
		return err
	}
	_ = c.c.SetReadDeadline(time.Now().Add(c.timeout))
	var answer error
	answered := false
	for {
		replies, err := c.c.Receive()
		if err != nil {
			var oe *netlink.OpError
			switch {
			case errors.As(err, &oe) && oe.Sequence == stop.Header.Sequence:
				answer, answered = err, true // the kernel's refusal
				continue
			case errors.As(err, &oe) && oe.Sequence == list.Header.Sequence:
				return err // the list's
			case errors.As(err, &oe) && oe.Sequence != 0:
				continue // an earlier request's
			}
			c.broken = true
			return err
		}
		if len(replies) > 0 && replies[0].Header.Sequence == stop.Header.Sequence {
			answered = true // the acknowledgement
			continue
		}
		if len(replies) > 0 && replies[0].Header.Sequence != list.Header.Sequence {
			continue // an earlier request's
		}
		// The list: the kernel has done the stop.
		if answered {
			return answer
		}
		for _, r := range replies {
			var gm genetlink.Message
			if err := gm.UnmarshalBinary(r.Data); err != nil {
				return err
			}
			if d, err := daemonFromMessage(gm); err == nil && d.State == s {
				return errors.New("no answer from the kernel, and the daemon still runs")
			}
		}
		return nil
	}
}
