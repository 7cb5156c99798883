package contract

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/audit"
	"github.com/toolhostd/toolhostd/internal/inbox"
	"github.com/toolhostd/toolhostd/internal/provider"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

// This file serves the WIT provider interface: provider.get, the blocking
// chat and the chat streams behind chat-stream (one goroutine each while it
// runs, deltas into the inbox, exactly one terminal envelope unless
// cancelled), with is-open and cancel of call-tool's semantics.

// ProviderLookup resolves a configured provider by name.
type ProviderLookup func(name string) (provider.Provider, bool)

// ChatRecord is one finished chat or chat stream, for metrics.
type ChatRecord struct {
	Agent, Provider string
	// Model is the model that answered, else the one asked for ("" for
	// the provider's default).
	Model string
	// Op is audit.OpChat or audit.OpChatStream.
	Op string
	// Outcome is "ok" or the error code.
	Outcome string
	// Duration is from the request to its end; FirstToken from the
	// request to the first delta (streams with a delta only).
	Duration, FirstToken time.Duration
	HasFirstToken        bool
	Usage                provider.Usage
}

// ProviderAccess is what an agent may do with the hub's providers.
type ProviderAccess struct {
	// Granted reports whether the agent may get the provider; nil: all.
	Granted func(name string) bool
	// Wrap, if set, wraps each provider the agent gets (its grant's limits
	// and budgets, say); an error fails the get.
	Wrap func(name string, p provider.Provider) (provider.Provider, error)
	// AuditMessages reports whether the audit lines of the provider's
	// requests carry the request's text (audit_arguments); nil: never.
	AuditMessages func(name string) bool
}

// ProviderHandle is one provider.get result: the WIT provider resource.
type ProviderHandle struct {
	a    *Agent
	p    provider.Provider
	name string

	// guarded by a.mu
	closed  bool
	streams map[string]*stream
}

// GetProvider returns a new handle on the provider called name: not-found
// when none is configured, denied when the agent was not granted it,
// cancelled after Close.
func (a *Agent) GetProvider(name string) (*ProviderHandle, error) {
	var p provider.Provider
	ok := false
	if a.prov.lookup != nil {
		p, ok = a.prov.lookup(name)
	}
	if !ok {
		return nil, tooling.Errorf(tooling.CodeNotFound, "no provider named %q", name)
	}
	if g := a.prov.access.Granted; g != nil && !g(name) {
		err := tooling.Errorf(tooling.CodeDenied, "agent %q is not granted provider %q", a.name, name)
		a.acc.pol.Denied(name, audit.OpGetProvider)
		a.rec.audit.Write(audit.Record{Agent: a.name, ModelRequest: audit.ModelRequest{Provider: name}, Op: audit.OpGetProvider, Outcome: err.Code.String(), Message: err.Message})
		return nil, err
	}
	if w := a.prov.access.Wrap; w != nil {
		var err error
		if p, err = w(name, p); err != nil {
			return nil, tooling.AsError(err)
		}
	}
	ph := &ProviderHandle{a: a, p: p, name: name, streams: make(map[string]*stream)}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil, errAgentClosed()
	}
	a.tab.provs[ph] = struct{}{}
	return ph, nil
}

// Kind is the provider's API, e.g. "openai".
func (ph *ProviderHandle) Kind() string { return ph.p.Kind() }

// Name is the provider's configured name.
func (ph *ProviderHandle) Name() string { return ph.name }

// Close is the handle's drop: the streams started through it are
// cancelled (their undelivered envelopes dropped). Idempotent.
func (ph *ProviderHandle) Close() {
	a := ph.a
	a.mu.Lock()
	if ph.closed {
		a.mu.Unlock()
		return
	}
	ph.closed = true
	ss := make([]*stream, 0, len(ph.streams))
	for id, s := range ph.streams {
		ss = append(ss, s)
		delete(a.tab.streams, id)
	}
	clear(ph.streams)
	delete(a.tab.provs, ph)
	a.mu.Unlock()
	for _, s := range ss {
		a.in.Cancel(s.id)
		s.cancel()
	}
}

