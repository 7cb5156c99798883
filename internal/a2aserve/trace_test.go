package a2aserve_test

import (
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2aclient"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolhostd/toolhostd/internal/message"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

// TestTraceparent: an A2A request with a traceparent header, blocking or
// streaming, makes the task's invoke_agent span a child of the caller's
// span; without one, the message is a root.
func TestTraceparent(t *testing.T) {
	const (
		traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
		spanID  = "00f067aa0ba902b7"
	)
	for _, tc := range []struct {
		name        string
		traceparent string
		stream      bool
	}{
		{"send", "00-" + traceID + "-" + spanID + "-01", false},
		{"stream", "00-" + traceID + "-" + spanID + "-01", true},
		{"none", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
			f := serveWith(t, "", message.Options{Tracer: tp})
			c, err := a2aclient.NewFromCard(t.Context(), f.card(t, "talk"),
				a2aclient.WithJSONRPCTransport(testenv.HeaderClient("Traceparent", tc.traceparent)))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Destroy() })
			if tc.stream {
				for _, err := range c.SendStreamingMessage(t.Context(), userMessage("hello", "")) {
					if err != nil {
						t.Fatal(err)
					}
				}
			} else if _, err := c.SendMessage(t.Context(), userMessage("hello", "")); err != nil {
				t.Fatal(err)
			}
			span := testenv.EndedSpan(t, rec, "invoke_agent talk")
			got := span.Parent()
			if tc.traceparent == "" {
				if got.IsValid() {
					t.Fatalf("message without a traceparent has parent %s", got.SpanID())
				}
				return
			}
			if got.TraceID().String() != traceID || got.SpanID().String() != spanID || !got.IsRemote() {
				t.Fatalf("parent %s/%s remote %v, want %s/%s remote", got.TraceID(), got.SpanID(), got.IsRemote(), traceID, spanID)
			}
		})
	}
}
