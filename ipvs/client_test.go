package ipvs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
)

// fakeKernel is a netlink.Socket that answers as the kernel does: the
// generic netlink controller resolves "IPVS", every IPVS request goes to
// handle, and each acknowledgement or error is a datagram of its own, as
// netlink_ack makes them (nltest would give them all in one).
type fakeKernel struct {
	family    uint16 // 0: the kernel has no IPVS
	handle    func(m genetlink.Message, flags netlink.HeaderFlags) ([]genetlink.Message, syscall.Errno)
	queue     [][]netlink.Message
	writes    int // SendMessages and Send calls
	requests  int
	noAnswers bool // drop every answer, as a wedged kernel would
	overrun   bool // the next Receive fails with ENOBUFS, answers still queued
	split     bool // a dump's answers one datagram each, as a long dump's come
	// The socket's deadline: deadlines counts the calls that set one;
	// expired fails every read and write with a timeout until the next.
	deadlines   int
	expired     bool
	expireAfter int // when not 0, the deadline passes after that many reads
	reads       int // datagrams read
}

func (k *fakeKernel) SetDeadline(time.Time) error {
	k.deadlines++
	k.expired = false
	return nil
}
func (k *fakeKernel) SetReadDeadline(t time.Time) error  { return k.SetDeadline(t) }
func (k *fakeKernel) SetWriteDeadline(t time.Time) error { return k.SetDeadline(t) }

// timeout is what a socket's read or write past its deadline returns.
var timeout = os.NewSyscallError("recvmsg", os.ErrDeadlineExceeded)

const fakePID = 4242

func (k *fakeKernel) Close() error { return nil }

func (k *fakeKernel) Send(m netlink.Message) error { return k.SendMessages([]netlink.Message{m}) }

func (k *fakeKernel) SendMessages(ms []netlink.Message) error {
	if k.expired {
		return timeout
	}
	k.writes++
	for _, m := range ms {
		k.requests++
		k.serve(m)
	}
	return nil
}

func (k *fakeKernel) errorMsg(req netlink.Message, errno syscall.Errno) netlink.Message {
	b := binary.NativeEndian.AppendUint32(nil, uint32(-int32(errno)))
	h, _ := req.MarshalBinary()
	b = append(b, h[:16]...) // NETLINK_CAP_ACK: the request's header only
	return netlink.Message{Header: netlink.Header{Type: netlink.Error, Sequence: req.Header.Sequence, PID: fakePID}, Data: b}
}

func (k *fakeKernel) serve(req netlink.Message) {
	if k.noAnswers {
		return
	}
	var gm genetlink.Message
	if err := gm.UnmarshalBinary(req.Data); err != nil {
		panic(err)
	}
	var replies []genetlink.Message
	var errno syscall.Errno
	switch req.Header.Type {
	case 0x10: // nlctrl: CTRL_CMD_GETFAMILY
		if k.family == 0 {
			errno = syscall.ENOENT
			break
		}
		ae := netlink.NewAttributeEncoder()
		ae.Uint16(1, k.family)   // CTRL_ATTR_FAMILY_ID
		ae.String(2, familyName) // CTRL_ATTR_FAMILY_NAME
		ae.Uint32(3, 1)          // CTRL_ATTR_VERSION
		b, _ := ae.Encode()
		replies = []genetlink.Message{{Header: genetlink.Header{Command: 1, Version: 2}, Data: b}}
	case netlink.HeaderType(k.family):
		replies, errno = k.handle(gm, req.Header.Flags)
	default:
		errno = syscall.EINVAL
	}
	if errno == syscall.EINTR {
		return // netlink_rcv_skb answers nothing for -EINTR
	}
	if errno != 0 {
		k.queue = append(k.queue, []netlink.Message{k.errorMsg(req, errno)})
		return
	}
	var dgram []netlink.Message
	flags := netlink.HeaderFlags(0)
	if req.Header.Flags&netlink.Dump != 0 {
		flags = netlink.Multi
	}
	for _, r := range replies {
		b, _ := r.MarshalBinary()
		dgram = append(dgram, netlink.Message{
			Header: netlink.Header{Type: req.Header.Type, Flags: flags, Sequence: req.Header.Sequence, PID: fakePID},
			Data:   b,
		})
	}
	if flags == netlink.Multi {
		dgram = append(dgram, netlink.Message{Header: netlink.Header{Type: netlink.Done, Flags: netlink.Multi,
			Sequence: req.Header.Sequence, PID: fakePID}, Data: make([]byte, 4)})
	}
	switch {
	case k.split:
		for _, m := range dgram {
			k.queue = append(k.queue, []netlink.Message{m})
		}
	case len(dgram) > 0:
		k.queue = append(k.queue, dgram)
	}
	if req.Header.Flags&netlink.Acknowledge != 0 {
		k.queue = append(k.queue, []netlink.Message{k.errorMsg(req, 0)})
	}
}

