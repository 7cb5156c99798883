// probe: the Go port of testdata/agents/probe.js, the interpreter of steps
// that lets the host's contract tests drive every function of
// toolhost:agent@0.3.0 from the guest side. Same input, same output (see
// probe.js for the ops, the provider ones included: get-provider, chat,
// chat-stream, recv-stream; kind, name, is-open, cancel and drop take a
// tooling or a provider handle; the messages ones are in messages.go);
// where Go differs from JS:
//   - an option that is none is reported as null (JS omits the key);
//   - "throw" panics (an uncaught exception is a Go panic here), and what
//     "nil" dereferences a nil pointer; so does serve's mode "die" after
//     its reply-delta;
//   - "alloc" keeps mb MB of byte slices reachable until run returns;
//   - "sdk-edges" {name} is Go's own: the SDK's answers where the host
//     would trap (invalid UTF-8, results too large for the reserved
//     region), its timeouts and its closed handles (see edges.go);
//   - the key-value ops are in keyvalue.go;
//   - "gc-stress" {n, mb, h} is Go's own: n rounds of every import of the
//     world, with runtime.GC() between calls and mb MB allocated and
//     dropped per round, checking every result (see gcstress.go).
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/toolhostd/toolhostd/sdk/go/toolhost"
)

type step struct {
	Op      string          `json:"op"`
	Request json.RawMessage `json:"request"`
	ToolsOf *string         `json:"tools-of"`
	Name    string          `json:"name"`
	As      string          `json:"as"`
	H       string          `json:"h"`
	ID      string          `json:"id"`
	Tool    string          `json:"tool"`
	Args    json.RawMessage `json:"args"`
	Raw     *string         `json:"raw"`
	URI     string          `json:"uri"`
	Timeout *float64        `json:"timeout"`
	Level   *string         `json:"level"`
	Message *string         `json:"message"`
	MS      *float64        `json:"ms"`
	MB      int             `json:"mb"`
	N       int             `json:"n"`
	What    string          `json:"what"`
	To      string          `json:"to"`
	Content *string         `json:"content"`
	Text    *string         `json:"text"`
	Session *string         `json:"session"`
	Mode    string          `json:"mode"`
	Count   *int            `json:"count"`
	// The key-value ops (keyvalue.go).
	Key    string      `json:"key"`
	Value  *string     `json:"value"`
	Size   *int        `json:"size"`
	Cursor *string     `json:"cursor"`
	Delta  *int64      `json:"delta"`
	Keys   []string    `json:"keys"`
	KVs    [][2]string `json:"kvs"`
}

// failure makes run return err (the "fail" op).
type failure struct{ msg string }

func (f failure) Error() string { return f.msg }

// handle is a *toolhost.Tooling or a *toolhost.Provider.
type handle interface {
	Kind() string
	Name() string
	IsOpen(id string) bool
	Cancel(id string) bool
	Close() error
}

type probe struct {
	buckets map[string]*toolhost.Bucket
	cases   map[string]*toolhost.CAS
	handles map[string]handle
	ids     map[string]string // variable -> id
	names   map[string]string // id -> variable
	kept    [][]byte
}

func (p *probe) handle(s *step) (handle, error) {
	h, ok := p.handles[s.H]
	if !ok {
		return nil, fmt.Errorf("Error: no handle %s", s.H)
	}
	return h, nil
}

// request is the step's chat request, absent fields defaulted, with the
// tools of the tooling handle named by tools-of.
func (p *probe) request(s *step) (*toolhost.ChatRequest, error) {
	var r toolhost.ChatRequest
	if len(s.Request) > 0 && string(s.Request) != "null" {
		if err := json.Unmarshal(s.Request, &r); err != nil {
			return nil, fmt.Errorf("TypeError: %v", err)
		}
	}
	if s.ToolsOf != nil {
		t, ok := p.handles[*s.ToolsOf].(*toolhost.Tooling)
		if !ok {
			return nil, fmt.Errorf("Error: no tooling %s", *s.ToolsOf)
		}
		tools, err := t.ListTools()
		if err != nil {
			return nil, err
		}
		r.Tools = tools
	}
	return &r, nil
}

