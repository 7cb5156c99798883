package transport

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// MethodCancelled is the notification that cancels a request on the peer.
const MethodCancelled = "notifications/cancelled"

// CloseGrace bounds how long closing a session waits for the cancellation
// notices of the requests it cancelled to be written. Past it, writes still
// blocked (an HTTP POST the server never answers) are given up, so that
// closing never waits on a request it cancelled.
const CloseGrace = 500 * time.Millisecond

// Tracker follows one connection's requests so that closing it
// flushes the notifications/cancelled go-sdk sends in the background for
// every request given up, instead of racing them (go-sdk refuses a notice
// once the connection is closing and no call is in flight).
type Tracker struct {
	mu      sync.Mutex
	sending int // requests in flight through go-sdk
	pending int // requests given up whose notice is not written yet
	changed chan struct{}

	// observed: the transport reports written notices (not so for a
	// transport from mcpclient.Options.Dialer); without that, closing does not wait.
	observed bool

	abortCtx context.Context // done once the session closes
	abort    context.CancelFunc

	lastAnswer atomic.Int64 // unix nanoseconds of the last request answered
}

// Answered records that the server answered a request.
func (t *Tracker) Answered() { t.lastAnswer.Store(time.Now().UnixNano()) }

// AnsweredSince reports whether the server answered a request after since.
func (t *Tracker) AnsweredSince(since time.Time) bool {
	return t != nil && t.lastAnswer.Load() > since.UnixNano()
}

// NewTracker makes the tracker of one connection; observed: its transport
// reports the notices it writes (NoticeWritten).
func NewTracker(observed bool) *Tracker {
	ctx, cancel := context.WithCancel(context.Background())
	return &Tracker{changed: make(chan struct{}), observed: observed, abortCtx: ctx, abort: cancel}
}

// update runs f under the lock and wakes drain.
func (t *Tracker) update(f func()) {
	if t == nil {
		return
	}
	t.mu.Lock()
	f()
	close(t.changed)
	t.changed = make(chan struct{})
	t.mu.Unlock()
}

// Begin records a request sent through go-sdk.
func (t *Tracker) Begin() { t.update(func() { t.sending++ }) }

// Counts returns the requests in flight and the notices still owed.
func (t *Tracker) Counts() (sending, pending int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sending, t.pending
}

// End follows Begin; abandoned: the request's context ended before its
// answer, so go-sdk sends (or has sent) a notice for it.
func (t *Tracker) End(abandoned bool) {
	t.update(func() {
		t.sending--
		if abandoned {
			t.pending++
		}
	})
}

// NoticeWritten records a notifications/cancelled handed to the transport.
func (t *Tracker) NoticeWritten() { t.update(func() { t.pending-- }) }

// Drain waits, at most d, until no request is in flight and every notice
// owed has been written; false if it gave up.
func (t *Tracker) Drain(d time.Duration) bool {
	if t == nil || !t.observed {
		return true
	}
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		t.mu.Lock()
		done, changed := t.sending == 0 && t.pending <= 0, t.changed
		t.mu.Unlock()
		if done {
			return true
		}
		select {
		case <-changed:
		case <-deadline.C:
			return false
		}
	}
}

// AbortWrites gives up the writes still blocked; the connection is closing.
func (t *Tracker) AbortWrites() {
	if t != nil {
		t.abort()
	}
}