func (ph *ProviderHandle) usable() *tooling.Error {
	ph.a.mu.Lock()
	defer ph.a.mu.Unlock()
	switch {
	case ph.a.closed:
		return errAgentClosed()
	case ph.closed:
		return tooling.Errorf(tooling.CodeCancelled, "the provider handle was dropped")
	}
	return nil
}

// admit checks a request against the handle's state and the contract
// (the grant's limits and budgets are the wrapped provider's).
func (ph *ProviderHandle) admit(op string, req provider.Request, raw []byte) error {
	err := ph.usable()
	if err == nil {
		err = validRequest(req)
	}
	if err != nil {
		ph.audit(chatEnd{op: op, req: req, raw: raw, start: time.Now(), err: tooling.AsError(err)})
		return err
	}
	return nil
}

// Chat sends req and waits for the whole response: cancelled when ctx
// ends, the agent closes or its inbox shuts down.
func (ph *ProviderHandle) Chat(ctx context.Context, req provider.Request) (provider.Response, error) {
	return ph.chat(ctx, req, false)
}

// ChatAgain is Chat made again by a durable instance's replay (its first
// making was cut off by a restart): its audit line says so.
func (ph *ProviderHandle) ChatAgain(ctx context.Context, req provider.Request) (provider.Response, error) {
	return ph.chat(ctx, req, true)
}

func (ph *ProviderHandle) chat(ctx context.Context, req provider.Request, again bool) (provider.Response, error) {
	raw := ph.auditJSON(req)
	if err := ph.admit(audit.OpChat, req, raw); err != nil {
		return provider.Response{}, err
	}
	pctx, span := ph.startChat(ph.parent(), req)
	cctx, cancel := context.WithCancel(pctx)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	start := time.Now()
	resp, err := ph.p.Chat(cctx, req)
	herr := chatError(cctx, err)
	ph.audit(chatEnd{op: audit.OpChat, req: req, raw: raw, start: start, resp: resp, err: herr, span: span, reissued: again})
	if herr != nil {
		return provider.Response{}, herr
	}
	return resp, nil
}

// stream is one chat-stream in flight.
type stream struct {
	id     string
	ph     *ProviderHandle
	req    provider.Request
	raw    []byte
	start  time.Time
	ctx    context.Context
	cancel context.CancelFunc
	span   trace.Span // nil when not tracing
	deltas int        // counted for the span, never recorded
	// skip is how many bytes of delta text the guest had before a
	// restart (ChatStreamAgain): not given again.
	skip     int
	reissued bool
}

// ChatStream validates req, reserves the stream's inbox slot and starts
// it; it returns the stream's id at once. Chat-delta envelopes with that id
// follow, then exactly one chat-done or error envelope, unless the stream
// is cancelled first. busy when the inbox has no room.
func (ph *ProviderHandle) ChatStream(req provider.Request) (string, error) {
	return ph.chatStream(&stream{id: newID(), ph: ph, req: req})
}

// ChatStreamAgain makes the chat stream id again ("": a new id, which it
// returns), for a durable instance whose replay ended with it open (its
// first making was cut off by a restart, after the guest had been given
// skip bytes of its deltas): its deltas go on past those bytes (the new
// text may differ from the first's: a model is not deterministic), its
// chat-done carries the new whole response, and its audit line says it
// was made again.
func (ph *ProviderHandle) ChatStreamAgain(id string, req provider.Request, skip int) (string, error) {
	if id == "" {
		id = newID()
	}
	return ph.chatStream(&stream{id: id, ph: ph, req: req, skip: skip, reissued: true})
}

