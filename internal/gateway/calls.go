package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

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

// Call is one tools/call through a tooling's gate: queued until a slot is
// free or its context ends first, then run. The caller (package contract)
// makes it with NewCall, hands it to Submit or RunBlocking, and is told its
// outcome, once, by the done function it gave NewCall.
type Call struct {
	// ID is the call's id; Tool and Args what it calls.
	ID, Tool, Args string
	// Agent names the caller in the log.
	Agent    string
	Blocking bool

	s     *Served
	start time.Time
	done  func(res tooling.ToolResult, herr *tooling.Error) (delivered bool)
	callScope
	admission
}

// callScope is the context a call runs in: the tooling's call timeout
// under the caller's context.
type callScope struct {
	parent context.Context // the agent's
	ctx    context.Context // the call timeout under parent
	cancel context.CancelFunc
}

// admission is a call's way through its tooling's gate: how far it has
// come (the call states), and how it leaves the queue: admitted by the
// gate, or expired by its context.
type admission struct {
	state     atomic.Uint32
	admitted  chan struct{} // blocking only: closed when the gate hands it a slot
	stopAfter func() bool   // unregisters the queued-expiry hook (async only)
}

// NewCall makes a call of tool with args on s, bounded by the tooling's
// call timeout under parent (the agent's context). done is called once
// when the call is finished: with the result (named as the call was made)
// or the error in the contract's terms; its result says whether the
// outcome reached the agent, for the log.
func (s *Served) NewCall(parent context.Context, id, agent, tool, args string, blocking bool,
	done func(tooling.ToolResult, *tooling.Error) bool) *Call {
	c := &Call{ID: id, Agent: agent, Tool: tool, Args: args, Blocking: blocking,
		s: s, start: time.Now(), done: done, callScope: callScope{parent: parent}}
	c.ctx, c.cancel = context.WithTimeout(parent, s.limits.CallTimeout)
	s.stats.calls.Add(1)
	return c
}

// Context is the call's context: it ends at its timeout, its Cancel or its
// parent's end.
func (c *Call) Context() context.Context { return c.ctx }

// Start is when the call was made.
func (c *Call) Start() time.Time { return c.start }

// Cancel cancels the call: a queued one completes at once, a running one
// has its MCP request cancelled.
func (c *Call) Cancel() { c.cancel() }

// Submit queues the async call c on its tooling's gate: it runs as soon as
// a slot is free; an end of its context while it is still queued completes
// it from there.
func (s *Served) Submit(c *Call) {
	c.stopAfter = context.AfterFunc(c.ctx, c.expire)
	s.gate.submit(c)
}

// RunBlocking runs the blocking call c on the caller's goroutine once the
// gate admits it, and returns when c is finished.
func (s *Served) RunBlocking(c *Call) { s.gate.runBlocking(c) }

// RunBlockingAfter is RunBlocking once ready returns nil; if ready fails,
// c is finished with its error and never issued.
func (s *Served) RunBlockingAfter(c *Call, ready func() error) {
	if err := ready(); err != nil {
		if c.state.CompareAndSwap(stateQueued, stateFinished) {
			c.finish(tooling.ToolResult{}, tooling.Errorf(tooling.CodeInternal, "tools/call %q not issued: %v", c.Tool, err), false)
		}
		return
	}
	s.gate.runBlocking(c)
}

// expire completes a call whose context ended while it was still queued.
func (c *Call) expire() {
	if c.state.CompareAndSwap(stateQueued, stateFinished) {
		c.finish(tooling.ToolResult{}, c.ctx.Err(), false)
	}
}

func (c *Call) log() *zap.Logger {
	return c.s.log.With(zap.String("agent", c.Agent), zap.String("call_id", c.ID), zap.String("tool", c.Tool))
}

