package tracing

import (
	"context"
	"sort"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Recent's bounds by default.
const (
	DefaultKeep      = 256
	DefaultKeepBytes = 16 << 20
	// maxSpansPerTrace bounds one trace: its later spans are dropped.
	maxSpansPerTrace = 2000
)

// Attribute keys Recent indexes traces by (the message spans set them).
const (
	AttrMessageID = attribute.Key("toolhost.message.id")
	AttrAgentName = attribute.Key("gen_ai.agent.name")
	AttrSession   = attribute.Key("gen_ai.conversation.id")
)

// The host's keys where the conventions are silent, shared by the
// packages that start spans.
const (
	// AttrOutcome is an operation's outcome: ok, or its error code.
	AttrOutcome = attribute.Key("toolhost.outcome")
	// AttrAgent names the agent whose work a span is (beside the
	// conventions' gen_ai.agent.name, which names a message's agent).
	AttrAgent = attribute.Key("toolhost.agent")
)

// AuditIDs are sc's trace and span ids for an audit line, "" when sc is
// not sampled (no trace has it).
func AuditIDs(sc trace.SpanContext) (traceID, spanID string) {
	if !sc.IsSampled() {
		return "", ""
	}
	return sc.TraceID().String(), sc.SpanID().String()
}

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

// kept is one trace: its spans as the SDK ended them (converted only
// when asked for, off the agents' paths) and what List shows of it.
type kept struct {
	id       string
	spans    []sdktrace.ReadOnlySpan
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
	byID  map[trace.TraceID]*kept
	order []trace.TraceID // oldest first
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
	return &Recent{keep: keep, keepBytes: keepBytes, byID: map[trace.TraceID]*kept{}}
}

// OnStart is part of sdktrace.SpanProcessor.
func (r *Recent) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// Shutdown is part of sdktrace.SpanProcessor.
func (r *Recent) Shutdown(context.Context) error { return nil }

// ForceFlush is part of sdktrace.SpanProcessor.
func (r *Recent) ForceFlush(context.Context) error { return nil }

// OnEnd keeps s. It only indexes it: the conversion to a Span happens
// when the trace is asked for.
func (r *Recent) OnEnd(s sdktrace.ReadOnlySpan) {
	sc := s.SpanContext()
	if !sc.IsSampled() {
		return
	}
	var msg, agent, session string
	size := 200 + len(s.Name()) + len(s.Status().Description)
	for _, kv := range s.Attributes() {
		size += len(kv.Key) + valueSize(kv.Value)
		switch kv.Key {
		case AttrMessageID:
			msg = kv.Value.AsString()
		case AttrAgentName:
			agent = kv.Value.AsString()
		case AttrSession:
			session = kv.Value.AsString()
		}
	}
	for _, e := range s.Events() {
		size += 64 + len(e.Name)
		for _, kv := range e.Attributes {
			size += len(kv.Key) + valueSize(kv.Value)
		}
	}
	start, end := s.StartTime(), s.EndTime()
	r.mu.Lock()
	defer r.mu.Unlock()
	id := sc.TraceID()
	k := r.byID[id]
	if k == nil {
		k = &kept{id: id.String(), start: start, end: end}
		r.byID[id] = k
		r.order = append(r.order, id)
	}
	if len(k.spans) >= maxSpansPerTrace {
		return
	}
	k.spans = append(k.spans, s)
	k.bytes += size
	r.bytes += size
	if start.Before(k.start) {
		k.start = start
	}
	if end.After(k.end) {
		k.end = end
	}
	if msg != "" {
		k.messages = appendNew(k.messages, msg)
		if agent != "" {
			k.agents = appendNew(k.agents, agent)
		}
		if session != "" {
			k.sessions = appendNew(k.sessions, session)
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
	tid, err := trace.TraceIDFromHex(id)
	if err != nil {
		return Trace{}, false
	}
	r.mu.Lock()
	k, ok := r.byID[tid]
	var spans []sdktrace.ReadOnlySpan
	if ok {
		spans = append(spans, k.spans...)
	}
	r.mu.Unlock()
	if !ok {
		return Trace{}, false
	}
	t := Trace{TraceID: id, Spans: make([]Span, 0, len(spans))}
	for _, s := range spans {
		t.Spans = append(t.Spans, convert(s))
	}
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
		out = append(out, Summary{TraceID: k.id, Start: k.start, End: k.end, Spans: len(k.spans),
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

// valueSize is about what an attribute value holds.
func valueSize(v attribute.Value) int {
	switch v.Type() {
	case attribute.STRING:
		return len(v.AsString())
	case attribute.STRINGSLICE:
		n := 0
		for _, s := range v.AsStringSlice() {
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
