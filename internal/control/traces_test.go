package control_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/control/controltest"
	"github.com/toolhostd/toolhostd/internal/tracing"
)

// TestTraceRoutes: GET /v1/traces lists the kept traces by agent,
// session and message; GET /v1/traces/{id} serves one with its spans'
// parents; a bad id is 400, an unknown one 404, and without traces both
// routes say how to turn them on.
func TestTraceRoutes(t *testing.T) {
	off := controltest.Serve(t, control.Options{Backend: controltest.NewBackend()})
	for _, path := range []string{"/v1/traces", "/v1/traces/0123456789abcdef0123456789abcdef"} {
		a := request(t, unixHTTP(off.Socket()), "GET", "http://toolhostd"+path, "")
		if a.status != 404 || errorOf(t, a) != "traces are off: set [host] traces or OTEL_EXPORTER_OTLP_ENDPOINT" {
			t.Errorf("%s without traces: %d %s", path, a.status, a.body)
		}
	}

	rec := tracing.NewRecent(0, 0)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	tr := tp.Tracer("t")
	message := func(agent, session, id string) trace.SpanContext {
		ctx, span := tr.Start(context.Background(), "invoke_agent "+agent, trace.WithAttributes(
			tracing.AttrAgentName.String(agent), tracing.AttrSession.String(session), tracing.AttrMessageID.String(id)))
		_, child := tr.Start(ctx, "execute_tool echo")
		child.End()
		span.End()
		return span.SpanContext()
	}
	first := message("a", "s1", "m1")
	second := message("b", "s2", "m2")

	srv := controltest.Serve(t, control.Options{Backend: controltest.NewBackend(), Traces: rec})
	c, err := control.Dial(srv.Socket())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	for _, tc := range []struct {
		name   string
		filter tracing.Filter
		want   []trace.SpanContext
	}{
		{"all, newest first", tracing.Filter{}, []trace.SpanContext{second, first}},
		{"by agent", tracing.Filter{Agent: "a"}, []trace.SpanContext{first}},
		{"by session", tracing.Filter{Session: "s2"}, []trace.SpanContext{second}},
		{"by message", tracing.Filter{Message: "m1"}, []trace.SpanContext{first}},
		{"none", tracing.Filter{Agent: "a", Session: "s2"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			list, err := c.Traces(t.Context(), tc.filter)
			if err != nil {
				t.Fatal(err)
			}
			if len(list) != len(tc.want) {
				t.Fatalf("%d traces, want %d: %+v", len(list), len(tc.want), list)
			}
			for i, sc := range tc.want {
				if list[i].TraceID != sc.TraceID().String() || list[i].Spans != 2 {
					t.Errorf("trace %d: %+v, want %s with 2 spans", i, list[i], sc.TraceID())
				}
			}
		})
	}
	got, err := c.Trace(t.Context(), first.TraceID().String())
	if err != nil {
		t.Fatal(err)
	}
	spans := tracing.Sorted(got.Spans)
	if len(spans) != 2 || spans[0].Name != "invoke_agent a" || spans[1].ParentID != spans[0].SpanID || spans[0].SpanID != first.SpanID().String() {
		t.Fatalf("trace %+v", got)
	}
	for _, tc := range []struct {
		id     string
		status int
	}{{"not-hex", 400}, {"0123456789abcdef0123456789abcdef", 404}} {
		if a := request(t, unixHTTP(srv.Socket()), "GET", "http://toolhostd/v1/traces/"+tc.id, ""); a.status != tc.status {
			t.Errorf("GET /v1/traces/%s: %d %s, want %d", tc.id, a.status, a.body, tc.status)
		}
	}
}