func (k *fakeKernel) Receive() ([]netlink.Message, error) {
	if k.expired {
		return nil, timeout
	}
	if k.overrun {
		k.overrun = false
		return nil, os.NewSyscallError("recvmsg", syscall.ENOBUFS)
	}
	if len(k.queue) == 0 {
		return nil, os.NewSyscallError("recvmsg", syscall.EAGAIN) // a real socket's deadline
	}
	d := k.queue[0]
	k.queue = k.queue[1:]
	k.reads++
	if k.expireAfter > 0 {
		k.expireAfter--
		k.expired = k.expireAfter == 0
	}
	return d, nil
}

func (k *fakeKernel) ReceiveIter() iter.Seq2[netlink.Message, error] {
	return func(yield func(netlink.Message, error) bool) {
		ms, err := k.Receive()
		if err != nil {
			yield(netlink.Message{}, err)
			return
		}
		for _, m := range ms {
			if !yield(m, nil) {
				return
			}
		}
	}
}

func dialFake(t *testing.T, k *fakeKernel) *Client {
	t.Helper()
	c, err := newClient(netlink.NewConn(k, fakePID), 0)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestDialWithoutIPVS(t *testing.T) {
	_, err := newClient(netlink.NewConn(&fakeKernel{}, fakePID), 0)
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("got %v, want ErrUnavailable", err)
	}
}

func TestServicesAndDestinationsFromDump(t *testing.T) {
	c := readCapture(t)
	var services, dests []genetlink.Message
	for _, m := range c.replies(t, "-Ln") {
		if m.Header.Command == cmdNewService {
			services = append(services, m)
		} else {
			dests = append(dests, m)
		}
	}
	k := &fakeKernel{family: 0x1c}
	var gotFlags []netlink.HeaderFlags
	k.handle = func(m genetlink.Message, flags netlink.HeaderFlags) ([]genetlink.Message, syscall.Errno) {
		gotFlags = append(gotFlags, flags)
		switch m.Header.Command {
		case cmdGetService:
			return services, 0
		case cmdGetDest:
			return dests[:4], 0 // the four of TCP 192.0.2.1:80
		}
		return nil, syscall.EINVAL
	}
	cl := dialFake(t, k)
	ss, err := cl.Services()
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 5 || ss[2].ServiceKey != vs1 {
		t.Fatalf("services %+v", ss)
	}
	ds, err := cl.Destinations(vs1)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 4 || ds[3].AddrPort() != netip.MustParseAddrPort("192.0.2.10:80") || ds[3].Weight != 5 {
		t.Fatalf("destinations %+v", ds)
	}
	for _, f := range gotFlags {
		if f != netlink.Request|netlink.Dump {
			t.Errorf("dump request flags %v", f)
		}
	}
}

