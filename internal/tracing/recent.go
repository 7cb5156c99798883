package tracing

import (
	"context"
	"sort"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Recent's bounds by default.
const (
	DefaultKeep      = 256
	DefaultKeepBytes = 16 << 20
	// maxSpansPerTrace bounds one trace: its later spans are dropped.
	maxSpansPerTrace = 2000
)

// Attribute keys Recent indexes traces by (the spans set them).
const (
	AttrMessageID = "toolhost.message.id"
	AttrAgentName = "gen_ai.agent.name"
	AttrSession   = "gen_ai.conversation.id"
)

// Span is one ended span as the control API serves it.
type Span struct {
	TraceID    string         `json:"trace_id"`
	SpanID     string         `json:"span_id"`
	ParentID   string         `json:"parent_span_id,omitempty"`
	Name       string         `json:"name"`
	Kind       string         `json:"kind"`
	Start      time.Time      `json:"start"`
	End        time.Time      `json:"end"`
	Status     string         `json:"status,omitempty"` // "error" or ""
	StatusText string         `json:"status_message,omitempty"`
	Attributes map[string]any `json:"attributes,omitempty"`
	Events     []Event        `json:"events,omitempty"`
}

// Event is a span's event.
type Event struct {
	Name       string         `json:"name"`
	Time       time.Time      `json:"time"`
	Attributes map[string]any `json:"attributes,omitempty"`
}

// Trace is one trace's ended spans, in the order they ended.
type Trace struct {
	TraceID string `json:"trace_id"`
	Spans   []Span `json:"spans"`
}

// Summary is a trace in a list: where it started and what it was for.
type Summary struct {
	TraceID  string    `json:"trace_id"`
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	Spans    int       `json:"spans"`
	Agents   []string  `json:"agents,omitempty"`
	Sessions []string  `json:"sessions,omitempty"`
	Messages []string  `json:"messages,omitempty"`
}

// Filter selects traces: each set field must match one of the trace's
// invoke_agent spans.
type Filter struct {
	Agent, Session, Message string
}

type kept struct {
	t        Trace
	bytes    int
	start    time.Time
	end      time.Time
	agents   []string
	sessions []string
	messages []string
}

// Recent keeps the last traces in memory, bounded in count and bytes
// (the oldest go first): a span processor of the SDK. Its methods are
// safe for concurrent use.
type Recent struct {
	keep, keepBytes int

	mu    sync.Mutex
	byID  map[string]*kept
	order []string // trace ids, oldest first
	bytes int
}

// NewRecent keeps up to keep traces and keepBytes bytes (0: defaults).
func NewRecent(keep, keepBytes int) *Recent {
	if keep <= 0 {
		keep = DefaultKeep
	}
	if keepBytes <= 0 {
		keepBytes = DefaultKeepBytes
	}
	return &Recent{keep: keep, keepBytes: keepBytes, byID: map[string]*kept{}}
}

// OnStart is part of sdktrace.SpanProcessor.
func (r *Recent) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// Shutdown is part of sdktrace.SpanProcessor.
func (r *Recent) Shutdown(context.Context) error { return nil }

// ForceFlush is part of sdktrace.SpanProcessor.
func (r *Recent) ForceFlush(context.Context) error { return nil }

// OnEnd keeps s.
func (r *Recent) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	sp := convert(s)
	size := spanSize(&sp)
	r.mu.Lock()
	defer r.mu.Unlock()
	k := r.byID[sp.TraceID]
	if k == nil {
		k = &kept{t: Trace{TraceID: sp.TraceID}, start: sp.Start, end: sp.End}
		r.byID[sp.TraceID] = k
		r.order = append(r.order, sp.TraceID)
	}
	if len(k.t.Spans) >= maxSpansPerTrace {
		return
	}
	k.t.Spans = append(k.t.Spans, sp)
	k.bytes += size
	r.bytes += size
	if sp.Start.Before(k.start) {
		k.start = sp.Start
	}
	if sp.End.After(k.end) {
		k.end = sp.End
	}
	if id, ok := sp.Attributes[AttrMessageID].(string); ok {
		k.messages = appendNew(k.messages, id)
		if a, ok := sp.Attributes[AttrAgentName].(string); ok {
			k.agents = appendNew(k.agents, a)
		}
		if a, ok := sp.Attributes[AttrSession].(string); ok {
			k.sessions = appendNew(k.sessions, a)
		}
	}
	for len(r.order) > 1 && (len(r.order) > r.keep || r.bytes > r.keepBytes) {
		old := r.order[0]
		r.order = r.order[1:]
		r.bytes -= r.byID[old].bytes
		delete(r.byID, old)
	}
}

// Get is the trace id while it is kept.
func (r *Recent) Get(id string) (Trace, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k, ok := r.byID[id]
	if !ok {
		return Trace{}, false
	}
	t := Trace{TraceID: k.t.TraceID, Spans: append([]Span(nil), k.t.Spans...)}
	return t, true
}

// List summarises the kept traces f selects, newest first.
func (r *Recent) List(f Filter) []Summary {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := []Summary{}
	for i := len(r.order) - 1; i >= 0; i-- {
		k := r.byID[r.order[i]]
		if !match(k.agents, f.Agent) || !match(k.sessions, f.Session) || !match(k.messages, f.Message) {
			continue
		}
		out = append(out, Summary{TraceID: k.t.TraceID, Start: k.start, End: k.end, Spans: len(k.t.Spans),
			Agents: k.agents, Sessions: k.sessions, Messages: k.messages})
	}
	return out
}

func match(have []string, want string) bool {
	if want == "" {
		return true
	}
	for _, h := range have {
		if h == want {
			return true
		}
	}
	return false
}

func appendNew(ss []string, s string) []string {
	for _, x := range ss {
		if x == s {
			return ss
		}
	}
	return append(ss, s)
}

func convert(s sdktrace.ReadOnlySpan) Span {
	sp := Span{
		TraceID: s.SpanContext().TraceID().String(),
		SpanID:  s.SpanContext().SpanID().String(),
		Name:    s.Name(),
		Kind:    s.SpanKind().String(),
		Start:   s.StartTime(),
		End:     s.EndTime(),
	}
	if p := s.Parent(); p.IsValid() {
		sp.ParentID = p.SpanID().String()
	}
	if st := s.Status(); st.Code.String() == "Error" {
		sp.Status, sp.StatusText = "error", st.Description
	}
	sp.Attributes = attrMap(s.Attributes())
	for _, e := range s.Events() {
		sp.Events = append(sp.Events, Event{Name: e.Name, Time: e.Time, Attributes: attrMap(e.Attributes)})
	}
	return sp
}

func attrMap(kvs []attribute.KeyValue) map[string]any {
	if len(kvs) == 0 {
		return nil
	}
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.AsInterface()
	}
	return m
}

// spanSize is about what a span holds: its strings and a fixed overhead.
func spanSize(s *Span) int {
	n := 200 + len(s.Name) + len(s.StatusText)
	for k, v := range s.Attributes {
		n += len(k) + valueSize(v)
	}
	for _, e := range s.Events {
		n += 64 + len(e.Name)
		for k, v := range e.Attributes {
			n += len(k) + valueSize(v)
		}
	}
	return n
}

func valueSize(v any) int {
	switch x := v.(type) {
	case string:
		return len(x)
	case []string:
		n := 0
		for _, s := range x {
			n += len(s)
		}
		return n
	}
	return 8
}

// Sorted returns the spans of t ordered by start time (a stable order
// for printing a tree).
func Sorted(spans []Span) []Span {
	out := append([]Span(nil), spans...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	return out
}
