package mcpclient

// A call's MCP client span, by the OpenTelemetry MCP conventions:
// "{mcp.method.name} {target}", kind client, with the session and the
// transport, and the trace context carried to the server in the request's
// _meta (traceparent, tracestate, baggage; HTTP transports send the same
// in headers, package transport).

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolhostd/toolhostd/internal/tooling"
	"github.com/toolhostd/toolhostd/internal/tracing"
)

const tracerName = "github.com/toolhostd/toolhostd/internal/tooling/mcpclient"

// startSpan starts the span of an MCP request (method, on target: a tool
// name or a uri); nil when the client does not trace.
func (m *Client) startSpan(ctx context.Context, method, target string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if m.tracer == nil {
		return ctx, nil
	}
	ctx, span := m.tracer.Start(ctx, method+" "+target, trace.WithSpanKind(trace.SpanKindClient))
	if span.IsRecording() {
		tr := semconv.NetworkTransportTCP
		if m.cfg.Transport == "stdio" {
			tr = semconv.NetworkTransportPipe
		}
		span.SetAttributes(append(attrs, semconv.McpMethodNameKey.String(method),
			semconv.McpProtocolVersionKey.String(m.opts.protocol), tr,
			attribute.String("toolhost.tooling", m.name))...)
	}
	return ctx, span
}

// sessionSpan names the session a request went out on.
func sessionSpan(span trace.Span, cs *mcp.ClientSession) {
	if span != nil && span.IsRecording() {
		if id := cs.ID(); id != "" {
			span.SetAttributes(semconv.McpSessionIDKey.String(id))
		}
	}
}

// endSpan ends span with err's code.
func endSpan(span trace.Span, err error) {
	if span == nil {
		return
	}
	if err != nil && span.IsRecording() {
		herr := tooling.AsError(err)
		span.SetAttributes(semconv.ErrorTypeKey.String(herr.Code.String()))
		span.SetStatus(codes.Error, herr.Message)
	}
	span.End()
}

// injectMeta puts ctx's trace context into a request's _meta.
func injectMeta(ctx context.Context, span trace.Span, p interface {
	GetMeta() map[string]any
	SetMeta(map[string]any)
}) {
	if span == nil || !span.SpanContext().IsValid() {
		return
	}
	c := propagation.MapCarrier{}
	tracing.Propagator.Inject(ctx, c)
	if len(c) == 0 {
		return
	}
	m := p.GetMeta()
	if m == nil {
		m = map[string]any{}
		p.SetMeta(m)
	}
	for k, v := range c {
		m[k] = v
	}
}
