package contract

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/audit"
	"github.com/toolhostd/toolhostd/internal/gateway"
	"github.com/toolhostd/toolhostd/internal/inbox"
	"github.com/toolhostd/toolhostd/internal/message"
	"github.com/toolhostd/toolhostd/internal/policy"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

// Agent is one agent's view of the hub: its inbox and the tables of the
// calls and subscriptions it made, by handle. Call and subscription ids are
// the agent's: is-open, cancel and unsubscribe look them up across its
// handles (unsubscribe only on a handle of the same tooling).
type Agent struct {
	hub  *gateway.Hub
	name string
	in   *inbox.Inbox
	log  *zap.Logger
	life lifetime
	acc  access
	rec  recorders
	mail mail         // set by NewAgent
	prov providerSide // set by NewAgent

	mu     sync.Mutex
	closed bool
	tab    tables // guarded by mu
}

// lifetime is how long the agent's work may run: ctx ends at Close or
// inbox shutdown and is the parent of every call.
type lifetime struct {
	ctx    context.Context
	cancel context.CancelFunc
	// stopWatch unregisters the inbox-shutdown hook that cancels ctx.
	stopWatch func() bool
}

// access is what the agent may do on the hub's toolings (policy.go).
type access struct {
	grants func(string) bool // nil: all
	pol    *policy.Agent     // nil: no narrowing
}

// recorders are where the agent's operations are written down: the
// audit log and the spans (trace.go).
type recorders struct {
	audit *audit.Log // nil: none
	// tracer nil: no spans; capture puts arguments, results, prompts and
	// completions on them.
	tracer  trace.Tracer
	capture bool
}

// tables are what the agent has open, by id or handle; Agent.mu guards
// them.
type tables struct {
	calls   map[string]*call // open calls (async and blocking)
	subs    map[string]*sub  // live subscriptions
	handles map[*Handle]struct{}
	streams map[string]*stream // open chat streams (chat.go)
	provs   map[*ProviderHandle]struct{}
}

// mail is the agent's side of messages (messages.go).
type mail struct {
	send Messaging
	box  *message.Mailbox
	out  *message.Outbox // nil without a router
	// leave: close leaves the open messages open (LeaveMessages).
	leave atomic.Bool
}

// providerSide is how the agent reaches the model providers (chat.go).
type providerSide struct {
	lookup  ProviderLookup
	access  ProviderAccess
	observe func(ChatRecord)
}

// Handle is one tooling.get result: the WIT tooling resource.
type Handle struct {
	a   *Agent
	s   *gateway.Served
	pol *policy.View // the agent's policy on this tooling; nil: all allowed

	// guarded by a.mu
	closed bool
	calls  map[string]*call
	subs   map[string]*sub
}

// Name is the agent's name.
func (a *Agent) Name() string { return a.name }

// Inbox is the agent's inbox.
func (a *Agent) Inbox() *inbox.Inbox { return a.in }

// Close is agent exit: every call it made is cancelled and every
// subscription ended; later operations fail with cancelled. Shutting the
// inbox down is the host's job. Close is idempotent.
func (a *Agent) Close() { a.CloseWith("agent " + a.name + " ended") }

// CloseWith is Close, failing the messages still open to the agent with
// why (unavailable: "agent A stopped: trap: ...").
func (a *Agent) CloseWith(why string) {
	a.closeMessages(why)
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return
	}
	a.closed = true
	a.life.stopWatch()
	hs := make([]*Handle, 0, len(a.tab.handles))
	for hd := range a.tab.handles {
		hs = append(hs, hd)
	}
	phs := make([]*ProviderHandle, 0, len(a.tab.provs))
	for ph := range a.tab.provs {
		phs = append(phs, ph)
	}
	a.mu.Unlock()
	for _, ph := range phs {
		ph.Close()
	}
	// In parallel: each may wait up to unsubscribeTimeout on its server, and
	// agent exit must stay bounded by one such wait, not their sum.
	var wg sync.WaitGroup
	for _, hd := range hs {
		wg.Go(hd.Close)
	}
	wg.Wait()
	a.life.cancel()
}

