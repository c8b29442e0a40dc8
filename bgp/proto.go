package bgp

// proto.go: the speaker in a process of its own. directord does not link
// GoBGP (its gRPC and protobuf packages would double the binary and their
// package init would cost memory even with no bgp block); the helper
// directord-bgp does, and serves its Speaker over its standard input and
// output, one JSON object a line:
//
//	-> {"id":1,"op":"start","bgp":{...config.BGP...}}
//	<- {"id":1}
//	-> {"id":2,"op":"announce","prefix":"192.0.2.1/32"}
//	<- {"id":2,"error":"bgp: announce 192.0.2.1/32: ..."}
//	<- {"session":{"neighbor":"10.0.0.1","state":"established"}}
//
// A request has an id and an op (start, configure, announce, withdraw,
// neighbors, stop); its response carries the same id, an error if it
// failed, and the neighbors for "neighbors". A line without an id is an
// event: a session's change of state (the Speaker's SessionEvent), or an
// error about a line that could not be read. The helper's log records go
// to its standard error as slog JSON lines, which Process relays into
// directord's log. At the end of its standard input the helper stops the
// speaker (every session closed with a Cease: the routers withdraw every
// route) and exits.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"sync"
	"time"

	"github.com/directord/directord/config"
)

// The protocol's operations.
const (
	opStart     = "start"
	opConfigure = "configure"
	opAnnounce  = "announce"
	opWithdraw  = "withdraw"
	opNeighbors = "neighbors"
	opStop      = "stop"
)

// maxLine bounds a line of the protocol (a bgp block of many neighbors
// fits many times over).
const maxLine = 4 << 20

// request is one line to the helper.
type request struct {
	ID     uint64       `json:"id"`
	Op     string       `json:"op"`
	BGP    *config.BGP  `json:"bgp,omitempty"`
	Prefix netip.Prefix `json:"prefix,omitzero"`
}

// message is one line from the helper: a response (ID set) or an event.
type message struct {
	ID        uint64           `json:"id,omitempty"`
	Error     string           `json:"error,omitempty"`
	Neighbors []NeighborStatus `json:"neighbors,omitempty"`
	Session   *SessionEvent    `json:"session,omitempty"`
}

// Server serves a Speaker over the protocol: requests read from one
// stream, responses and session events written to another
// (cmd/directord-bgp, on its standard input and output).
type Server struct {
	sp Speaker

	// Orphaned, if set, is called when the input ends while the speaker
	// runs (directord is gone), before the speaker is stopped: the helper
	// then sends its records where directord's own went.
	Orphaned func()

	mu  sync.Mutex // w
	w   *bufio.Writer
	err error // the first write error: the client is gone
}

// NewServer makes a server of sp writing to w. Give its Event to the
// speaker as the session callback.
func NewServer(sp Speaker, w io.Writer) *Server {
	return &Server{sp: sp, w: bufio.NewWriter(w)}
}

// Event sends a session event; it does not block on the speaker.
func (s *Server) Event(ev SessionEvent) { s.send(message{Session: &ev}) }

func (s *Server) send(m message) {
	b, err := json.Marshal(m)
	if err != nil { // no value of message fails to marshal
		b, _ = json.Marshal(message{ID: m.ID, Error: err.Error()})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return
	}
	b = append(b, '\n')
	if _, err := s.w.Write(b); err != nil {
		s.err = err
		return
	}
	s.err = s.w.Flush()
}

