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
	stateQueued   uint32 = iota
	stateAdmitted        // has a slot, about to run
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
	stopAfter func() bool // unregisters the queued-expiry hook (async only)
	state     atomic.Uint32
	// released is set when the call gave its policy slot back (at its end
	// or when the agent cancelled it, whichever is first).
	released atomic.Bool

	// blocking only: done is closed when res and err are set; admitted is
	// closed when the gate hands the queued call a slot
	done     chan struct{}
	admitted chan struct{}
	res      tooling.ToolResult
	err      *tooling.Error
}

func newID() string { return uuid.NewString() }

// newCall makes a call, reserves its inbox slot (async) and enters it in
// the tables. The caller queues it.
func (h *Handle) newCall(name, args string, blocking bool) (*call, error) {
	a := h.a
	if err := a.hub.removedErr(h.rt); err != nil {
		return nil, err
	}
	c := &call{id: newID(), tool: name, args: args, a: a, h: h, rt: h.rt, blocking: blocking, start: time.Now()}
	if blocking {
		c.done = make(chan struct{})
	} else if err := a.in.Reserve(c.id); err != nil {
		switch {
		case errors.Is(err, inbox.ErrFull):
			h.rt.stats.busy.Add(1)
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
	h.rt.stats.calls.Add(1)
	// An async call whose context ends while still queued completes from
	// here (a blocking caller watches its context itself).
	if !blocking {
		c.stopAfter = context.AfterFunc(c.ctx, c.expire)
	}
	return c, nil
}

// expire completes a call whose context ended while it was still queued.
func (c *call) expire() {
	if c.state.CompareAndSwap(stateQueued, stateFinished) {
		c.finish(tooling.ToolResult{}, c.ctx.Err(), false)
	}
}

func (c *call) log() *zap.Logger {
	return c.rt.log.With(zap.String("agent", c.a.name), zap.String("call_id", c.id), zap.String("tool", c.tool))
}

// run runs an admitted call (or one admitted at once, still queued).
func (c *call) run() {
	if !c.state.CompareAndSwap(stateQueued, stateRunning) && !c.state.CompareAndSwap(stateAdmitted, stateRunning) {
		return // expired or cancelled meanwhile
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
	if err := c.a.hub.removedErr(c.rt); err != nil {
		return tooling.ToolResult{}, err // queued when its tooling was removed
	}
	return c.rt.t.CallTool(tooling.WithCallID(c.ctx, c.id), c.tool, json.RawMessage(c.args))
}

// finish completes the call once: the blocking caller is woken, or the
// envelope fills the call's reserved inbox slot (unless cancelled). A
// worker unregisters the expiry hook (stop); the hook itself must not read
// it.
func (c *call) finish(res tooling.ToolResult, err error, stop bool) {
	if stop && c.stopAfter != nil {
		c.stopAfter()
	}
	var herr *tooling.Error
	if err != nil {
		herr = c.errorFor(err)
	} else {
		// The contract's tool-result names the call as it was made.
		res.Name, res.Arguments = c.tool, c.args
	}
	c.rt.stats.count(herr)
	c.release()
	c.audit(res, herr)
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

// gate admits at most limit calls of a tooling at once; the rest wait in
// FIFO order. An admitted async call runs on a goroutine that, when done,
// goes on with the next queued async call (or hands its slot to the next
// queued blocking caller); a blocking call runs on its caller's goroutine.
// There is no idle worker: a goroutine exists only for a running call.
type gate struct {
	rt    *runtime
	limit int

	mu      sync.Mutex
	running int
	queue   []*call
	head    int
	stopped bool           // the hub has stopped: no new goroutines
	wg      sync.WaitGroup // the async call goroutines
}

// stopAndWait refuses new call goroutines and waits for the running ones.
// Calls made afterwards are never run: their context has ended with the
// hub's, and the queued-expiry hook completes them.
func (g *gate) stopAndWait() {
	g.mu.Lock()
	g.stopped = true
	g.mu.Unlock()
	g.wg.Wait()
}

func newGate(rt *runtime, limit int) *gate { return &gate{rt: rt, limit: limit} }

// submit runs the async call c now if a slot is free, else queues it.
func (g *gate) submit(c *call) {
	g.mu.Lock()
	switch {
	case g.stopped:
	case g.running < g.limit:
		g.running++
		g.wg.Add(1)
		g.mu.Unlock()
		go g.runLoop(c)
		return
	default:
		g.push(c)
	}
	g.mu.Unlock()
}

// runBlocking runs the blocking call c on the caller's goroutine once
// admitted and returns when c is finished (c.done closed).
func (g *gate) runBlocking(c *call) {
	g.mu.Lock()
	if g.running < g.limit {
		g.running++
		g.mu.Unlock()
	} else {
		c.admitted = make(chan struct{})
		g.push(c)
		g.mu.Unlock()
		select {
		case <-c.admitted: // a finishing call handed over its slot
		case <-c.ctx.Done():
			if c.state.CompareAndSwap(stateQueued, stateFinished) {
				c.finish(tooling.ToolResult{}, c.ctx.Err(), false)
				return // next() will skip it
			}
			<-c.admitted // handed a slot meanwhile: run (it fails at once)
		}
	}
	c.run()
	g.release()
}

// runLoop runs c, then queued async calls while there are any.
func (g *gate) runLoop(c *call) {
	defer g.wg.Done()
	for c != nil {
		c.run()
		c = g.next()
	}
}

// release gives up a slot after a blocking call: to the next queued call,
// on a new goroutine if it is async.
func (g *gate) release() {
	if c := g.next(); c != nil {
		g.mu.Lock()
		if g.stopped {
			g.running--
			g.mu.Unlock()
			c.run() // its context has ended: it completes at once
			return
		}
		g.wg.Add(1)
		g.mu.Unlock()
		go g.runLoop(c)
	}
}

// next hands the caller's slot to the next queued call that is still
// queued: an async one is returned for the caller to run; a blocking one
// is woken to run itself (nil is returned). With none queued the slot is
// freed and nil returned.
func (g *gate) next() *call {
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.head < len(g.queue) {
		c := g.queue[g.head]
		g.queue[g.head] = nil
		g.head++
		if g.head == len(g.queue) {
			g.queue, g.head = g.queue[:0], 0
		}
		if !c.state.CompareAndSwap(stateQueued, stateAdmitted) {
			continue // expired or cancelled while queued
		}
		if c.blocking {
			close(c.admitted)
			return nil
		}
		return c
	}
	g.running--
	return nil
}

func (g *gate) push(c *call) {
	if g.head >= 256 && g.head*2 >= len(g.queue) {
		n := copy(g.queue, g.queue[g.head:])
		clear(g.queue[n:])
		g.queue, g.head = g.queue[:n], 0
	}
	g.queue = append(g.queue, c)
}
