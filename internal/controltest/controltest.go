// Package controltest runs a control server in tests: on a socket of its
// own until the test ends, its logs where the test reads them. It takes
// the server's Listen and Serve as functions, so that internal/control's
// own tests use it without an import cycle.
package controltest

import (
	"bytes"
	"context"
	"net"
	"sync"
	"testing"
)

// Logs is a log destination the server's goroutines and the test share.
type Logs struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String is what was written so far.
func (l *Logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Serve listens on path with listen and runs serve on the listener until
// the test ends, then waits for serve to return; an error of either fails
// the test.
func Serve(t testing.TB, path string, listen func(string) (net.Listener, error),
	serve func(context.Context, net.Listener) error) {
	t.Helper()
	ln, err := listen(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
}