func TestApplyBatchesAndReportsEachFailure(t *testing.T) {
	k := &fakeKernel{family: 0x1c}
	var seen []string
	k.handle = func(m genetlink.Message, flags netlink.HeaderFlags) ([]genetlink.Message, syscall.Errno) {
		var s Service
		var d Destination
		_ = nested(m.Data, attrService, func(ad *attrs) error {
			s, _ = decodeService(ad)
			return nil
		})
		if m.Header.Command == cmdNewDest {
			d, _ = destFromMessage(m, s.Family)
		}
		seen = append(seen, fmt.Sprintf("%d %s %s", m.Header.Command, s.ServiceKey, d.AddrPort()))
		switch {
		case m.Header.Command == cmdNewService && s.Port == 8007:
			return nil, syscall.EEXIST
		case m.Header.Command == cmdNewDest && d.Addr == netip.MustParseAddr("10.0.7.9"):
			return nil, syscall.ENOENT
		}
		return nil, 0
	}
	cl := dialFake(t, k)
	k.writes, k.reads = 0, 0

	// 100 services of 5 destinations: 600 requests, three writes, and
	// three reads more than the failures (the last of each batch asks
	// for an acknowledgement, the others are answered only if they fail).
	var ops []Op
	for i := range 100 {
		s := Service{ServiceKey: AddrKey(TCP, netip.AddrPortFrom(netip.MustParseAddr("192.0.2.1"), uint16(8000+i))), Scheduler: "rr"}
		ops = append(ops, Op{Kind: AddService, Service: s})
		for j := range 5 {
			ops = append(ops, Op{Kind: AddDest, Service: s, Dest: Destination{
				Addr: netip.AddrFrom4([4]byte{10, 0, byte(i), byte(5 + j)}), Port: 80, Forward: Route, Weight: 1}})
		}
	}
	err := cl.Apply(ops)
	if k.writes != 3 || len(seen) != 600 {
		t.Errorf("%d writes for %d requests, want 3 for 600", k.writes, len(seen))
	}
	if k.reads != 5 {
		t.Errorf("%d answers read, want 5: two errors, three acknowledgements", k.reads)
	}
	if !errors.Is(err, os.ErrExist) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("error %v: want both failures", err)
	}
	var n int
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var ie *Error
		if !errors.As(e, &ie) {
			t.Errorf("%v is not an *Error", e)
		}
		n++
	}
	want := "ipvs: add service TCP 192.0.2.1:8007: service already exists\n" +
		"ipvs: add destination 10.0.7.9:80 of TCP 192.0.2.1:8007: no such destination"
	if n != 2 || err.Error() != want {
		t.Errorf("got %d errors:\n%v\nwant:\n%s", n, err, want)
	}
	if len(k.queue) != 0 {
		t.Errorf("%d answers left unread", len(k.queue))
	}
}

func TestApplyDoesNotHangOnMissingAnswers(t *testing.T) {
	k := &fakeKernel{family: 0x1c}
	cl := dialFake(t, k)
	k.noAnswers = true
	err := cl.Apply([]Op{
		{Kind: AddService, Service: Service{ServiceKey: vs1, Scheduler: "rr"}},
		{Kind: DelService, Service: Service{ServiceKey: vs6}},
	})
	if err == nil || strings.Count(err.Error(), "\n") != 1 {
		t.Fatalf("got %v, want one error per op", err)
	}
}

func TestSingleOperationErrors(t *testing.T) {
	k := &fakeKernel{family: 0x1c}
	k.handle = func(m genetlink.Message, flags netlink.HeaderFlags) ([]genetlink.Message, syscall.Errno) {
		return nil, syscall.ESRCH // what the kernel answers for a missing service
	}
	cl := dialFake(t, k)
	err := cl.DeleteService(vs6)
	if err == nil || err.Error() != "ipvs: delete service UDP [2001:db8::1]:53: no such service" {
		t.Fatalf("got %v", err)
	}
	if !errors.Is(err, syscall.ESRCH) {
		t.Errorf("%v is not ESRCH", err)
	}
	err = cl.CreateService(Service{ServiceKey: vs1})
	if err == nil || !strings.Contains(err.Error(), `add service TCP 192.0.2.1:80: scheduler ""`) {
		t.Errorf("got %v", err)
	}
}

