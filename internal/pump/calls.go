package pump

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/inbox"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

// Call states: a call is queued until a worker takes it (running) or its
// context ends first; whoever moves it to finished completes it, once.
const (
	stateQueued uint32 = iota
	stateRunning
	stateFinished
)

// call is one call-tool or call-tool-blocking.
type call struct {
	id       string
	tool     string
	args     string
	a        *Agent
	h        *Handle
	rt       *runtime
	blocking bool
	start    time.Time

	ctx       context.Context // the call timeout under the agent's context
	cancel    context.CancelFunc
	stopAfter func() bool // unregisters the queued-expiry hook
	state     atomic.Uint32

	// blocking only: set before done is closed
	done chan struct{}
	res  tooling.ToolResult
	err  *tooling.Error
}

func newID() string { return uuid.NewString() }

// newCall makes a call, reserves its inbox slot (async) and enters it in
// the tables. The caller queues it.
func (h *Handle) newCall(name, args string, blocking bool) (*call, error) {
	a := h.a
	c := &call{id: newID(), tool: name, args: args, a: a, h: h, rt: h.rt, blocking: blocking, start: time.Now()}
	if blocking {
		c.done = make(chan struct{})
	} else if err := a.in.Reserve(c.id); err != nil {
		switch {
		case errors.Is(err, inbox.ErrFull):
			return nil, tooling.Errorf(tooling.CodeBusy, "the inbox is full: %d open calls and undelivered envelopes", a.in.Capacity())
		case errors.Is(err, inbox.ErrShutdown):
			return nil, errAgentClosed()
		}
		return nil, tooling.Errorf(tooling.CodeInternal, "reserving the inbox slot: %v", err)
	}
	a.mu.Lock()
	if a.closed || h.closed {
		closedErr := errHandleClosed()
		if a.closed {
			closedErr = errAgentClosed()
		}
		a.mu.Unlock()
		if !blocking {
			a.in.Cancel(c.id)
		}
		return nil, closedErr
	}
	c.ctx, c.cancel = context.WithTimeout(a.ctx, h.rt.limits.CallTimeout)
	a.calls[c.id] = c
	h.calls[c.id] = c
	a.mu.Unlock()
	// A call whose context ends while still queued completes from here.
	c.stopAfter = context.AfterFunc(c.ctx, func() {
		if c.state.CompareAndSwap(stateQueued, stateFinished) {
			c.finish(tooling.ToolResult{}, c.ctx.Err(), false)
		}
	})
	return c, nil
}

func (c *call) log() *zap.Logger {
	return c.rt.log.With(zap.String("agent", c.a.name), zap.String("call_id", c.id), zap.String("tool", c.tool))
}

// run is a worker running a call it took from the queue.
func (c *call) run() {
	if !c.state.CompareAndSwap(stateQueued, stateRunning) {
		return // expired or cancelled while queued
	}
	res, err := c.callTool()
	c.state.Store(stateFinished)
	c.finish(res, err, true)
}

// callTool makes the MCP call; a panic in the tooling fails the call with
// internal instead of taking the worker down.
func (c *call) callTool() (res tooling.ToolResult, err error) {
	defer func() {
		if r := recover(); r != nil {
			c.log().Error("tooling panicked in a call", zap.Any("panic", r))
			err = tooling.Errorf(tooling.CodeInternal, "tools/call %q: the tooling panicked: %v", c.tool, r)
		}
	}()
	return c.rt.t.CallTool(c.ctx, c.tool, json.RawMessage(c.args))
}

// finish completes the call once: the blocking caller is woken, or the
// envelope fills the call's reserved inbox slot (unless cancelled). A
// worker unregisters the expiry hook (stop); the hook itself must not read
// it.
func (c *call) finish(res tooling.ToolResult, err error, stop bool) {
	if stop {
		c.stopAfter()
	}
	var herr *tooling.Error
	if err != nil {
		herr = c.errorFor(err)
	} else {
		// The contract's tool-result names the call as it was made.
		res.Name, res.Arguments = c.tool, c.args
	}
	delivered := false
	if c.blocking {
		c.res, c.err = res, herr
		close(c.done)
	} else {
		var ev inbox.Event
		if herr != nil {
			ev = inbox.Error{Err: *herr}
		} else {
			ev = inbox.ToolResult{Result: res}
		}
		delivered = c.a.in.Deliver(c.id, ev)
	}
	a := c.a
	a.mu.Lock()
	if a.calls[c.id] == c {
		delete(a.calls, c.id)
		delete(c.h.calls, c.id)
	}
	a.mu.Unlock()
	c.cancel()
	if ce := c.rt.log.Check(zap.DebugLevel, "call done"); ce != nil {
		fields := []zap.Field{zap.String("agent", a.name), zap.String("call_id", c.id), zap.String("tool", c.tool),
			zap.Duration("duration", time.Since(c.start)), zap.Bool("blocking", c.blocking), zap.Bool("delivered", delivered)}
		if herr != nil {
			fields = append(fields, zap.String("error", herr.Error()))
		}
		ce.Write(fields...)
	}
}

// errorFor maps a failed call's error to the contract: its own deadline is
// timeout, its own cancellation cancelled, the rest as the tooling said.
func (c *call) errorFor(err error) *tooling.Error {
	switch {
	case errors.Is(c.ctx.Err(), context.DeadlineExceeded) && c.a.ctx.Err() == nil:
		return tooling.Errorf(tooling.CodeTimeout, "tools/call %q: no result within %v", c.tool, c.rt.limits.CallTimeout)
	case c.ctx.Err() != nil:
		return tooling.Errorf(tooling.CodeCancelled, "tools/call %q: cancelled", c.tool)
	}
	return tooling.AsError(err)
}

// callQueue is a tooling's FIFO of calls waiting for a worker. It is
// unbounded: every async call holds an inbox slot, so inbox capacities
// bound it.
type callQueue struct {
	mu    sync.Mutex
	items []*call
	head  int
	ready chan struct{} // one token: the queue may be non-empty
}

func newCallQueue() *callQueue { return &callQueue{ready: make(chan struct{}, 1)} }

func (q *callQueue) push(c *call) {
	q.mu.Lock()
	q.items = append(q.items, c)
	q.mu.Unlock()
	q.signal()
}

func (q *callQueue) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// pop waits for the next call; nil when ctx ends.
func (q *callQueue) pop(ctx context.Context) *call {
	for {
		q.mu.Lock()
		if q.head < len(q.items) {
			c := q.items[q.head]
			q.items[q.head] = nil
			q.head++
			more := q.head < len(q.items)
			if !more {
				q.items, q.head = q.items[:0], 0
			} else if q.head >= 256 && q.head*2 >= len(q.items) {
				n := copy(q.items, q.items[q.head:])
				clear(q.items[n:])
				q.items, q.head = q.items[:n], 0
			}
			q.mu.Unlock()
			if more {
				q.signal() // wake another worker
			}
			return c
		}
		q.mu.Unlock()
		select {
		case <-q.ready:
		case <-ctx.Done():
			return nil
		}
	}
}

// workers is a tooling's pool of MaxConcurrentCalls call workers, one
// suture service.
type workers struct{ rt *runtime }

func (w *workers) String() string { return "calls/" + w.rt.name }

func (w *workers) Serve(ctx context.Context) error {
	var wg sync.WaitGroup
	for range w.rt.limits.MaxConcurrentCalls {
		wg.Go(func() {
			for {
				c := w.rt.queue.pop(ctx)
				if c == nil {
					return
				}
				c.run()
			}
		})
	}
	wg.Wait()
	return ctx.Err()
}