// Close is the handle's drop: it cancels the calls and ends the
// subscriptions made through it. Results already enqueued stay. Close is
// idempotent.
func (h *Handle) Close() {
	a := h.a
	a.mu.Lock()
	if h.closed {
		a.mu.Unlock()
		return
	}
	h.closed = true
	calls := make([]*call, 0, len(h.calls))
	for id, c := range h.calls {
		calls = append(calls, c)
		delete(a.tab.calls, id)
	}
	subs := make([]*sub, 0, len(h.subs))
	for id, s := range h.subs {
		subs = append(subs, s)
		delete(a.tab.subs, id)
	}
	clear(h.calls)
	clear(h.subs)
	delete(a.tab.handles, h)
	a.mu.Unlock()
	for _, c := range calls {
		if !c.gc.Blocking {
			a.in.Cancel(c.gc.ID)
		}
		c.release()
		c.gc.Cancel()
	}
	var wg sync.WaitGroup
	for _, s := range subs {
		wg.Go(func() { h.s.Unsubscribe(s.gs) })
	}
	wg.Wait()
}

// Kind is the tooling's implementation, e.g. "mcp".
func (h *Handle) Kind() string { return h.s.Kind() }

// Name is the tooling's configured name.
func (h *Handle) Name() string { return h.s.Name() }

func (h *Handle) usable() *tooling.Error {
	if err := h.s.Removed(); err != nil {
		return err
	}
	h.a.mu.Lock()
	defer h.a.mu.Unlock()
	switch {
	case h.a.closed:
		return errAgentClosed()
	case h.closed:
		return errHandleClosed()
	}
	return nil
}

// ListTools returns every tool of the tooling.
func (h *Handle) ListTools(ctx context.Context) ([]tooling.Tool, error) {
	if err := h.usable(); err != nil {
		return nil, err
	}
	ts, err := h.s.Tooling().ListTools(ctx)
	if err != nil {
		return nil, tooling.AsError(err)
	}
	return allowedTools(h.pol.Grant(), ts), nil
}

// Repeatable reports whether the tooling's server says a call of tool
// may be made again with no further effect (tooling.Tool.Repeatable):
// what a durable agent's replay asks of a call whose outcome was lost.
// A tool it cannot list is not repeatable.
func (h *Handle) Repeatable(ctx context.Context, tool string) bool {
	ts, err := h.ListTools(ctx)
	if err != nil {
		return false
	}
	for _, t := range ts {
		if t.Name == tool {
			return t.Repeatable
		}
	}
	return false
}

// ListResources returns every resource of the tooling.
func (h *Handle) ListResources(ctx context.Context) ([]tooling.ResourceInfo, error) {
	if err := h.usable(); err != nil {
		return nil, err
	}
	rs, err := h.s.Tooling().ListResources(ctx)
	if err != nil {
		return nil, tooling.AsError(err)
	}
	return allowedResources(h.pol.Grant(), rs), nil
}

// ReadResource reads uri now.
func (h *Handle) ReadResource(ctx context.Context, uri string) (tooling.ResourceContent, error) {
	if err := h.usable(); err != nil {
		return tooling.ResourceContent{}, err
	}
	start := time.Now()
	if err := h.pol.URI(audit.OpReadResource, uri); err != nil {
		h.recordURI(audit.OpReadResource, uri, "", start, err)
		return tooling.ResourceContent{}, err
	}
	// The MCP client's resources/read span is a child of the message
	// the instance works on.
	rc, err := h.s.Tooling().ReadResource(h.a.messageContext(ctx), uri)
	h.recordURI(audit.OpReadResource, uri, "", start, err)
	if err != nil {
		return tooling.ResourceContent{}, tooling.AsError(err)
	}
	return rc, nil
}

