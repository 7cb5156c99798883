package testenv

import (
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// OTLPReceiver is an OTLP/HTTP traces collector on a loopback port: it
// decodes the real protobuf export requests (POST /v1/traces) and keeps
// their spans and resources.
type OTLPReceiver struct {
	// URL is its traces endpoint (http://127.0.0.1:port/v1/traces).
	URL string

	mu        sync.Mutex
	spans     []*tracepb.Span
	resources []map[string]string
}

// NewOTLPReceiver starts a receiver, closed with t.
func NewOTLPReceiver(t testing.TB) *OTLPReceiver {
	r := &OTLPReceiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "want a protobuf POST to /v1/traces", http.StatusBadRequest)
			return
		}
		b, _ := io.ReadAll(req.Body)
		var ex collectortrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &ex); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		for _, rs := range ex.ResourceSpans {
			r.resources = append(r.resources, AttrStrings(rs.GetResource().GetAttributes()))
			for _, ss := range rs.ScopeSpans {
				r.spans = append(r.spans, ss.Spans...)
			}
		}
		r.mu.Unlock()
		out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(srv.Close)
	r.URL = srv.URL + "/v1/traces"
	return r
}

// Spans are the spans received so far (of the trace id, when not "").
func (r *OTLPReceiver) Spans(traceID string) []*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*tracepb.Span
	for _, s := range r.spans {
		if traceID == "" || hex.EncodeToString(s.TraceId) == traceID {
			out = append(out, s)
		}
	}
	return out
}

// Resources are the resources of the export requests so far, one per
// resource of each request.
func (r *OTLPReceiver) Resources() []map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]map[string]string(nil), r.resources...)
}

// AttrStrings are OTLP attributes as strings: an array's values joined by
// commas.
func AttrStrings(kvs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		switch v := kv.Value.Value.(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.Key] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.Key] = fmt.Sprint(v.IntValue)
		case *commonpb.AnyValue_BoolValue:
			m[kv.Key] = fmt.Sprint(v.BoolValue)
		case *commonpb.AnyValue_ArrayValue:
			var parts []string
			for _, x := range v.ArrayValue.Values {
				parts = append(parts, x.GetStringValue())
			}
			m[kv.Key] = strings.Join(parts, ",")
		default:
			m[kv.Key] = fmt.Sprint(kv.Value)
		}
	}
	return m
}

// EndedSpan waits (Eventually, up to 10 s) for a span called name to have
// ended in rec, and returns the last one: a span ends a moment after what
// a client waits for (a reply) is published.
func EndedSpan(t testing.TB, rec *tracetest.SpanRecorder, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	var span sdktrace.ReadOnlySpan
	Eventually(t, 10*time.Second, "the span "+name, func() bool {
		for _, s := range rec.Ended() {
			if s.Name() == name {
				span = s
			}
		}
		return span != nil
	})
	return span
}
