package contract

// The agent's spans, by the OpenTelemetry GenAI conventions: execute_tool
// {tool} for each tool call (the MCP client's span is its child) and chat
// {model} for each model request, children of the message the instance is
// working on (the last one it received that is still open) or new traces
// of their own when it works on none.

import (
	"context"
	"encoding/json"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolhostd/toolhostd/internal/inbox"
	"github.com/toolhostd/toolhostd/internal/provider"
	"github.com/toolhostd/toolhostd/internal/tooling"
	"github.com/toolhostd/toolhostd/internal/tracing"
)

const tracerName = "github.com/toolhostd/toolhostd/internal/contract"

// Attributes the conventions leave to the host.
const (
	attrTooling = attribute.Key("toolhost.tooling")
	attrDeltas  = attribute.Key("toolhost.chat.deltas")
)

// Received is the host's word that the guest took env from its inbox:
// a message envelope makes that message the one the instance works on.
func (a *Agent) Received(env inbox.Envelope) {
	if a.rec.tracer == nil {
		return
	}
	if _, ok := env.Event.(inbox.Message); ok {
		a.mail.box.Took(env.ID)
	}
}

// spanParent is the context an operation of the agent starts its span
// in: the agent's, with the current message's span as parent.
func (a *Agent) spanParent() context.Context {
	if sc := a.mail.box.Current(); sc.IsValid() {
		return trace.ContextWithSpanContext(a.life.ctx, sc)
	}
	return a.life.ctx
}

// messageContext is ctx with the current message's span as parent (a
// send's context: the receiver's invoke_agent is its child).
func (a *Agent) messageContext(ctx context.Context) context.Context {
	if a.rec.tracer == nil {
		return ctx
	}
	if sc := a.mail.box.Current(); sc.IsValid() {
		return trace.ContextWithSpanContext(ctx, sc)
	}
	return ctx
}

// startTool starts a tool call's span; the zero span when not tracing.
func (h *Handle) startTool(name, id, args string) (context.Context, trace.Span) {
	a := h.a
	if a.rec.tracer == nil {
		return a.life.ctx, nil
	}
	ctx, span := a.rec.tracer.Start(a.spanParent(), "execute_tool "+name, trace.WithSpanKind(trace.SpanKindInternal))
	if span.IsRecording() {
		span.SetAttributes(semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolName(name),
			semconv.GenAIToolCallID(id), attrTooling.String(h.s.Name()), tracing.AttrAgent.String(a.name))
		if a.rec.capture {
			span.SetAttributes(semconv.GenAIToolCallArgumentsKey.String(args))
		}
	}
	return ctx, span
}

// refusedTool records a call refused before it was made (denied, over a
// limit, bad arguments) as a span of its own.
func (h *Handle) refusedTool(name string, err error) {
	a := h.a
	if a.rec.tracer == nil {
		return
	}
	_, span := a.rec.tracer.Start(a.spanParent(), "execute_tool "+name, trace.WithSpanKind(trace.SpanKindInternal))
	if span.IsRecording() {
		herr := tooling.AsError(err)
		span.SetAttributes(semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolName(name),
			attrTooling.String(h.s.Name()), tracing.AttrAgent.String(a.name),
			tracing.AttrOutcome.String(herr.Code.String()), semconv.ErrorTypeKey.String(herr.Code.String()))
		span.AddEvent("toolhost.refused", trace.WithAttributes(attribute.String("reason", herr.Message)))
		span.SetStatus(codes.Error, herr.Message)
	}
	span.End()
}

// endTool ends a call's span with its outcome.
func (c *call) endTool(res tooling.ToolResult, herr *tooling.Error) {
	span := c.span
	if span == nil {
		return
	}
	if span.IsRecording() {
		switch {
		case herr != nil:
			span.SetAttributes(tracing.AttrOutcome.String(herr.Code.String()), semconv.ErrorTypeKey.String(herr.Code.String()))
			if herr.Code == tooling.CodeCancelled {
				span.AddEvent("toolhost.cancelled")
			}
			span.SetStatus(codes.Error, herr.Message)
		case isToolError(res.Value):
			span.SetAttributes(tracing.AttrOutcome.String("tool-error"), semconv.ErrorTypeKey.String("tool_error"))
			span.SetStatus(codes.Error, "the tool reported an error")
		default:
			span.SetAttributes(tracing.AttrOutcome.String("ok"))
		}
		if c.h.a.rec.capture && herr == nil {
			span.SetAttributes(semconv.GenAIToolCallResultKey.String(res.Value))
		}
	}
	span.End()
}

// parent is the context a model request of the handle starts in.
func (ph *ProviderHandle) parent() context.Context {
	if ph.a.rec.tracer == nil {
		return ph.a.life.ctx
	}
	return ph.a.spanParent()
}