// TestSocketBackInStepAfterAnOverrun: answers left on the socket by a
// call that failed half-way (an overrun, a timeout) must not be taken for
// the next call's.
func TestSocketBackInStepAfterAnOverrun(t *testing.T) {
	k := &fakeKernel{family: 0x1c}
	k.handle = func(m genetlink.Message, flags netlink.HeaderFlags) ([]genetlink.Message, syscall.Errno) {
		if m.Header.Command == cmdDelService || m.Header.Command == cmdGetService {
			return nil, syscall.ESRCH
		}
		return nil, 0
	}
	cl := dialFake(t, k)
	k.overrun = true
	ops := []Op{
		{Kind: AddService, Service: Service{ServiceKey: vs1, Scheduler: "rr"}},
		{Kind: DelService, Service: Service{ServiceKey: vs6}}, // its error answer stays queued
	}
	if err := cl.Apply(ops); err == nil || !strings.Contains(err.Error(), "no buffer space") {
		t.Fatalf("overrun: %v", err)
	}
	if err := cl.CreateService(Service{ServiceKey: vs1, Scheduler: "rr"}); err != nil {
		t.Errorf("the next call: %v", err)
	}
	if err := cl.Apply(ops[:1]); err != nil {
		t.Errorf("the next batch: %v", err)
	}
	// A stale answer on the socket is skipped by its sequence number.
	k.queue = append(k.queue, []netlink.Message{k.errorMsg(netlink.Message{Header: netlink.Header{Length: 16, Sequence: 7}}, syscall.ESRCH)})
	if err := cl.CreateService(Service{ServiceKey: vs1, Scheduler: "rr"}); err != nil {
		t.Errorf("after a stale answer: %v", err)
	}
	if _, err := cl.Service(vs6); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing service: %v, want os.ErrNotExist", err)
	}
}

// TestStopSyncDaemonWithoutAnAnswer: the kernel sends nothing back when
// it stops a daemon whose thread had not yet run (-EINTR); the list that
// follows the stop tells a stop that worked from one that did not.
func TestStopSyncDaemonWithoutAnAnswer(t *testing.T) {
	for _, tc := range []struct {
		name    string
		errno   syscall.Errno // the stop's answer; EINTR: none
		stops   bool          // the stop removes the backup
		wantErr string
	}{
		{name: "acknowledged", stops: true},
		{name: "unanswered, stopped", errno: syscall.EINTR, stops: true},
		{name: "unanswered, still running", errno: syscall.EINTR, wantErr: "no answer from the kernel, and the daemon still runs"},
		{name: "refused", errno: syscall.ESRCH, wantErr: "no such"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			running := []SyncDaemon{
				{State: SyncMaster, Interface: "sync0", SyncID: 51},
				{State: SyncBackup, Interface: "sync0", SyncID: 51},
			}
			k := &fakeKernel{family: 0x1c}
			k.handle = func(m genetlink.Message, flags netlink.HeaderFlags) ([]genetlink.Message, syscall.Errno) {
				switch m.Header.Command {
				case cmdDelDaemon:
					if tc.stops {
						running = running[:1]
					}
					return nil, tc.errno
				case cmdGetDaemon:
					var out []genetlink.Message
					for _, d := range running {
						r, err := daemonRequest(cmdNewDaemon, &d)
						if err != nil {
							t.Fatal(err)
						}
						out = append(out, r)
					}
					return out, 0
				}
				return nil, syscall.EINVAL
			}
			cl := dialFake(t, k)
			err := cl.StopSyncDaemon(SyncBackup)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("got %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("got %v, want %q", err, tc.wantErr)
			}
			if len(k.queue) != 0 {
				t.Errorf("%d answers left on the socket", len(k.queue))
			}
			// The socket is in step for the next call.
			if ds, err := cl.SyncDaemons(); err != nil || len(ds) != len(running) {
				t.Errorf("next call: %v %v", ds, err)
			}
		})
	}
}

