package contract_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/contract"
	"github.com/toolhostd/toolhostd/internal/inbox"
	"github.com/toolhostd/toolhostd/internal/testenv"
	"github.com/toolhostd/toolhostd/internal/tracing"
)

// BenchmarkCallEchoTraced is Handle.CallToolBlocking of the echo tool, one
// call at a time, on three agents and toolings whose calls are
// interleaved so that they share the machine's noise: tracing off (the
// baseline), on and sampled (an execute_tool span and the MCP client's
// tools/call span per call, kept in memory and exported over OTLP/HTTP to
// a local collector that takes them), on but unsampled (sampler ratio 0),
// and on and kept in memory only (no exporter). It reports each one's p50
// and its difference to the baseline's.
func BenchmarkCallEchoTraced(b *testing.B) {
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	zero := 0.0
	variants := []struct {
		name string
		opts *tracing.Options
	}{
		{"off", nil},
		{"sampled", &tracing.Options{Enabled: true, Endpoint: collector.URL + "/v1/traces"}},
		{"unsampled", &tracing.Options{Enabled: true, Ratio: &zero}},
		{"kept", &tracing.Options{Enabled: true}},
	}
	handles := make([]*contract.Handle, len(variants))
	for i, v := range variants {
		var tp trace.TracerProvider
		if v.opts != nil {
			v.opts.Getenv = func(string) string { return "" }
			t, err := tracing.New(*v.opts)
			if err != nil {
				b.Fatal(err)
			}
			defer t.Close(context.Background())
			tp = t.Provider()
		}
		e := newEnv(b, envOptions{log: zap.NewNop(), tracer: tp})
		a := contract.NewAgent(e.hub, "bench", inbox.New(64), contract.Options{Tracer: tp})
		defer a.Close()
		h, err := a.Get("mem")
		if err != nil {
			b.Fatal(err)
		}
		handles[i] = h
	}
	lat := make([][]time.Duration, len(variants))
	b.ResetTimer()
	round := 0
	for b.Loop() {
		for j := range handles { // each round starts at the next one: no place in the order is favoured
			i := (round + j) % len(handles)
			start := time.Now()
			if _, err := handles[i].CallToolBlocking(context.Background(), "echo", `{"text":"hello"}`); err != nil {
				b.Fatal(err)
			}
			lat[i] = append(lat[i], time.Since(start))
		}
		round++
	}
	names := make([]string, len(variants))
	for i, v := range variants {
		names[i] = v.name
	}
	testenv.ReportDeltas(b, names, lat)
}
