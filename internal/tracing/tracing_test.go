package tracing_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/toolhostd/toolhostd/internal/testenv"
	"github.com/toolhostd/toolhostd/internal/tracing"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// env is a Getenv over a map.
func env(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

func TestNew(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		opts                   tracing.Options
		env                    map[string]string
		on, exporting, capture bool
	}{
		{"nothing asks", tracing.Options{}, nil, false, false, false},
		{"config without endpoint", tracing.Options{Enabled: true}, nil, true, false, false},
		{"config endpoint", tracing.Options{Enabled: true, Endpoint: "http://127.0.0.1:1/v1/traces"}, nil, true, true, false},
		{"environment endpoint", tracing.Options{}, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}, true, true, false},
		{"environment traces endpoint", tracing.Options{}, map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:1/v1/traces"}, true, true, false},
		{"sdk disabled", tracing.Options{Enabled: true}, map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}, false, false, false},
		{"capture by config", tracing.Options{Enabled: true, CaptureContent: true}, nil, true, false, true},
		{"capture by the GenAI switch", tracing.Options{Enabled: true}, map[string]string{tracing.CaptureContentEnv: "true"}, true, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Getenv = env(tc.env)
			tr, err := tracing.New(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close(context.Background())
			if tr.On() != tc.on || tr.Exporting() != tc.exporting || tr.CaptureContent() != tc.capture {
				t.Fatalf("on %v exporting %v capture %v, want %v %v %v", tr.On(), tr.Exporting(), tr.CaptureContent(), tc.on, tc.exporting, tc.capture)
			}
			_, span := tr.Provider().Tracer("t").Start(context.Background(), "x")
			span.End()
			if span.SpanContext().IsValid() != tc.on || (tr.Recent() != nil) != tc.on {
				t.Fatalf("span valid %v, recent %v, want %v", span.SpanContext().IsValid(), tr.Recent() != nil, tc.on)
			}
		})
	}
}

// TestExport: spans reach a collector with the resource; the counters
// say so; Close flushes.
func TestExport(t *testing.T) {
	rcv := testenv.NewOTLPReceiver(t)
	tr, err := tracing.New(tracing.Options{Enabled: true, Endpoint: rcv.URL, Version: "1.2.3", Member: "m1", Getenv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		_, span := tr.Provider().Tracer("t").Start(context.Background(), "x")
		span.End()
	}
	if err := tr.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(rcv.Spans("")); n != 5 || tr.Exported() != 5 || tr.Ended() != 5 || tr.Dropped() != 0 {
		t.Fatalf("received %d, exported %d, ended %d, dropped %d; want 5 5 5 0", n, tr.Exported(), tr.Ended(), tr.Dropped())
	}
	res := rcv.Resources()[0]
	for k, want := range map[string]string{"service.name": "toolhostd", "service.version": "1.2.3", "toolhost.cluster.member": "m1"} {
		if res[k] != want {
			t.Errorf("resource %s = %q, want %q (all: %v)", k, res[k], want, res)
		}
	}
	if res["host.name"] == "" {
		t.Errorf("resource has no host.name: %v", res)
	}
}

// TestUnreachable: a collector that does not answer costs the spans,
// counted, and one warning, however many exports fail.
func TestUnreachable(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "200") // an export, retries included, gives up after 0.2 s
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	core, logs := observer.New(zap.DebugLevel)
	tr, err := tracing.New(tracing.Options{Enabled: true, Endpoint: gone.URL + "/v1/traces", Log: zap.New(core), Getenv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		_, span := tr.Provider().Tracer("t").Start(context.Background(), "x")
		span.End()
		_ = tr.Flush(context.Background())
	}
	_ = tr.Close(context.Background())
	if tr.Dropped() != 3 || tr.Exported() != 0 {
		t.Fatalf("dropped %d exported %d, want 3 0", tr.Dropped(), tr.Exported())
	}
	if n := logs.FilterMessageSnippet("cannot export traces").Len(); n != 1 {
		t.Fatalf("warned %d times, want once", n)
	}
	if got, ok := tr.Recent().Get(""); ok {
		t.Fatalf("a trace with no id: %+v", got)
	}
	if len(tr.Recent().List(tracing.Filter{})) != 3 {
		t.Fatalf("kept %d traces, want the 3 the collector did not take", len(tr.Recent().List(tracing.Filter{})))
	}
}

// TestSampling: a ratio of 0 records no root trace, but a message whose
// caller sampled its trace is recorded (parent based).
func TestSampling(t *testing.T) {
	zero := 0.0
	tr, err := tracing.New(tracing.Options{Enabled: true, Ratio: &zero, Getenv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close(context.Background())
	_, root := tr.Provider().Tracer("t").Start(context.Background(), "root")
	root.End()
	ctx := tracing.Propagator.Extract(context.Background(), propagation.MapCarrier{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"})
	_, child := tr.Provider().Tracer("t").Start(ctx, "child")
	child.End()
	if root.SpanContext().IsSampled() || !child.SpanContext().IsSampled() || tr.Ended() != 1 {
		t.Fatalf("root sampled %v, child sampled %v, ended %d", root.SpanContext().IsSampled(), child.SpanContext().IsSampled(), tr.Ended())
	}
}

// TestRecentBounds: Recent keeps the newest traces within its count and
// its bytes, and finds them by the message spans' attributes.
func TestRecentBounds(t *testing.T) {
	for _, tc := range []struct {
		name            string
		keep, keepBytes int
		traces          int
		want            int
	}{
		{"by count", 3, 1 << 20, 5, 3},
		{"by bytes", 100, 3000, 10, 2}, // each trace's span holds a 1,000-byte attribute
		{"one is always kept", 1, 1, 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := tracing.New(tracing.Options{Enabled: true, Keep: tc.keep, KeepBytes: tc.keepBytes, Getenv: env(nil)})
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close(context.Background())
			var ids []string
			for i := range tc.traces {
				_, span := tr.Provider().Tracer("t").Start(context.Background(), "invoke_agent a", trace.WithAttributes(
					tracing.AttrMessageID.String("m"+string(rune('a'+i))),
					tracing.AttrAgentName.String("a"),
					attribute.String("pad", strings.Repeat("x", 1000))))
				span.End()
				ids = append(ids, span.SpanContext().TraceID().String())
			}
			list := tr.Recent().List(tracing.Filter{})
			if len(list) != tc.want {
				t.Fatalf("kept %d, want %d", len(list), tc.want)
			}
			if list[0].TraceID != ids[len(ids)-1] {
				t.Fatalf("newest first: %s, want %s", list[0].TraceID, ids[len(ids)-1])
			}
			if _, ok := tr.Recent().Get(ids[0]); ok {
				t.Fatal("the oldest trace is still kept")
			}
			last := "m" + string(rune('a'+tc.traces-1))
			if got := tr.Recent().List(tracing.Filter{Agent: "a", Message: last}); len(got) != 1 || got[0].TraceID != ids[len(ids)-1] {
				t.Fatalf("by message %s: %+v", last, got)
			}
			if got := tr.Recent().List(tracing.Filter{Agent: "b"}); len(got) != 0 {
				t.Fatalf("agent b: %+v", got)
			}
		})
	}
}
