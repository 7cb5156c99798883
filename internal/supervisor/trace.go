package supervisor

// The span of a per-session instance's start: start_instance {agent}, a
// child of the message that caused it, from the delivery to the instance
// existing (its store made and the component instantiated), or to its
// failure to. The conventions name no such span; its attributes are
// toolhost.*.

import (
	"context"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolhostd/toolhostd/internal/host"
)

const tracerName = "github.com/toolhostd/toolhostd/internal/supervisor"

// startSpan ends once: at the instance's start or its failure. A nil
// *startSpan (not tracing, or no sampled message) does nothing.
type startSpan struct {
	span  trace.Span
	ended atomic.Bool
}

// startSpan starts the span of an instance start under ctx's message and
// makes cfg's OnStarted end it.
func (v *service) startSpan(ctx context.Context, cfg *host.AgentConfig, prog *host.Program, session string) *startSpan {
	tp := v.s.opts.Tracer
	sc := trace.SpanContextFromContext(ctx)
	if tp == nil || !sc.IsSampled() {
		return nil
	}
	attrs := []attribute.KeyValue{attribute.String("toolhost.agent", v.r.name), attribute.String("toolhost.component.content", prog.Content())}
	if session != "" {
		attrs = append(attrs, semconv.GenAIConversationID(session))
	}
	_, span := tp.Tracer(tracerName).Start(trace.ContextWithSpanContext(context.Background(), sc), "start_instance "+v.r.name,
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	s := &startSpan{span: span}
	prev := cfg.OnStarted
	cfg.OnStarted = func(d time.Duration) {
		if prev != nil {
			prev(d)
		}
		s.started(d)
	}
	return s
}

// started ends the span of an instance that exists, instantiated in d.
func (s *startSpan) started(d time.Duration) {
	if s == nil || s.ended.Swap(true) {
		return
	}
	s.span.SetAttributes(attribute.Float64("toolhost.instance.instantiate_ms", float64(d.Microseconds())/1000))
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
