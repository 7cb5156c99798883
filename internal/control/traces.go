package control

// GET /v1/traces and /v1/traces/{id}: the daemon's last traces, kept in
// memory (package tracing), for an operator without a collector and for
// `toolhostd trace`.

import (
	"context"
	"net/http"
	"net/url"
	"regexp"

	"go.opentelemetry.io/otel/propagation"

	"github.com/toolhostd/toolhostd/internal/tracing"
)

// TraceList is GET /v1/traces's answer.
type TraceList struct {
	Traces []tracing.Summary `json:"traces"`
}

var traceIDPattern = regexp.MustCompile(`^[0-9a-f]{32}$`)

// traceRoutes adds the trace endpoints to mux.
func (s *Server) traceRoutes(mux *http.ServeMux) {
	mux.HandleFunc("/v1/traces", only(http.MethodGet, s.listTraces))
	mux.HandleFunc("/v1/traces/{id}", only(http.MethodGet, s.getTrace))
}

func (s *Server) listTraces(w http.ResponseWriter, r *http.Request) {
	if s.opts.Traces == nil {
		writeError(w, http.StatusNotFound, "traces are off: set [host] traces or OTEL_EXPORTER_OTLP_ENDPOINT")
		return
	}
	q := r.URL.Query()
	writeJSON(w, http.StatusOK, TraceList{Traces: s.opts.Traces.List(tracing.Filter{
		Agent: q.Get("agent"), Session: q.Get("session"), Message: q.Get("message")})})
}

func (s *Server) getTrace(w http.ResponseWriter, r *http.Request) {
	if s.opts.Traces == nil {
		writeError(w, http.StatusNotFound, "traces are off: set [host] traces or OTEL_EXPORTER_OTLP_ENDPOINT")
		return
	}
	id := r.PathValue("id")
	if !traceIDPattern.MatchString(id) {
		writeError(w, http.StatusBadRequest, "a trace id is 32 lowercase hex digits")
		return
	}
	t, ok := s.opts.Traces.Get(id)
	if !ok {
		writeError(w, http.StatusNotFound, "no trace "+id+" is kept here (it ended long ago, or was not sampled)")
		return
	}
	writeJSON(w, http.StatusOK, t)
}

// Traces lists the kept traces that f selects, newest first.
func (c *Client) Traces(ctx context.Context, f tracing.Filter) ([]tracing.Summary, error) {
	v := url.Values{}
	for k, x := range map[string]string{"agent": f.Agent, "session": f.Session, "message": f.Message} {
		if x != "" {
			v.Set(k, x)
		}
	}
	path := "/v1/traces"
	if len(v) > 0 {
		path += "?" + v.Encode()
	}
	var out TraceList
	if err := c.do(ctx, http.MethodGet, path, &out); err != nil {
		return nil, err
	}
	return out.Traces, nil
}

// Trace is the kept trace id.
func (c *Client) Trace(ctx context.Context, id string) (tracing.Trace, error) {
	var t tracing.Trace
	err := c.do(ctx, http.MethodGet, "/v1/traces/"+url.PathEscape(id), &t)
	return t, err
}

// traceContext is r's context with the caller's trace context
// (traceparent, tracestate, baggage) as the parent of what r causes.
func traceContext(r *http.Request) context.Context {
	return tracing.Propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
}

// injectTrace sends ctx's trace context with a request.
func injectTrace(ctx context.Context, h http.Header) {
	tracing.Propagator.Inject(ctx, propagation.HeaderCarrier(h))
}
