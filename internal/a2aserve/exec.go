package a2aserve

import (
	"context"
	"errors"
	"iter"
	"strings"
	"sync"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"go.opentelemetry.io/otel/propagation"
	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/message"
	"github.com/toolhostd/toolhostd/internal/tooling"
	"github.com/toolhostd/toolhostd/internal/tracing"
)

// executor is one agent's a2asrv.AgentExecutor: a task is a message from
// "a2a" (its id the task's id, its session the contextId), the reply's
// deltas are appended to one text artifact, the reply ends it.
type executor struct {
	agent  string
	router *message.Router
	log    *zap.Logger

	mu   sync.Mutex
	open map[a2a.TaskID]*message.Message // the task's message while open
}

var _ a2asrv.AgentExecutor = (*executor)(nil)

func newExecutor(agent string, r *message.Router, log *zap.Logger) *executor {
	return &executor{agent: agent, router: r, log: log, open: map[a2a.TaskID]*message.Message{}}
}

// Execute implements a2asrv.AgentExecutor. It runs detached from the
// request (the SDK's doing) and ends with the message: a client that
// goes away stops nothing.
func (e *executor) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		content, err := textOf(ec.Message)
		if err != nil {
			yield(nil, err)
			return
		}
		req := message.Request{Agent: e.agent, Session: ec.ContextID, Sender: message.SenderA2A, Content: content}
		if ec.StoredTask == nil {
			req.ID = string(ec.TaskID) // GetTask and the message API name it alike
		}
		m, _, err := e.router.Send(traceContext(ctx, ec), req)
		if err != nil {
			e.log.Debug("a2a message refused", zap.String("agent", e.agent), zap.Error(err))
			yield(nil, protocolError(err))
			return
		}
		e.mu.Lock()
		e.open[ec.TaskID] = m
		e.mu.Unlock()
		defer func() {
			e.mu.Lock()
			delete(e.open, ec.TaskID)
			e.mu.Unlock()
		}()
		if ec.StoredTask == nil {
			if !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
				return
			}
		}
		if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
			return
		}
		e.follow(ctx, ec, m, yield)
	}
}

// traceContext is ctx with the trace context of the request that started
// the task (its traceparent, tracestate and baggage headers, which the
// SDK keeps as the request's service parameters), so that the message is
// a child of the caller's span.
func traceContext(ctx context.Context, ec *a2asrv.ExecutorContext) context.Context {
	c := propagation.MapCarrier{}
	for _, k := range tracing.Propagator.Fields() {
		if v, ok := ec.ServiceParams.Get(k); ok && len(v) > 0 {
			c[k] = v[0]
		}
	}
	if len(c) == 0 {
		return ctx
	}
	return tracing.Propagator.Extract(ctx, c)
}

// follow turns m's reply events into artifact and status events.
func (e *executor) follow(ctx context.Context, ec *a2asrv.ExecutorContext, m *message.Message, yield func(a2a.Event, error) bool) {
	var artifact a2a.ArtifactID
	chunk := func(text string, last bool) bool {
		var ev *a2a.TaskArtifactUpdateEvent
		if artifact == "" {
			ev = a2a.NewArtifactEvent(ec, a2a.NewTextPart(text))
			ev.Artifact.Name = "reply"
			artifact = ev.Artifact.ID
		} else {
			ev = a2a.NewArtifactUpdateEvent(ec, artifact, a2a.NewTextPart(text))
		}
		ev.LastChunk = last
		return yield(ev, nil)
	}
	var seq uint64
	var streamed int
	for {
		evs, _, changed := m.After(seq)
		for _, ev := range evs {
			seq = ev.Seq
			switch {
			case ev.Kind == message.KindDelta:
				streamed += len(ev.Text)
				if !chunk(ev.Text, false) {
					return
				}
			case ev.Kind == message.KindReply:
				// The reply's whole text is the deltas and then the rest.
				if !chunk(ev.Text[min(streamed, len(ev.Text)):], true) {
					return
				}
				yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
				return
			case ev.Code == tooling.CodeCancelled.String():
				yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, agentSays(ec, ev.Text)), nil)
				return
			default:
				yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateFailed, agentSays(ec, errorText(ev))), nil)
				return
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}

// Cancel implements a2asrv.AgentExecutor: the task's message is
// cancelled (its agent gets the cancelled envelope).
func (e *executor) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		e.mu.Lock()
		m := e.open[ec.TaskID]
		e.mu.Unlock()
		if m == nil {
			m, _ = e.router.Get(e.agent, string(ec.TaskID))
		}
		if m != nil {
			select {
			case <-m.Done():
				yield(nil, a2a.NewError(a2a.ErrTaskNotCancelable, "the task's reply has already ended"))
				return
			default:
			}
		}
		// The canceled status goes first, into the execution's queue while
		// the execution still runs: cancelling the message first would end
		// the execution (follow reports the cancel) and close that queue
		// before this event is written (a2a-go then fails the cancel with
		// "queue is closed").
		if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil) {
			return
		}
		if m != nil {
			m.Cancel()
		}
	}
}

func agentSays(ec *a2asrv.ExecutorContext, text string) *a2a.Message {
	return a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart(text))
}

// errorText is a failed reply's text: the agent's own words for a
// reply-error, else the code and message.
func errorText(ev message.Event) string {
	if ev.Code == message.CodeReplyError {
		return ev.Text
	}
	return ev.Code + ": " + ev.Text
}

// textOf is a message's text parts, joined; a message with other parts
// is refused (an agent takes text).
func textOf(m *a2a.Message) (string, error) {
	if m == nil {
		return "", a2a.NewError(a2a.ErrInvalidParams, "no message")
	}
	var b strings.Builder
	for _, p := range m.Parts {
		if _, ok := p.Content.(a2a.Text); !ok {
			return "", a2a.NewError(a2a.ErrUnsupportedContentType, "toolhostd agents take text parts only")
		}
		b.WriteString(p.Text())
	}
	if b.Len() == 0 {
		return "", a2a.NewError(a2a.ErrInvalidParams, "the message has no text")
	}
	return b.String(), nil
}

// protocolError maps a Router refusal to the A2A error a client expects.
func protocolError(err error) error {
	msg := tooling.AsError(err).Message
	switch {
	case errors.Is(err, message.ErrDenied):
		return a2a.NewError(a2a.ErrUnauthorized, msg)
	case errors.Is(err, message.ErrTooLarge):
		return a2a.NewError(a2a.ErrInvalidParams, msg)
	case errors.Is(err, message.ErrUnsupported):
		return a2a.NewError(a2a.ErrUnsupportedOperation, msg)
	case errors.Is(err, message.ErrUnknownAgent):
		return a2a.NewError(a2a.ErrInvalidRequest, msg)
	}
	return a2a.NewError(a2a.ErrServerError, msg)
}
