package mcpserve_test

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolhostd/toolhostd/internal/message"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

// TestTraceparent: a tool call carrying a traceparent, in its _meta (the
// MCP conventions) or in its HTTP headers, makes the message's
// invoke_agent span a child of the caller's span; without one, the
// message is a root.
func TestTraceparent(t *testing.T) {
	const (
		traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
		spanID  = "00f067aa0ba902b7"
		parent  = "00-" + traceID + "-" + spanID + "-01"
	)
	for _, tc := range []struct {
		name   string
		meta   mcp.Meta
		header string
		child  bool
	}{
		{"meta", mcp.Meta{"traceparent": parent}, "", true},
		{"header", nil, parent, true},
		{"meta wins over header", mcp.Meta{"traceparent": parent}, "00-11111111111111111111111111111111-2222222222222222-01", true},
		{"none", nil, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
			f := serveWith(t, "", message.Options{Tracer: tp})
			tr := &mcp.StreamableClientTransport{Endpoint: f.url}
			if tc.header != "" {
				tr.HTTPClient = testenv.HeaderClient("Traceparent", tc.header)
			}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil).Connect(t.Context(), tr, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cs.Close() })
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "talk", Arguments: map[string]any{"message": "hello"}, Meta: tc.meta})
			if err != nil || res.IsError {
				t.Fatalf("call: %v %+v", err, res)
			}
			span := testenv.EndedSpan(t, rec, "invoke_agent talk")
			got := span.Parent()
			if !tc.child {
				if got.IsValid() {
					t.Fatalf("message without a traceparent has parent %s", got.SpanID())
				}
				return
			}
			if got.TraceID().String() != traceID || got.SpanID().String() != spanID || !got.IsRemote() {
				t.Fatalf("parent %s/%s remote %v, want %s/%s remote", got.TraceID(), got.SpanID(), got.IsRemote(), traceID, spanID)
			}
			if span.SpanContext().TraceID().String() != traceID {
				t.Fatalf("span in trace %s, want %s", span.SpanContext().TraceID(), traceID)
			}
		})
	}
}