// Serve answers the requests read from r, one at a time in order, until
// r ends; then, if the speaker runs, it stops it (every session closed
// with a Cease), and returns. A line that is not a request is answered by
// an error event naming it; the lines after it are served.
func (s *Server) Serve(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	running := false
	line := 0
	for sc.Scan() {
		line++
		var req request
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil || req.ID == 0 || req.Op == "" {
			if err == nil {
				err = errors.New("no id or op")
			}
			s.send(message{Error: fmt.Sprintf("bgp protocol: line %d is not a request: %v: %.80q", line, err, sc.Bytes())})
			continue
		}
		m := message{ID: req.ID}
		var err error
		ctx := context.Background()
		switch req.Op {
		case opStart, opConfigure:
			if req.BGP == nil {
				err = fmt.Errorf("bgp protocol: %s without its bgp block", req.Op)
			} else if req.Op == opStart {
				if err = s.sp.Start(ctx, req.BGP); err == nil {
					running = true
				}
			} else {
				err = s.sp.Configure(ctx, req.BGP)
			}
		case opAnnounce, opWithdraw:
			if !req.Prefix.IsValid() {
				err = fmt.Errorf("bgp protocol: %s without a prefix", req.Op)
			} else if req.Op == opAnnounce {
				err = s.sp.Announce(ctx, req.Prefix)
			} else {
				err = s.sp.Withdraw(ctx, req.Prefix)
			}
		case opNeighbors:
			m.Neighbors, err = s.sp.Neighbors(ctx)
		case opStop:
			err = s.sp.Stop(ctx)
			running = false
		default:
			err = fmt.Errorf("bgp protocol: unknown op %q", req.Op)
		}
		if err != nil {
			m.Error = err.Error()
		}
		s.send(m)
	}
	err := sc.Err()
	if running {
		// directord is gone (or closed the pipe without a stop): the
		// routers must not keep routes to a director nobody runs.
		if s.Orphaned != nil {
			s.Orphaned()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err = errors.Join(err, s.sp.Stop(ctx))
	}
	if err != nil {
		return fmt.Errorf("bgp protocol: %w", err)
	}
	return nil
}

// ErrSpeakerDown is in the error of a call made while the speaker's
// process is being started again: what the call asked for is kept and
// replayed once it is back.
var ErrSpeakerDown = errors.New("the BGP speaker's process is down; it is being started again")

// link is the client's side of one helper process.
type link struct {
	in io.WriteCloser

	wmu sync.Mutex // in

	mu      sync.Mutex
	next    uint64
	pending map[uint64]chan message

	done chan struct{} // closed when the helper's output ended
	err  error         // why, set before done is closed
}

func newLink(in io.WriteCloser) *link {
	return &link{in: in, pending: map[uint64]chan message{}, done: make(chan struct{})}
}

// call sends req and waits for its response.
func (l *link) call(ctx context.Context, req request) (message, error) {
	ch := make(chan message, 1)
	l.mu.Lock()
	l.next++
	req.ID = l.next
	l.pending[req.ID] = ch
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		delete(l.pending, req.ID)
		l.mu.Unlock()
	}()
	b, err := json.Marshal(req)
	if err != nil {
		return message{}, err
	}
	l.wmu.Lock()
	_, err = l.in.Write(append(b, '\n'))
	l.wmu.Unlock()
	if err != nil {
		return message{}, fmt.Errorf("bgp: %s: %w (%w)", req.Op, ErrSpeakerDown, err)
	}
	select {
	case m := <-ch:
		if m.Error != "" {
			return m, errors.New(m.Error)
		}
		return m, nil
	case <-l.done:
		return message{}, fmt.Errorf("bgp: %s: %w (%w)", req.Op, ErrSpeakerDown, l.err)
	case <-ctx.Done():
		return message{}, fmt.Errorf("bgp: %s: %w", req.Op, ctx.Err())
	}
}

// read takes the helper's lines until they end: each response to its
// call, each event to onEvent, each unreadable line to onBad. It returns
// why they ended (io.EOF: the helper closed its output); the caller then
// sets err and closes done.
func (l *link) read(r io.Reader, onEvent func(SessionEvent), onBad func(error)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	for sc.Scan() {
		var m message
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			onBad(fmt.Errorf("bgp: an unreadable line from the speaker's process: %w: %.80q", err, sc.Bytes()))
			continue
		}
		switch {
		case m.ID != 0:
			l.mu.Lock()
			ch := l.pending[m.ID]
			l.mu.Unlock()
			if ch != nil {
				ch <- m
			}
		case m.Session != nil:
			onEvent(*m.Session)
		case m.Error != "":
			onBad(errors.New(m.Error))
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return io.EOF
}