func (ph *ProviderHandle) chatStream(s *stream) (string, error) {
	req := s.req
	raw := ph.auditJSON(req)
	if err := ph.admit(audit.OpChatStream, req, raw); err != nil {
		return "", err
	}
	a := ph.a
	s.raw, s.start = raw, time.Now()
	refuse := func(err *tooling.Error) (string, error) {
		ph.audit(chatEnd{op: audit.OpChatStream, id: s.id, req: req, raw: raw, start: s.start, err: err})
		return "", err
	}
	if err := a.in.ReserveChat(s.id); err != nil {
		switch {
		case errors.Is(err, inbox.ErrFull):
			return refuse(tooling.Errorf(tooling.CodeBusy, "the inbox is full: %d open calls and undelivered envelopes", a.in.Capacity()))
		case errors.Is(err, inbox.ErrShutdown):
			return refuse(errAgentClosed())
		}
		return refuse(tooling.Errorf(tooling.CodeInternal, "reserving the inbox slot: %w", err))
	}
	pctx, span := ph.startChat(ph.parent(), req)
	s.span = span
	s.ctx, s.cancel = context.WithCancel(pctx)
	a.mu.Lock()
	if a.closed || ph.closed {
		a.mu.Unlock()
		s.cancel()
		a.in.Cancel(s.id)
		return refuse(errAgentClosed())
	}
	a.tab.streams[s.id] = s
	ph.streams[s.id] = s
	a.mu.Unlock()
	if !a.hub.Go(s.run) {
		a.mu.Lock()
		delete(a.tab.streams, s.id)
		delete(ph.streams, s.id)
		a.mu.Unlock()
		s.cancel()
		a.in.Cancel(s.id)
		return refuse(tooling.Errorf(tooling.CodeUnavailable, "the host is stopping"))
	}
	return s.id, nil
}

// IsOpen reports whether the stream id is open: started, with its
// terminal envelope not yet enqueued, and not cancelled.
func (ph *ProviderHandle) IsOpen(id string) bool {
	ph.a.mu.Lock()
	_, ok := ph.a.tab.streams[id]
	ph.a.mu.Unlock()
	return ok && ph.a.in.Reserved(id)
}

// Cancel cancels the stream id: true if it was open (its request is
// aborted) or an envelope of it undelivered (dropped); after true no
// envelope with id is ever received.
func (ph *ProviderHandle) Cancel(id string) bool {
	a := ph.a
	a.mu.Lock()
	s := a.tab.streams[id]
	if s != nil {
		delete(a.tab.streams, id)
		delete(s.ph.streams, id)
	}
	a.mu.Unlock()
	if s == nil && !a.in.IsChat(id) {
		return false // not a chat-stream id (a call-tool one, say)
	}
	ok := a.in.Cancel(id)
	if s != nil {
		s.cancel()
		if ok {
			a.log.Debug("chat stream cancelled", zap.String("stream_id", id), zap.String("provider", ph.name))
		}
	}
	return ok
}

func (s *stream) run() {
	ph, a := s.ph, s.ph.a
	var first time.Time
	resp, err := func() (resp provider.Response, err error) {
		defer func() {
			if r := recover(); r != nil {
				a.log.Error("provider panicked in a chat stream", zap.String("provider", ph.name), zap.Any("panic", r))
				err = tooling.Errorf(tooling.CodeInternal, "provider %q panicked: %v", ph.name, r)
			}
		}()
		return ph.p.ChatStream(s.ctx, s.req, func(text string) {
			if s.skip > 0 { // the guest has these bytes from the first making
				n := min(s.skip, len(text))
				s.skip -= n
				text = text[n:]
			}
			if text == "" {
				return
			}
			if first.IsZero() {
				first = time.Now()
			}
			s.deltas++
			a.in.Delta(s.id, text)
		})
	}()
	herr := chatError(s.ctx, err)
	var ev inbox.Event
	if herr != nil {
		ev = inbox.Error{Err: *herr}
	} else {
		ev = inbox.ChatDone{Response: resp}
	}
	delivered := a.in.Deliver(s.id, ev)
	a.mu.Lock()
	if a.tab.streams[s.id] == s {
		delete(a.tab.streams, s.id)
		delete(ph.streams, s.id)
	}
	a.mu.Unlock()
	s.cancel()
	ph.audit(chatEnd{op: audit.OpChatStream, id: s.id, req: s.req, raw: s.raw, start: s.start, first: first, resp: resp, err: herr,
		span: s.span, deltas: s.deltas, reissued: s.reissued})
	if ce := a.log.Check(zap.DebugLevel, "chat stream done"); ce != nil {
		ce.Write(zap.String("stream_id", s.id), zap.String("provider", ph.name), zap.Duration("duration", time.Since(s.start)), zap.Bool("delivered", delivered))
	}
}