// CallTool queues a call of tool name and returns its id at once. Exactly
// one envelope with that id follows in the agent's inbox unless the call is
// cancelled first. invalid-argument when args is not a JSON object, busy
// when the inbox has no room for the result.
func (h *Handle) CallTool(name, args string) (string, error) {
	if err := validArgs(name, args); err != nil {
		h.recordRefused(audit.OpCallTool, name, args, err)
		return "", err
	}
	if err := h.admit(audit.OpCallTool, name, args); err != nil {
		return "", err
	}
	c, err := h.newCall(name, args, false)
	if err != nil {
		h.pol.Release()
		h.recordRefused(audit.OpCallTool, name, args, err)
		return "", err
	}
	h.s.Submit(c.gc)
	return c.gc.ID, nil
}

// IsOpen reports whether the call id is open: made and neither enqueued
// nor cancelled.
func (h *Handle) IsOpen(id string) bool { return h.a.in.ReservedCall(id) }

// Cancel cancels the call id: true if it was open (the MCP request is
// cancelled) or its envelope still undelivered (the envelope is dropped);
// after true no envelope with id is ever received.
func (h *Handle) Cancel(id string) bool {
	a := h.a
	a.mu.Lock()
	c := a.tab.calls[id]
	if c != nil {
		if c.gc.Blocking {
			c = nil // not a call-tool id
		} else {
			delete(a.tab.calls, id)
			delete(c.h.calls, id)
		}
	}
	a.mu.Unlock()
	if c == nil && a.in.IsChat(id) {
		return false // a chat-stream id: only provider.cancel ends it
	}
	ok := a.in.Cancel(id)
	if c != nil {
		c.release() // a cancelled call no longer counts against the limits
		c.gc.Cancel()
		if ok {
			h.s.Log().Debug("call cancelled", zap.String("agent", a.name), zap.String("call_id", id), zap.String("tool", c.gc.Tool))
		}
	}
	return ok
}

// CallToolBlocking runs the same path as CallTool and waits for the
// result: timeout after the tooling's call timeout, cancelled when ctx
// ends, the agent closes or its inbox shuts down.
func (h *Handle) CallToolBlocking(ctx context.Context, name, args string) (tooling.ToolResult, error) {
	return h.CallToolBlockingAfter(ctx, name, args, nil)
}

// CallToolBlockingAfter is CallToolBlocking whose call is issued only once
// ready (if not nil) returns nil: a durable instance's started entry is
// then written. If ready fails, the call is not issued and fails with
// internal. ready and the call then run on a goroutine of their own while
// the caller waits for both: a caller on a locked OS thread (a guest's)
// is so woken once, for the result, not also for ready.
func (h *Handle) CallToolBlockingAfter(ctx context.Context, name, args string, ready func() error) (tooling.ToolResult, error) {
	if err := validArgs(name, args); err != nil {
		h.recordRefused(audit.OpCallToolBlocking, name, args, err)
		return tooling.ToolResult{}, err
	}
	select {
	case <-h.a.in.Done():
		return tooling.ToolResult{}, errAgentClosed()
	default:
	}
	if err := h.admit(audit.OpCallToolBlocking, name, args); err != nil {
		return tooling.ToolResult{}, err
	}
	c, err := h.newCall(name, args, true)
	if err != nil {
		h.pol.Release()
		h.recordRefused(audit.OpCallToolBlocking, name, args, err)
		return tooling.ToolResult{}, err
	}
	// The caller's ctx ends the call too (the agent's ends with the inbox
	// shutdown).
	stop := context.AfterFunc(ctx, c.gc.Cancel)
	if ready == nil {
		h.s.RunBlocking(c.gc)
	} else {
		ran := make(chan struct{})
		go func() {
			defer close(ran)
			h.s.RunBlockingAfter(c.gc, ready)
		}()
		<-ran
	}
	stop()
	<-c.done
	if c.err != nil {
		return tooling.ToolResult{}, c.err
	}
	return c.res, nil
}

// SubscribeResourceList subscribes to the resource list: every later
// list change yields one resource-list-updated envelope with the returned
// id.
func (h *Handle) SubscribeResourceList() (string, error) {
	start := time.Now()
	s, err := h.newSub("", true)
	if err != nil {
		return "", err
	}
	if err := h.s.SubscribeList(s.gs); err != nil {
		h.recordURI(audit.OpSubscribeResourceList, "", s.id(), start, err)
		return "", err
	}
	id, err := h.register(s)
	h.recordURI(audit.OpSubscribeResourceList, "", s.id(), start, err)
	return id, err
}

