package tooling

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// methodCancelled is the notification that cancels a request on the peer.
const methodCancelled = "notifications/cancelled"

// closeGrace bounds how long closing a session waits for the cancellation
// notices of the requests it cancelled to be written. Past it, writes still
// blocked (an HTTP POST the server never answers) are given up, so that
// closing never waits on a request it cancelled.
const closeGrace = 500 * time.Millisecond

// closeTracker follows one connection's requests so that closing it
// flushes the notifications/cancelled go-sdk sends in the background for
// every request given up, instead of racing them (go-sdk refuses a notice
// once the connection is closing and no call is in flight).
type closeTracker struct {
	mu      sync.Mutex
	sending int // requests in flight through go-sdk
	pending int // requests given up whose notice is not written yet
	changed chan struct{}

	// observed: the transport reports written notices (not so for a
	// transport from WithDialer); without that, closing does not wait.
	observed bool

	abortCtx context.Context // done once the session closes
	abort    context.CancelFunc

	lastAnswer atomic.Int64 // unix nanoseconds of the last request answered
}

// answered records that the server answered a request.
func (t *closeTracker) answered() { t.lastAnswer.Store(time.Now().UnixNano()) }

// answeredSince reports whether the server answered a request after since.
func (t *closeTracker) answeredSince(since time.Time) bool {
	return t != nil && t.lastAnswer.Load() > since.UnixNano()
}

func newCloseTracker(observed bool) *closeTracker {
	ctx, cancel := context.WithCancel(context.Background())
	return &closeTracker{changed: make(chan struct{}), observed: observed, abortCtx: ctx, abort: cancel}
}

// update runs f under the lock and wakes drain.
func (t *closeTracker) update(f func()) {
	if t == nil {
		return
	}
	t.mu.Lock()
	f()
	close(t.changed)
	t.changed = make(chan struct{})
	t.mu.Unlock()
}

func (t *closeTracker) begin() { t.update(func() { t.sending++ }) }

// counts returns the requests in flight and the notices still owed.
func (t *closeTracker) counts() (sending, pending int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sending, t.pending
}

// end follows begin; abandoned: the request's context ended before its
// answer, so go-sdk sends (or has sent) a notice for it.
func (t *closeTracker) end(abandoned bool) {
	t.update(func() {
		t.sending--
		if abandoned {
			t.pending++
		}
	})
}

// noticeWritten records a notifications/cancelled handed to the transport.
func (t *closeTracker) noticeWritten() { t.update(func() { t.pending-- }) }

// drain waits, at most d, until no request is in flight and every notice
// owed has been written; false if it gave up.
func (t *closeTracker) drain(d time.Duration) bool {
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

// abortWrites gives up the writes still blocked; the connection is closing.
func (t *closeTracker) abortWrites() {
	if t != nil {
		t.abort()
	}
}

// callerKey is the context key of the context of the caller of run.
type callerKey struct{}

// callerGaveUp reports whether the request made with ctx ended because its
// caller gave up (its own context ended, not the session's): the request's
// context may have been cancelled by the session's end first even then.
func callerGaveUp(ctx context.Context) bool {
	if c, ok := ctx.Value(callerKey{}).(context.Context); ok {
		ctx = c
	}
	var lost *sessionLostError
	return ctx.Err() != nil && !errors.As(context.Cause(ctx), &lost)
}

// trackSending is the client's sending middleware: it counts each session's
// requests in flight and those given up by their caller (a Ctrl-C, a
// timeout). Those given up because the session ends (a background tool
// list refresh) owe no flushed notice: closing does not wait for them.
func (m *MCP) trackSending(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		v, ok := m.trackers.Load(req.GetSession())
		if !ok || strings.HasPrefix(method, "notifications/") {
			return next(ctx, method, req)
		}
		t := v.(*closeTracker)
		t.begin()
		res, err := next(ctx, method, req)
		var we *jsonrpc.Error
		if err == nil || errors.As(err, &we) {
			t.answered()
		}
		t.end(err != nil && ctx.Err() != nil && callerGaveUp(ctx))
		return res, err
	}
}
