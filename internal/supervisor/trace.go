package supervisor

// The span of an instance's start caused by a message: start_instance
// {agent}, a child of the message's span, for a per-session instance
// (from the delivery to the instance existing) and an on-message agent
// woken by the message (its component's load included: from the compile
// cache, or compiled). It ends once the component is instantiated, or
// with the error that stopped the start. The conventions name no such
// span; its attributes are toolhost.*.

import (
	"context"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolhostd/toolhostd/internal/host"
	"github.com/toolhostd/toolhostd/internal/tracing"
)

const tracerName = "github.com/toolhostd/toolhostd/internal/supervisor"

// startSpan ends once: at the instance's start or its failure. A nil
// *startSpan (not tracing, or no sampled message) does nothing.
type startSpan struct {
	span  trace.Span
	ended atomic.Bool
}

// startSpan starts the span of an instance start under cause, the
// message's span context (session: a per-session instance's).
func (v *service) startSpan(cause trace.SpanContext, session string) *startSpan {
	tp := v.s.opts.Tracer
	if tp == nil || !cause.IsSampled() {
		return nil
	}
	attrs := []attribute.KeyValue{tracing.AttrAgent.String(v.r.name)}
	if session != "" {
		attrs = append(attrs, semconv.GenAIConversationID(session))
	}
	_, span := tp.Tracer(tracerName).Start(trace.ContextWithSpanContext(context.Background(), cause), "start_instance "+v.r.name,
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	return &startSpan{span: span}
}

// loaded records the component the instance runs: its digest, whether
// the compile cache held it when it was loaded, and how long this start
// waited for it (0 for a program already open).
func (s *startSpan) loaded(prog *host.Program, took time.Duration) {
	if s == nil {
		return
	}
	s.span.SetAttributes(attribute.String("toolhost.component.content", prog.Content()),
		attribute.Bool("toolhost.component.cached", prog.FromCache()))
	if took > 0 {
		s.span.SetAttributes(attribute.Float64("toolhost.component.load_ms", ms(took)))
	}
}

// hook makes cfg's OnStarted end the span.
func (s *startSpan) hook(cfg *host.AgentConfig) {
	if s == nil {
		return
	}
	prev := cfg.OnStarted
	cfg.OnStarted = func(d time.Duration) {
		if prev != nil {
			prev(d)
		}
		s.started(d)
	}
}

// started ends the span of an instance that exists, instantiated in d.
func (s *startSpan) started(d time.Duration) {
	if s == nil || s.ended.Swap(true) {
		return
	}
	s.span.SetAttributes(attribute.Float64("toolhost.instance.instantiate_ms", ms(d)))
	s.span.End()
}

// fail ends the span of an instance that did not start, with err.
func (s *startSpan) fail(err error) {
	if s == nil || s.ended.Swap(true) {
		return
	}
	if err != nil {
		s.span.SetStatus(codes.Error, err.Error())
	}
	s.span.End()
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