// SubscribeResource subscribes to uri's updates: every later update yields
// one resource-updated envelope with the returned id. The first subscriber
// of a uri (across agents) makes the MCP subscription, so ctx bounds that
// request; unsupported when the server lacks resources.subscribe.
func (h *Handle) SubscribeResource(ctx context.Context, uri string) (string, error) {
	start := time.Now()
	s, err := h.newSub(uri, false)
	if err != nil {
		return "", err
	}
	if err := h.pol.URI(audit.OpSubscribeResource, uri); err != nil {
		h.recordURI(audit.OpSubscribeResource, uri, "", start, err)
		return "", err
	}
	if err := h.s.Subscribe(ctx, s.gs); err != nil {
		h.recordURI(audit.OpSubscribeResource, uri, s.id(), start, err)
		return "", err
	}
	id, err := h.register(s)
	h.recordURI(audit.OpSubscribeResource, uri, s.id(), start, err)
	return id, err
}

// UnsubscribeResourceList ends the resource-list subscription id: true if
// it ended a live one; afterwards no envelope with id is received.
func (h *Handle) UnsubscribeResourceList(id string) bool { return h.unsubscribe(id, true) }

// UnsubscribeResource ends the resource subscription id: true if it ended
// a live one; afterwards no envelope with id is received.
func (h *Handle) UnsubscribeResource(id string) bool { return h.unsubscribe(id, false) }

func (h *Handle) unsubscribe(id string, list bool) bool {
	a := h.a
	a.mu.Lock()
	s := a.tab.subs[id]
	if s == nil || s.gs.List() != list || s.h.s != h.s {
		a.mu.Unlock()
		return false
	}
	delete(a.tab.subs, id)
	delete(s.h.subs, id)
	a.mu.Unlock()
	start := time.Now()
	ok := h.s.Unsubscribe(s.gs)
	op := audit.OpUnsubscribeResource
	if list {
		op = audit.OpUnsubscribeResourceList
	}
	h.recordURI(op, s.gs.URI(), id, start, nil)
	return ok
}

func (h *Handle) newSub(uri string, list bool) (*sub, error) {
	if err := h.usable(); err != nil {
		return nil, err
	}
	s := &sub{a: h.a, h: h}
	s.gs = gateway.NewSub(newID(), h.a.name, uri, list, s)
	return s, nil
}

// register enters a subscription the gateway accepted into the tables, or
// ends it if the handle or agent closed meanwhile.
func (h *Handle) register(s *sub) (string, error) {
	a := h.a
	a.mu.Lock()
	if err := func() *tooling.Error {
		switch {
		case a.closed:
			return errAgentClosed()
		case h.closed:
			return errHandleClosed()
		}
		return nil
	}(); err != nil {
		a.mu.Unlock()
		h.s.Unsubscribe(s.gs)
		return "", err
	}
	a.tab.subs[s.id()] = s
	h.subs[s.id()] = s
	a.mu.Unlock()
	h.s.Log().Debug("subscribed", zap.String("agent", a.name), zap.String("sub_id", s.id()), zap.String("uri", s.gs.URI()), zap.Bool("list", s.gs.List()))
	return s.id(), nil
}

// validArgs checks that args is one JSON object.
func validArgs(name, args string) *tooling.Error {
	if name == "" {
		return tooling.Errorf(tooling.CodeInvalidArgument, "empty tool name")
	}
	i := 0
	for i < len(args) && (args[i] == ' ' || args[i] == '\t' || args[i] == '\n' || args[i] == '\r') {
		i++
	}
	if i == len(args) || args[i] != '{' || !json.Valid([]byte(args)) {
		return tooling.Errorf(tooling.CodeInvalidArgument, "tools/call %q: arguments must be a JSON object", name)
	}
	return nil
}