func (p *probe) id(s *step) string {
	if v, ok := p.ids[s.ID]; ok {
		return v
	}
	return s.ID
}

// bindHandle stores h under s.As and reports the name ({} without one).
func (p *probe) bindHandle(s *step, h handle) any {
	if s.As == "" {
		return struct{}{}
	}
	p.handles[s.As] = h
	return s.As
}

// bindID stores an id under s.As and reports the name (or the id).
func (p *probe) bindID(s *step, id string) any {
	if s.As == "" {
		return id
	}
	p.ids[s.As] = id
	p.names[id] = s.As
	return s.As
}

func (p *probe) args(s *step) string {
	if s.Raw != nil {
		return *s.Raw
	}
	if len(s.Args) == 0 || string(s.Args) == "null" {
		return "{}"
	}
	return string(s.Args)
}

type envelopeOut struct {
	ID  string `json:"id"`
	Tag string `json:"tag"`
	Val any    `json:"val"`
}

type hostErrOut struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func errOut(e *toolhost.HostError) hostErrOut {
	return hostErrOut{Code: e.Code.String(), Message: e.Message}
}

// name is the variable an id is bound to, or the id.
func (p *probe) name(id string) string {
	if n, ok := p.names[id]; ok {
		return n
	}
	return id
}

func (p *probe) envelope(e toolhost.Envelope, ok bool) any {
	if !ok {
		return nil
	}
	out := envelopeOut{ID: p.name(e.ID), Tag: e.Event.Tag()}
	switch ev := e.Event.(type) {
	case toolhost.ToolResultEvent:
		out.Val = ev.Result
	case toolhost.ErrorEvent:
		out.Val = errOut(ev.Err)
	case toolhost.ResourceListUpdatedEvent:
		out.Val = ev.Resources
	case toolhost.ResourceUpdatedEvent:
		out.Val = ev.Content
	case toolhost.ChatDeltaEvent:
		out.Val = ev.Text
	case toolhost.ChatDoneEvent:
		out.Val = ev.Response
	case toolhost.MessageEvent:
		out.Val = ev.Message // {sender, session (null: none), content}
	case toolhost.ReplyDeltaEvent:
		out.Val = ev.Text
	case toolhost.ReplyEvent:
		out.Val = ev.Content
	}
	return out
}

// follow receives the envelopes of s.ID up to its terminal one: those
// delta accepts counted and their text joined, others kept in skipped
// ({deltas, text, end, skipped}).
func (p *probe) follow(s *step, delta func(toolhost.Event) (string, bool)) any {
	want := p.id(s)
	skipped := []any{}
	deltas, text := 0, ""
	for {
		e, ok := toolhost.Recv(recvTimeout(s))
		if !ok {
			return map[string]any{"deltas": deltas, "text": text, "end": nil, "skipped": skipped}
		}
		if e.ID != want {
			skipped = append(skipped, p.envelope(e, true))
			if _, shut := e.Event.(toolhost.ShutdownEvent); shut {
				return map[string]any{"deltas": deltas, "text": text, "end": nil, "skipped": skipped}
			}
			continue
		}
		if d, ok := delta(e.Event); ok {
			deltas++
			text += d
			continue
		}
		return map[string]any{"deltas": deltas, "text": text, "end": p.envelope(e, true), "skipped": skipped}
	}
}

func recvTimeout(s *step) time.Duration {
	if s.Timeout == nil {
		return toolhost.Forever
	}
	return time.Duration(*s.Timeout * float64(time.Millisecond))
}

