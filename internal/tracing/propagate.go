package tracing

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Detached is ctx carrying the trace context (span and baggage) of from:
// for work that outlives from's cancellation (a relayed stream, a remote
// task) but belongs to its trace.
func Detached(ctx, from context.Context) context.Context {
	ctx = trace.ContextWithSpanContext(ctx, trace.SpanContextFromContext(from))
	return baggage.ContextWithBaggage(ctx, baggage.FromContext(from))
}

// Transport sends the trace context of each request's context as its
// traceparent, tracestate and baggage headers, then Base's round trip
// (http.DefaultTransport when nil). A request without a trace context is
// sent as it is.
type Transport struct {
	Base http.RoundTripper
}

func (t Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	if trace.SpanContextFromContext(r.Context()).IsValid() {
		r = r.Clone(r.Context())
		Propagator.Inject(r.Context(), propagation.HeaderCarrier(r.Header))
	}
	return base.RoundTrip(r)
}