// startChat starts a model request's span.
func (ph *ProviderHandle) startChat(parent context.Context, req provider.Request) (context.Context, trace.Span) {
	a := ph.a
	if a.rec.tracer == nil {
		return parent, nil
	}
	model := req.Model
	if model == "" {
		model = provider.DefaultModel(ph.p)
	}
	ctx, span := a.rec.tracer.Start(parent, "chat "+model, trace.WithSpanKind(trace.SpanKindClient))
	if span.IsRecording() {
		span.SetAttributes(semconv.GenAIOperationNameChat, semconv.GenAIProviderNameKey.String(ph.p.Kind()),
			semconv.GenAIRequestModel(model), attribute.String("toolhost.provider", ph.name), tracing.AttrAgent.String(a.name))
		if a.rec.capture {
			span.SetAttributes(semconv.GenAIInputMessagesKey.String(string(provider.AuditJSON(req))))
		}
	}
	return ctx, span
}

// endChat ends a model request's span with its response.
func (ph *ProviderHandle) endChat(span trace.Span, e chatEnd, deltas int) {
	if span == nil {
		return
	}
	if span.IsRecording() {
		if e.resp.Model != "" {
			span.SetAttributes(semconv.GenAIResponseModel(e.resp.Model))
		}
		if e.op == "chat-stream" {
			span.SetAttributes(attrDeltas.Int(deltas))
			if !e.first.IsZero() {
				span.AddEvent("gen_ai.first_delta", trace.WithTimestamp(e.first))
			}
		}
		if e.err != nil {
			span.SetAttributes(tracing.AttrOutcome.String(e.err.Code.String()), semconv.ErrorTypeKey.String(e.err.Code.String()))
			span.SetStatus(codes.Error, e.err.Message)
		} else {
			span.SetAttributes(tracing.AttrOutcome.String("ok"),
				semconv.GenAIUsageInputTokens(int(e.resp.Usage.InputTokens)),
				semconv.GenAIUsageOutputTokens(int(e.resp.Usage.OutputTokens)))
			span.SetAttributes(semconv.GenAIResponseFinishReasons(finishReason(e.resp.FinishReason)))
			if ph.a.rec.capture {
				b, _ := json.Marshal(e.resp.Message)
				span.SetAttributes(semconv.GenAIOutputMessagesKey.String(string(b)))
			}
		}
	}
	span.End()
}

// finishReason is the conventions' name of r (OpenAI's words).
func finishReason(r provider.FinishReason) string {
	switch r {
	case provider.FinishStop:
		return "stop"
	case provider.FinishLength:
		return "length"
	case provider.FinishToolCalls:
		return "tool_calls"
	case provider.FinishContentFilter:
		return "content_filter"
	}
	return "other"
}

// spanIDs are span's trace and span ids for an audit line ("" without a
// span).
func spanIDs(span trace.Span) (traceID, spanID string) {
	if span == nil {
		return "", ""
	}
	return tracing.AuditIDs(span.SpanContext())
}

// Traced reports whether the agent records spans.
func (a *Agent) Traced() bool { return a.rec.tracer != nil }

// Replayed records a host call a durable instance's replay answered from
// its oplog (entry seq) as an event of the span of the message it works
// on: a replayed call is not made again, so it is no span of its own.
func (a *Agent) Replayed(call string, seq uint64) {
	if a.rec.tracer == nil {
		return
	}
	a.mail.box.AddEvent("toolhost.replayed", attribute.String("toolhost.call", call), attribute.Int64("toolhost.oplog.seq", int64(seq)))
}

// Waited records a wait of the instance that began at start and ended now
// (in recv) as a span of the message it works on, when it works on a
// sampled one.
func (a *Agent) Waited(name string, start time.Time, attrs ...attribute.KeyValue) {
	if a.rec.tracer == nil {
		return
	}
	sc := a.mail.box.Current()
	if !sc.IsSampled() {
		return
	}
	_, span := a.rec.tracer.Start(trace.ContextWithSpanContext(a.life.ctx, sc), name, trace.WithTimestamp(start),
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(append(attrs, tracing.AttrAgent.String(a.name))...))
	span.End()
}

// noWork ends no span.
func noWork(error, ...attribute.KeyValue) {}

// Work starts a short span of the instance's work on the message it is
// working on (a key-value operation), so that a trace shows where the
// message's time went; the span is a child of the
// message's and end ends it, with err as its status. When the agent does
// not trace, or works on no sampled message, there is no span and end
// does nothing.
func (a *Agent) Work(name string, attrs ...attribute.KeyValue) (end func(err error, attrs ...attribute.KeyValue)) {
	if a.rec.tracer == nil {
		return noWork
	}
	sc := a.mail.box.Current()
	if !sc.IsSampled() {
		return noWork
	}
	_, span := a.rec.tracer.Start(trace.ContextWithSpanContext(a.life.ctx, sc), name,
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(append(attrs, tracing.AttrAgent.String(a.name))...))
	return func(err error, attrs ...attribute.KeyValue) {
		span.SetAttributes(attrs...)
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
}