func (p *probe) do(s *step) (any, error) {
	switch s.Op {
	case "get":
		t, err := toolhost.Get(s.Name)
		if err != nil {
			return nil, err
		}
		return p.bindHandle(s, t), nil
	case "get-provider":
		pr, err := toolhost.GetProvider(s.Name)
		if err != nil {
			return nil, err
		}
		return p.bindHandle(s, pr), nil
	case "recv-stream":
		return p.follow(s, func(ev toolhost.Event) (string, bool) {
			d, ok := ev.(toolhost.ChatDeltaEvent)
			return d.Text, ok
		}), nil
	case "recv":
		e, ok := toolhost.Recv(recvTimeout(s))
		if ok {
			p.bindID(s, e.ID)
		}
		return p.envelope(e, ok), nil
	case "recv-until":
		want := p.id(s)
		skipped := []any{}
		for {
			e, ok := toolhost.Recv(recvTimeout(s))
			if !ok {
				return map[string]any{"got": nil, "skipped": skipped}, nil
			}
			if e.ID == want {
				return map[string]any{"got": p.envelope(e, true), "skipped": skipped}, nil
			}
			skipped = append(skipped, p.envelope(e, true))
			if _, shut := e.Event.(toolhost.ShutdownEvent); shut {
				return map[string]any{"got": nil, "skipped": skipped}, nil
			}
		}
	case "try-recv":
		return p.envelope(toolhost.TryRecv()), nil
	case "pending":
		return toolhost.Pending(), nil
	case "log":
		level, msg := "info", ""
		if s.Level != nil {
			level = *s.Level
		}
		if s.Message != nil {
			msg = *s.Message
		}
		l, ok := map[string]toolhost.Level{"debug": toolhost.LevelDebug, "info": toolhost.LevelInfo, "warn": toolhost.LevelWarn, "error": toolhost.LevelError}[level]
		if !ok {
			return nil, fmt.Errorf("TypeError: bad level %s", level)
		}
		toolhost.Log(l, msg)
		return true, nil
	case "spin":
		var end time.Time
		if s.MS != nil {
			end = time.Now().Add(time.Duration(*s.MS * float64(time.Millisecond)))
		}
		n := 0
		for s.MS == nil || time.Now().Before(end) {
			n++
		}
		return n > 0, nil
	case "alloc":
		for i := range s.MB {
			b := make([]byte, 1<<20)
			for j := range b {
				b[j] = byte(i)
			}
			p.kept = append(p.kept, b)
		}
		return len(p.kept), nil
	case "fail":
		msg := "failed"
		if s.Message != nil {
			msg = *s.Message
		}
		return nil, failure{msg}
	case "throw":
		switch s.What {
		case "host-error":
			_, err := toolhost.Get("no-such-tooling")
			panic(err)
		case "nil":
			var p *probe
			return len(p.kept), nil // a nil dereference
		}
		msg := "thrown"
		if s.Message != nil {
			msg = *s.Message
		}
		panic(msg)
	case "gc-stress":
		return gcStress(s)
	case "sdk-edges":
		return sdkEdges(s)
	}
	if f, ok := messageOps[s.Op]; ok {
		return f(p, s)
	}
	if f, ok := kvOps[s.Op]; ok {
		return f(p, s)
	}
	if s.Op == "drop" {
		if done, err := p.dropKV(s); done {
			return true, err
		}
	}
	h, err := p.handle(s)
	if err != nil {
		return nil, err
	}
	switch s.Op {
	case "drop":
		if err := h.Close(); err != nil {
			return nil, err
		}
		delete(p.handles, s.H)
		return true, nil
	case "kind":
		return h.Kind(), nil
	case "name":
		return h.Name(), nil
	case "is-open":
		return h.IsOpen(p.id(s)), nil
	case "cancel":
		return h.Cancel(p.id(s)), nil
	}
	if pr, ok := h.(*toolhost.Provider); ok {
		return p.providerOp(s, pr)
	}
	t := h.(*toolhost.Tooling)
	switch s.Op {
	case "list-tools":
		return t.ListTools()
	case "call-tool":
		id, err := t.CallTool(s.Tool, p.args(s))
		if err != nil {
			return nil, err
		}
		return p.bindID(s, id), nil
	case "call-tool-blocking":
		return t.CallToolBlocking(s.Tool, p.args(s))
	case "list-resources":
		return t.ListResources()
	case "read-resource":
		return t.ReadResource(s.URI)
	case "subscribe-list":
		id, err := t.SubscribeResourceList()
		if err != nil {
			return nil, err
		}
		return p.bindID(s, id), nil
	case "unsubscribe-list":
		return t.UnsubscribeResourceList(p.id(s)), nil
	case "subscribe":
		id, err := t.SubscribeResource(s.URI)
		if err != nil {
			return nil, err
		}
		return p.bindID(s, id), nil
	case "unsubscribe":
		return t.UnsubscribeResource(p.id(s)), nil
	case "chat", "chat-stream":
		return nil, fmt.Errorf("TypeError: %s is not a method of a tooling", s.Op)
	}
	return nil, failure{"unknown op " + s.Op}
}

