package contract

import (
	"errors"
	"sync/atomic"

	"go.opentelemetry.io/otel/trace"

	"github.com/toolhostd/toolhostd/internal/gateway"
	"github.com/toolhostd/toolhostd/internal/inbox"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

// call is one call-tool or call-tool-blocking of the agent: the gateway's
// call, and what the agent's side keeps of it.
type call struct {
	gc *gateway.Call
	h  *Handle
	// released is set when the call gave its policy slot back (at its end
	// or when the agent cancelled it, whichever is first).
	released atomic.Bool

	// span is the call's execute_tool span; nil when not tracing.
	span trace.Span

	// blocking only: done is closed when res and err are set
	done chan struct{}
	res  tooling.ToolResult
	err  *tooling.Error
}

// newCall makes a call, reserves its inbox slot (async) and enters it in
// the tables. The caller hands it to the gateway.
func (h *Handle) newCall(name, args string, blocking bool) (*call, error) {
	a := h.a
	if err := h.s.Removed(); err != nil {
		return nil, err
	}
	id := newID()
	if !blocking {
		if err := a.in.Reserve(id); err != nil {
			switch {
			case errors.Is(err, inbox.ErrFull):
				h.s.CountBusy()
				return nil, tooling.Errorf(tooling.CodeBusy, "the inbox is full: %d open calls and undelivered envelopes", a.in.Capacity())
			case errors.Is(err, inbox.ErrShutdown):
				return nil, errAgentClosed()
			}
			return nil, tooling.Errorf(tooling.CodeInternal, "reserving the inbox slot: %w", err)
		}
	}
	a.mu.Lock()
	if a.closed || h.closed {
		closedErr := errHandleClosed()
		if a.closed {
			closedErr = errAgentClosed()
		}
		a.mu.Unlock()
		if !blocking {
			a.in.Cancel(id)
		}
		return nil, closedErr
	}
	c := &call{h: h}
	if blocking {
		c.done = make(chan struct{})
	}
	ctx, span := h.startTool(name, id, args)
	c.span = span
	c.gc = h.s.NewCall(ctx, id, a.name, name, args, blocking, c.finished)
	a.tab.calls[id] = c
	h.calls[id] = c
	a.mu.Unlock()
	return c, nil
}

// finished is the call's end, once: its policy slot is released, its audit
// line written, the blocking caller woken or the envelope put into the
// call's reserved inbox slot (unless cancelled), and the call leaves the
// tables. It reports whether an envelope was delivered.
func (c *call) finished(res tooling.ToolResult, herr *tooling.Error) bool {
	c.release()
	c.audit(res, herr)
	c.endTool(res, herr)
	a, id := c.h.a, c.gc.ID
	delivered := false
	if c.gc.Blocking {
		c.res, c.err = res, herr
		close(c.done)
	} else {
		var ev inbox.Event
		if herr != nil {
			ev = inbox.Error{Err: *herr}
		} else {
			ev = inbox.ToolResult{Result: res}
		}
		delivered = a.in.Deliver(id, ev)
	}
	a.mu.Lock()
	if a.tab.calls[id] == c {
		delete(a.tab.calls, id)
		delete(c.h.calls, id)
	}
	a.mu.Unlock()
	return delivered
}

// sub is one subscription of the agent: the gateway's, and the agent's
// end of it (a gateway.Subscriber).
type sub struct {
	gs *gateway.Sub
	a  *Agent
	h  *Handle
}

func (s *sub) id() string { return s.gs.ID() }

// Open opens the subscription's stream in the inbox.
func (s *sub) Open() error {
	if err := s.a.in.OpenStream(s.id()); err != nil {
		if errors.Is(err, inbox.ErrShutdown) {
			return errAgentClosed()
		}
		return tooling.Errorf(tooling.CodeInternal, "opening the subscription: %w", err)
	}
	return nil
}

// Close closes the stream: whether it was live.
func (s *sub) Close() bool { return s.a.in.CloseStream(s.id()) }

// Updated offers the update to the inbox (which coalesces), unless the
// policy has hidden the uri since the subscription was made.
func (s *sub) Updated(ev inbox.Event) {
	if !s.h.pol.Grant().AllowURI(s.gs.URI()) {
		return
	}
	s.a.in.Update(s.id(), ev)
}

// ListUpdated offers the list, narrowed by the policy, to the inbox.
func (s *sub) ListUpdated(list []tooling.ResourceInfo) {
	s.a.in.Update(s.id(), inbox.ResourceListUpdated{Resources: allowedResources(s.h.pol.Grant(), list)})
}

// Ended ends the stream with herr's envelope and takes the subscription
// out of the tables.
func (s *sub) Ended(herr *tooling.Error) {
	s.a.in.EndStream(s.id(), inbox.Error{Err: *herr})
	s.a.mu.Lock()
	delete(s.a.tab.subs, s.id())
	delete(s.h.subs, s.id())
	s.a.mu.Unlock()
}
