package script

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/directord/directord/config"
)

// QueueLimit is how many scripts may wait behind the running one of a
// key before the oldest waiting is dropped.
const QueueLimit = 64

// NotifyTimeout bounds a notify script's run: keepalived does not wait for
// notify scripts at all; directord kills one that hangs, so that the
// scripts behind it run.
const NotifyTimeout = 30 * time.Second

// Job is one script run of a Queue.
type Job struct {
	// Key orders the jobs: those of one key run one after another in the
	// order submitted (an instance's notify scripts follow its
	// transitions); different keys run independently.
	Key string
	// Kind labels the job in logs and in the dropped-scripts metric:
	// vrrp, sync_group or lvs.
	Kind    string
	Runner  Runner
	Script  *config.Script
	Args    []string      // appended to the script's own
	Timeout time.Duration // 0: NotifyTimeout
}

// Queue runs scripts in the background, bounded: each key has one script
// running and at most Limit waiting. When a key's waiting list is full
// the oldest waiting script is dropped (the newest, which reflects the
// latest state, still runs), counted by OnDrop and logged. This is the
// only drop policy for directord's notify scripts.
//
// A Queue outlives what submits to it: a VRRP node that a reload
// restarts submits its notify_stop scripts and goes, while they run.
type Queue struct {
	// Limit is the waiting scripts a key may have; 0 means QueueLimit.
	Limit int
	// OnDrop, if set, is called for each dropped job (the metric).
	OnDrop func(Job)

	log    *slog.Logger
	mu     sync.Mutex
	lanes  map[string]*lane
	closed bool
	idle   chan struct{} // closed, and replaced, when the last lane empties
	busy   int           // lanes with a worker
}

type lane struct {
	waiting []Job
}

// NewQueue returns an empty queue; log may be nil.
func NewQueue(log *slog.Logger) *Queue {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Queue{log: log, lanes: map[string]*lane{}, idle: make(chan struct{})}
}

// Submit queues j; it never blocks. A disabled script is not queued (the
// check at load logged why), nor is anything after Close.
func (q *Queue) Submit(j Job) {
	if j.Script == nil || len(j.Script.Args) == 0 || j.Runner.Prog(j.Script).Disabled != nil {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	l := q.lanes[j.Key]
	if l == nil {
		l = &lane{}
		q.lanes[j.Key] = l
		q.busy++
		go q.work(j.Key, l)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = QueueLimit
	}
	if len(l.waiting) >= limit {
		old := l.waiting[0]
		l.waiting = l.waiting[1:]
		q.log.Warn("scripts are not keeping up: the oldest waiting one is dropped",
			"key", old.Key, "kind", old.Kind, "script", old.Script.Command, "waiting", limit)
		if q.OnDrop != nil {
			q.OnDrop(old)
		}
	}
	l.waiting = append(l.waiting, j)
}

// work runs a lane's jobs in order until it is empty.
func (q *Queue) work(key string, l *lane) {
	for {
		q.mu.Lock()
		if len(l.waiting) == 0 {
			delete(q.lanes, key)
			q.busy--
			if q.busy == 0 {
				close(q.idle)
				q.idle = make(chan struct{})
			}
			q.mu.Unlock()
			return
		}
		j := l.waiting[0]
		l.waiting = l.waiting[1:]
		q.mu.Unlock()
		t := j.Timeout
		if t <= 0 {
			t = NotifyTimeout
		}
		res := j.Runner.Run(context.Background(), j.Script, t, j.Args...)
		if !res.OK() && !errors.Is(res.Err, ErrDisabled) {
			q.log.Warn("notify script failed", "key", j.Key, "kind", j.Kind, "script", j.Script.Command,
				"exit", res.ExitCode, "timed_out", res.TimedOut, "err", res.Err)
		}
	}
}

// Idle returns a channel closed once no script is running or waiting
// (at once if none is).
func (q *Queue) Idle() <-chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.busy == 0 {
		c := make(chan struct{})
		close(c)
		return c
	}
	return q.idle
}

// Wait waits until no script runs or waits, or ctx ends.
func (q *Queue) Wait(ctx context.Context) error {
	select {
	case <-q.Idle():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close refuses further jobs; those queued still run.
func (q *Queue) Close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
}
