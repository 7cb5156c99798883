package tracing_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/toolhostd/toolhostd/internal/tracing"
)

// BenchmarkSpan is one message-like span (four attributes at its start,
// one at its end, an event) recorded and kept in memory (traces = {}):
// the CPU a sampled span costs on its own, without an exporter.
func BenchmarkSpan(b *testing.B) {
	tr, err := tracing.New(tracing.Options{Enabled: true, Getenv: func(string) string { return "" }})
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Close(context.Background())
	t := tr.Provider().Tracer("bench")
	b.ReportAllocs()
	for b.Loop() {
		_, s := t.Start(context.Background(), "invoke_agent echo", trace.WithAttributes(
			tracing.AttrAgentName.String("echo"), tracing.AttrMessageID.String("0123456789abcdef0123456789abcdef0123"),
			tracing.AttrSession.String("s1"), tracing.AttrAgent.String("echo")))
		s.SetAttributes(tracing.AttrOutcome.String("ok"))
		s.AddEvent("gen_ai.first_delta")
		s.End()
	}
}