// TestDeadlineArmedWhenItHasPassed: a call leaves the socket's deadline
// as an earlier one set it (reading the clock is a system call in some
// guests) and arms a new one only when it has passed, once per call,
// without losing the parts of a dump already read or waiting for ever.
func TestDeadlineArmedWhenItHasPassed(t *testing.T) {
	var dests []genetlink.Message
	for i := range 3 {
		d := Destination{Addr: netip.AddrFrom4([4]byte{192, 0, 2, byte(10 + i)}), Port: 80, Weight: 1}
		m, err := destRequest(cmdNewDest, vs1, &d)
		if err != nil {
			t.Fatal(err)
		}
		dests = append(dests, m)
	}
	k := &fakeKernel{family: 0x1c, split: true}
	k.handle = func(m genetlink.Message, flags netlink.HeaderFlags) ([]genetlink.Message, syscall.Errno) {
		if m.Header.Command == cmdGetDest {
			return dests, 0
		}
		return nil, 0
	}
	cl := dialFake(t, k)
	if k.deadlines != 1 {
		t.Fatalf("%d deadlines set by Dial, want 1", k.deadlines)
	}
	for range 100 {
		if ds, err := cl.Destinations(vs1); err != nil || len(ds) != 3 {
			t.Fatalf("%v %v", ds, err)
		}
	}
	if err := cl.CreateService(Service{ServiceKey: vs1, Scheduler: "rr"}); err != nil {
		t.Fatal(err)
	}
	if k.deadlines != 1 {
		t.Errorf("%d deadlines set by 101 calls, want none", k.deadlines-1)
	}

	// Passed before the call: rearmed once, and the call goes on.
	k.expired = true
	if ds, err := cl.Destinations(vs1); err != nil || len(ds) != 3 {
		t.Fatalf("after the deadline passed: %v %v", ds, err)
	}
	if k.deadlines != 2 {
		t.Errorf("%d deadlines, want 2", k.deadlines)
	}

	// Passed in the middle of a dump: nothing of it lost.
	k.expireAfter = 2
	if ds, err := cl.Destinations(vs1); err != nil || len(ds) != 3 {
		t.Fatalf("deadline in the middle of a dump: %v %v", ds, err)
	}
	if k.deadlines != 3 {
		t.Errorf("%d deadlines, want 3", k.deadlines)
	}

	// Passed again after the rearm: a timeout, not a wait for ever.
	k.expired, k.noAnswers = true, true
	if _, err := cl.Destinations(vs1); err == nil {
		t.Fatal("no answer, and no error")
	}
	k.noAnswers = false
	if ds, err := cl.Destinations(vs1); err != nil || len(ds) != 3 {
		t.Errorf("the next call: %v %v", ds, err)
	}
}

// TestApplyLastOpFails: the last request of a batch, the one that asks for
// an acknowledgement, is answered with its error alone, and that ends the
// batch.
func TestApplyLastOpFails(t *testing.T) {
	k := &fakeKernel{family: 0x1c}
	k.handle = func(m genetlink.Message, flags netlink.HeaderFlags) ([]genetlink.Message, syscall.Errno) {
		if m.Header.Command == cmdDelService {
			return nil, syscall.ESRCH
		}
		return nil, 0
	}
	cl := dialFake(t, k)
	k.reads = 0
	err := cl.Apply([]Op{
		{Kind: AddService, Service: Service{ServiceKey: vs1, Scheduler: "rr"}},
		{Kind: DelService, Service: Service{ServiceKey: vs6}},
	})
	if err == nil || err.Error() != "ipvs: delete service UDP [2001:db8::1]:53: no such service" {
		t.Fatalf("got %v", err)
	}
	if k.reads != 1 || len(k.queue) != 0 {
		t.Errorf("%d answers read, %d left; want 1 and none", k.reads, len(k.queue))
	}
	if err := cl.CreateService(Service{ServiceKey: vs1, Scheduler: "rr"}); err != nil {
		t.Errorf("the next call: %v", err)
	}
}
