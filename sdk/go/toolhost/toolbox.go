package toolhost

import (
	"encoding/json"
	"strings"
	"time"
)

// A Toolbox is the tools of some toolings, for a model's tool calls: Tools
// goes into a ChatRequest, Call answers the ChatResponse's tool calls with
// tool messages for the next request. A tool name two toolings offer is
// the first one's (the later ones are logged as warnings, and listed by
// Shadowed). Close drops the handles.
type Toolbox struct {
	tools    []Tool
	owner    map[string]*Tooling
	handles  []*Tooling
	shadowed []string // "tool of tooling", hidden by an earlier tooling's
}

// OpenToolbox gets a handle on each named tooling and lists its tools; on
// an error the handles it got are dropped and the error names the tooling.
func OpenToolbox(names ...string) (*Toolbox, error) {
	b := &Toolbox{owner: map[string]*Tooling{}}
	for _, name := range names {
		t, err := Get(name)
		if err != nil {
			b.Close()
			return nil, &toolingError{name, err}
		}
		b.handles = append(b.handles, t)
		list, err := t.ListTools()
		if err != nil {
			b.Close()
			return nil, &toolingError{name, err}
		}
		for _, tl := range list {
			if _, dup := b.owner[tl.Name]; dup {
				b.shadowed = append(b.shadowed, tl.Name+" of "+name)
				Logf(LevelWarn, "toolbox: tool %s of %s hidden by another tooling's", tl.Name, name)
				continue
			}
			b.owner[tl.Name] = t
			b.tools = append(b.tools, tl)
		}
	}
	return b, nil
}

// toolingError is an error of one tooling of a Toolbox.
type toolingError struct {
	name string
	err  error
}

func (e *toolingError) Error() string { return "tooling " + e.name + ": " + e.err.Error() }
func (e *toolingError) Unwrap() error { return e.err }

// Tools are the tools, as ListTools returned them, for ChatRequest.Tools.
func (b *Toolbox) Tools() []Tool { return b.tools }

// Shadowed names the tools ("tool of tooling") hidden by an earlier
// tooling's tool of the same name.
func (b *Toolbox) Shadowed() []string { return b.shadowed }

// Close drops every handle.
func (b *Toolbox) Close() error {
	for _, t := range b.handles {
		t.Close()
	}
	return nil
}

// Call makes every call with CallTool and answers each, in the model's
// order, with a tool message: the tool's text ("error: " and it for a
// result with isError), or "error: " and what failed. Results are waited
// for in in (other envelopes are held there), up to timeout in all; a call
// without a result by then is cancelled.
func (b *Toolbox) Call(in *Inbox, calls []ToolCall, timeout time.Duration) []Message {
	answers := make([]string, len(calls))
	ids := make([]string, len(calls))
	for i, c := range calls {
		t, ok := b.owner[c.Name]
		if !ok {
			answers[i] = "error: there is no tool named " + c.Name
			continue
		}
		args := c.Arguments
		if strings.TrimSpace(args) == "" {
			args = "{}"
		}
		id, err := t.CallTool(c.Name, json.RawMessage(args))
		if err != nil {
			answers[i] = "error: " + err.Error()
			continue
		}
		ids[i] = id
	}
	left := budget(timeout)
	for i, id := range ids {
		if id == "" {
			continue
		}
		env, ok := in.WaitFor(id, left())
		switch ev := env.Event.(type) {
		case ToolResultEvent:
			answers[i] = resultText(&ev.Result)
			continue
		case ErrorEvent:
			answers[i] = "error: " + ev.Err.Error()
			continue
		}
		b.owner[calls[i].Name].Cancel(id)
		answers[i] = "error: no result in time"
		if ok { // the shutdown envelope
			answers[i] = "error: the agent is stopping"
		}
	}
	msgs := make([]Message, len(calls))
	for i, c := range calls {
		msgs[i] = ToolMessage(c.ID, answers[i])
	}
	return msgs
}

// resultText is a tool result's text for a tool message.
func resultText(r *ToolResult) string {
	v, err := r.Result()
	switch {
	case err != nil:
		return r.Value
	case v.IsError:
		return "error: " + v.Text()
	}
	return v.Text()
}