// run runs an admitted call (or one admitted at once, still queued).
func (c *Call) run() {
	if !c.state.CompareAndSwap(stateQueued, stateRunning) && !c.state.CompareAndSwap(stateAdmitted, stateRunning) {
		return // expired or cancelled meanwhile
	}
	res, err := c.callTool()
	c.state.Store(stateFinished)
	c.finish(res, err, true)
}

// callTool makes the MCP call; a panic in the tooling fails the call with
// internal instead of taking the worker down.
func (c *Call) callTool() (res tooling.ToolResult, err error) {
	defer func() {
		if r := recover(); r != nil {
			c.log().Error("tooling panicked in a call", zap.Any("panic", r))
			err = tooling.Errorf(tooling.CodeInternal, "tools/call %q: the tooling panicked: %v", c.Tool, r)
		}
	}()
	if err := c.s.Removed(); err != nil {
		return tooling.ToolResult{}, err // queued when its tooling was removed
	}
	return c.s.t.CallTool(tooling.WithCallID(c.ctx, c.ID), c.Tool, json.RawMessage(c.Args))
}

// finish completes the call once: its done function is told the outcome.
// A worker unregisters the expiry hook (stop); the hook itself must not
// read it.
func (c *Call) finish(res tooling.ToolResult, err error, stop bool) {
	if stop && c.stopAfter != nil {
		c.stopAfter()
	}
	var herr *tooling.Error
	if err != nil {
		herr = c.errorFor(err)
	} else {
		// The contract's tool-result names the call as it was made.
		res.Name, res.Arguments = c.Tool, c.Args
	}
	c.s.stats.count(herr)
	delivered := c.done(res, herr)
	c.cancel()
	if ce := c.s.log.Check(zap.DebugLevel, "call done"); ce != nil {
		fields := []zap.Field{zap.String("agent", c.Agent), zap.String("call_id", c.ID), zap.String("tool", c.Tool),
			zap.Duration("duration", time.Since(c.start)), zap.Bool("blocking", c.Blocking), zap.Bool("delivered", delivered)}
		if herr != nil {
			fields = append(fields, zap.String("error", herr.Error()))
		}
		ce.Write(fields...)
	}
}

// errorFor maps a failed call's error to the contract: its own deadline is
// timeout, its own cancellation cancelled, the rest as the tooling said.
func (c *Call) errorFor(err error) *tooling.Error {
	switch {
	case errors.Is(c.ctx.Err(), context.DeadlineExceeded) && c.parent.Err() == nil:
		return tooling.Errorf(tooling.CodeTimeout, "tools/call %q: no result within %v", c.Tool, c.s.limits.CallTimeout)
	case c.ctx.Err() != nil:
		return tooling.Errorf(tooling.CodeCancelled, "tools/call %q: cancelled", c.Tool)
	}
	return tooling.AsError(err)
}

// gate admits at most limit calls of a tooling at once; the rest wait in
// FIFO order. An admitted async call runs on a goroutine that, when done,
// goes on with the next queued async call (or hands its slot to the next
// queued blocking caller); a blocking call runs on its caller's goroutine.
// There is no idle worker: a goroutine exists only for a running call.
type gate struct {
	s     *Served
	limit int

	mu      sync.Mutex
	running int
	queue   []*Call
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

func newGate(s *Served, limit int) *gate { return &gate{s: s, limit: limit} }

// submit runs the async call c now if a slot is free, else queues it.
func (g *gate) submit(c *Call) {
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
func (g *gate) runBlocking(c *Call) {
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
func (g *gate) runLoop(c *Call) {
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
func (g *gate) next() *Call {
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
		if c.Blocking {
			close(c.admitted)
			return nil
		}
		return c
	}
	g.running--
	return nil
}

func (g *gate) push(c *Call) {
	if g.head >= 256 && g.head*2 >= len(g.queue) {
		n := copy(g.queue, g.queue[g.head:])
		clear(g.queue[n:])
		g.queue, g.head = g.queue[:n], 0
	}
	g.queue = append(g.queue, c)
}
