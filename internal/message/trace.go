package message

// A message's span: invoke_agent {agent}, by the OpenTelemetry GenAI
// conventions, from its acceptance (a child of the sender's span when the
// request carried a traceparent, or of the sending agent's message) to its
// reply.

import (
	"context"
	"encoding/json"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolhostd/toolhostd/internal/tooling"
	"github.com/toolhostd/toolhostd/internal/tracing"
)

// tracerName is the instrumentation scope of the message spans.
const tracerName = "github.com/toolhostd/toolhostd/internal/message"

// attrSender is a message's sender (the conventions have no key for it);
// attrResumed marks the span of a message resumed after a restart
// (Router.Resume).
const (
	attrSender  = attribute.Key("toolhost.message.sender")
	attrResumed = attribute.Key("toolhost.message.resumed")
)

// noSpan is the span of a message when the router does not trace: it
// records nothing, and costs the message no context.
var noSpan = trace.SpanFromContext(context.Background())

// startSpan starts req's span under ctx's.
func (r *Router) startSpan(ctx context.Context, req Request) (context.Context, trace.Span) {
	if r.tracer == nil {
		return ctx, noSpan
	}
	ctx, span := r.tracer.Start(ctx, "invoke_agent "+req.Agent, trace.WithSpanKind(trace.SpanKindInternal))
	if !span.IsRecording() {
		return ctx, span
	}
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameInvokeAgent,
		semconv.GenAIAgentName(req.Agent),
		attrSender.String(req.Sender),
	}
	if req.Session != "" {
		attrs = append(attrs, semconv.GenAIConversationID(req.Session))
	}
	if r.opts.CaptureContent {
		attrs = append(attrs, semconv.GenAIInputMessagesKey.String(messagesJSON("user", req.Content)))
	}
	span.SetAttributes(attrs...)
	return ctx, span
}

// spanRefused ends the span of a message that was not accepted.
func spanRefused(span trace.Span, err error) {
	if span.IsRecording() {
		code := tooling.AsError(err).Code.String()
		span.SetAttributes(tracing.AttrOutcome.String(code), semconv.ErrorTypeKey.String(code))
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// endSpan ends m's span with its outcome.
func (r *Router) endSpan(m *Message) {
	span := m.span
	if span == nil {
		return
	}
	if span.IsRecording() {
		outcome, text := m.outcome()
		first, hasFirst, _ := m.timing()
		if hasFirst {
			span.AddEvent("gen_ai.first_delta", trace.WithTimestamp(m.accepted.Add(first)))
		}
		span.SetAttributes(tracing.AttrOutcome.String(outcome))
		if outcome != "ok" {
			span.SetAttributes(semconv.ErrorTypeKey.String(outcome))
			span.SetStatus(codes.Error, text)
		} else if r.opts.CaptureContent {
			span.SetAttributes(semconv.GenAIOutputMessagesKey.String(messagesJSON("assistant", m.last().Text)))
		}
	}
	span.End()
}

// SpanContext is the message's span's: its trace id names the trace, and
// what the agent does while working on it is its child.
func (m *Message) SpanContext() trace.SpanContext {
	if m.span == nil {
		return trace.SpanContext{}
	}
	return m.span.SpanContext()
}

// messagesJSON is one text message as the conventions' gen_ai.input
// and output messages record it.
func messagesJSON(role, text string) string {
	b, _ := json.Marshal([]map[string]any{{"role": role, "parts": []map[string]string{{"type": "text", "content": text}}}})
	return string(b)
}