// chatError maps a failed request's error to the contract: the end of its
// own context is cancelled, the rest as the provider said.
func chatError(ctx context.Context, err error) *tooling.Error {
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return tooling.Errorf(tooling.CodeCancelled, "the chat request was cancelled")
	}
	return tooling.AsError(err)
}

// validRequest checks what the contract requires of a request before it is
// sent.
func validRequest(req provider.Request) *tooling.Error {
	bad := func(format string, args ...any) *tooling.Error {
		return tooling.Errorf(tooling.CodeInvalidArgument, "chat request: "+format, args...)
	}
	if len(req.Messages) == 0 {
		return bad("no messages")
	}
	calls := map[string]bool{} // the ids of the tool calls of the assistant messages so far
	for i, m := range req.Messages {
		switch m.Role {
		case provider.RoleTool:
			if m.ToolCallID == "" {
				return bad("message %d: a tool message needs the tool-call-id it answers", i)
			}
			if !calls[m.ToolCallID] {
				return bad("message %d: tool-call-id %q answers no tool call of an earlier assistant message", i, m.ToolCallID)
			}
		case provider.RoleSystem, provider.RoleUser, provider.RoleAssistant:
			if m.ToolCallID != "" {
				return bad("message %d: only a tool message has a tool-call-id", i)
			}
		default:
			return bad("message %d: unknown role %d", i, m.Role)
		}
		if len(m.ToolCalls) > 0 && m.Role != provider.RoleAssistant {
			return bad("message %d: only an assistant message has tool calls", i)
		}
		for _, tc := range m.ToolCalls {
			if tc.ID == "" || tc.Name == "" {
				return bad("message %d: a tool call needs an id and a name", i)
			}
			if !isObject(tc.Arguments) {
				return bad("message %d: the arguments of tool call %q are not a JSON object", i, tc.ID)
			}
			calls[tc.ID] = true
		}
	}
	names := map[string]bool{}
	for _, t := range req.Tools {
		if t.Name == "" {
			return bad("a tool without a name")
		}
		if names[t.Name] {
			return bad("tool %q is listed twice", t.Name)
		}
		names[t.Name] = true
		if !isObject(t.InputSchema) {
			return bad("the input-schema of tool %q is not a JSON object", t.Name)
		}
	}
	if tc := req.ToolChoice; tc != nil && tc.Mode == provider.ToolChoiceNamed && !names[tc.Name] {
		return bad("tool-choice names %q, which is not among the request's tools", tc.Name)
	}
	if tc := req.ToolChoice; tc != nil && tc.Mode == provider.ToolChoiceRequired && len(req.Tools) == 0 {
		return bad("tool-choice required without tools")
	}
	if t := req.Temperature; t != nil && !(*t >= 0 && *t <= 2) {
		return bad("temperature %v is not within [0, 2]", *t)
	}
	if m := req.MaxTokens; m != nil && *m == 0 {
		return bad("max-tokens is 0")
	}
	return nil
}

func isObject(s string) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal([]byte(s), &m) == nil && m != nil
}