func (p *probe) providerOp(s *step, pr *toolhost.Provider) (any, error) {
	switch s.Op {
	case "chat", "chat-stream":
		r, err := p.request(s)
		if err != nil {
			return nil, err
		}
		if s.Op == "chat" {
			return pr.Chat(r)
		}
		id, err := pr.ChatStream(r)
		if err != nil {
			return nil, err
		}
		return p.bindID(s, id), nil
	}
	return nil, fmt.Errorf("TypeError: %s is not a method of a provider", s.Op)
}

type result struct {
	Op      string      `json:"op"`
	OK      any         `json:"ok,omitempty"`
	Err     *hostErrOut `json:"err,omitempty"`
	Thrown  string      `json:"thrown,omitempty"`
	Skipped bool        `json:"skipped,omitempty"`
}

// okResult marshals ok even when it is false, 0 or null.
func (r result) MarshalJSON() ([]byte, error) {
	switch {
	case r.Skipped:
		return json.Marshal(map[string]any{"op": r.Op, "skipped": true})
	case r.Err != nil:
		return json.Marshal(map[string]any{"op": r.Op, "err": r.Err})
	case r.Thrown != "":
		return json.Marshal(map[string]any{"op": r.Op, "thrown": r.Thrown})
	}
	return json.Marshal(map[string]any{"op": r.Op, "ok": r.OK})
}

func run(input string) (string, error) {
	var in struct {
		Steps []step `json:"steps"`
	}
	if strings.TrimSpace(input) == "" {
		input = "{}"
	}
	if err := json.Unmarshal([]byte(input), &in); err != nil {
		return "", err
	}
	p := &probe{handles: map[string]handle{}, ids: map[string]string{}, names: map[string]string{},
		buckets: map[string]*toolhost.Bucket{}, cases: map[string]*toolhost.CAS{}}
	out := []result{}
	stopOnError, failed := false, false
	for i := range in.Steps {
		s := &in.Steps[i]
		if s.Op == "stop-on-error" {
			stopOnError = true
			continue
		}
		if failed && stopOnError {
			out = append(out, result{Op: s.Op, Skipped: true})
			continue
		}
		v, err := p.do(s)
		var he *toolhost.HostError
		var f failure
		switch {
		case err == nil:
			out = append(out, result{Op: s.Op, OK: v})
		case errors.As(err, &f):
			return "", f
		case errors.As(err, &he):
			failed = true
			e := errOut(he)
			out = append(out, result{Op: s.Op, Err: &e})
		case storeErrOut(err) != nil:
			failed = true
			out = append(out, result{Op: s.Op, Err: storeErrOut(err)})
		default:
			failed = true
			out = append(out, result{Op: s.Op, Thrown: err.Error()})
		}
	}
	b, err := json.Marshal(out)
	return string(b), err
}

func init() { toolhost.Run(run) }

func main() {}
