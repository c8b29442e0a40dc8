package lab

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// fakeRead is a connection's read side: it times out timeouts times,
// each at its deadline (moving the clock there), then reads the answer.
type fakeRead struct {
	clock     *time.Time
	deadline  time.Time
	timeouts  int
	deadlines int // SetReadDeadline's calls
	answer    io.Reader
}

func (f *fakeRead) Read(b []byte) (int, error) {
	if f.timeouts > 0 {
		f.timeouts--
		*f.clock = f.deadline
		return 0, fmt.Errorf("read tcp: %w", os.ErrDeadlineExceeded)
	}
	return f.answer.Read(b)
}

func (f *fakeRead) SetReadDeadline(t time.Time) error {
	f.deadline, f.deadlines = t, f.deadlines+1
	return nil
}

// TestPatientReader: a long-lived connection's read that times out is
// given another RequestTimeout only when the machine withheld all but
// less than Unstarved of the wait, at most maxWaits times; otherwise
// the time-out is the request's failure, as before. What is read after
// a wait is the answer whole: HTTP's parser above loses nothing.
func TestPatientReader(t *testing.T) {
	const answer = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nrs2"
	for _, c := range []struct {
		name     string
		timeouts int
		// given is what the machine let the client have of each wait.
		given     time.Duration
		wantErr   bool
		wantWaits int
	}{
		{"no time-out", 0, 0, false, 0},
		{"starved once", 1, 80 * time.Millisecond, false, 1},
		{"starved maxWaits times", maxWaits, 80 * time.Millisecond, false, maxWaits},
		{"starved more than maxWaits times", maxWaits + 1, 80 * time.Millisecond, true, maxWaits},
		{"given a second", 1, Unstarved, true, 0},
		{"given the whole wait", 1, RequestTimeout, true, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			clock := time.Unix(1000, 0)
			f := &fakeRead{clock: &clock, timeouts: c.timeouts, answer: strings.NewReader(answer)}
			p := &patientReader{
				c:   f,
				now: func() time.Time { return clock },
				withheld: func(from, to time.Time) time.Duration {
					return max(to.Sub(from)-c.given, 0)
				},
			}
			// As Conn.Get does.
			p.since, p.waits = clock, 0
			f.SetReadDeadline(clock.Add(RequestTimeout))
			srv, err := request(io.Discard, bufio.NewReader(p), false)
			if c.wantErr {
				if err == nil {
					t.Fatalf("answered by %q, want the time-out", srv)
				}
			} else if err != nil || srv != "rs2" {
				t.Fatalf("got %q, %v; want rs2", srv, err)
			}
			if got := int(p.waited.Load()); got != c.wantWaits {
				t.Errorf("waited again %d times, want %d", got, c.wantWaits)
			}
			if f.deadlines != 1+c.wantWaits {
				t.Errorf("%d deadlines set, want %d", f.deadlines, 1+c.wantWaits)
			}
		})
	}
}
