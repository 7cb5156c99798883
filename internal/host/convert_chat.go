package host

import (
	"fmt"

	"github.com/toolhostd/toolhostd/internal/provider"
	"github.com/toolhostd/toolhostd/internal/tooling"
	wt "github.com/toolhostd/toolhostd/internal/wasmtime"
)

// This file converts between the chat records of toolhost:agent@0.2.0
// (types.chat-request, chat-response and what they hold) and package
// provider's Request and Response. A value that does not have the WIT
// shape is a host defect or a guest of another world: errBadArgs, and the
// call traps.

var (
	roleCases   = []string{"system", "user", "assistant", "tool"}
	finishCases = []string{"stop", "length", "tool-calls", "content-filter", "other"}
	choiceCases = []string{"auto", "none", "required", "named"}
)

func caseIndex(cases []string, name string) (int, bool) {
	for i, c := range cases {
		if c == name {
			return i, true
		}
	}
	return 0, false
}

func badShape(what string, v wt.Val) error {
	return fmt.Errorf("%w: %s is a %T", errBadArgs, what, v)
}

// fields indexes a record's fields by name and checks it has exactly want.
func fields(what string, v wt.Val, want ...string) (map[string]wt.Val, error) {
	r, ok := v.(wt.Record)
	if !ok {
		return nil, badShape(what, v)
	}
	m := make(map[string]wt.Val, len(r))
	for _, f := range r {
		m[f.Name] = f.Val
	}
	if len(m) != len(want) || len(r) != len(want) {
		return nil, fmt.Errorf("%w: %s has %d fields, want %d", errBadArgs, what, len(r), len(want))
	}
	for _, w := range want {
		if _, ok := m[w]; !ok {
			return nil, fmt.Errorf("%w: %s lacks the field %s", errBadArgs, what, w)
		}
	}
	return m, nil
}

func str(what string, v wt.Val) (string, error) {
	s, ok := v.(wt.String)
	if !ok {
		return "", badShape(what, v)
	}
	return string(s), nil
}

func list(what string, v wt.Val) (wt.List, error) {
	l, ok := v.(wt.List)
	if !ok {
		return nil, badShape(what, v)
	}
	return l, nil
}

// option returns the payload of an option (nil for none).
func option(what string, v wt.Val) (wt.Val, error) {
	o, ok := v.(wt.Option)
	if !ok {
		return nil, badShape(what, v)
	}
	return o.Some, nil
}

func optStr(what string, v wt.Val) (*string, error) {
	p, err := option(what, v)
	if err != nil || p == nil {
		return nil, err
	}
	s, err := str(what, p)
	return &s, err
}

func toolFrom(v wt.Val) (tooling.Tool, error) {
	f, err := fields("tool", v, "name", "description", "input-schema")
	if err != nil {
		return tooling.Tool{}, err
	}
	var t tooling.Tool
	if t.Name, err = str("tool.name", f["name"]); err != nil {
		return t, err
	}
	if t.Description, err = optStr("tool.description", f["description"]); err != nil {
		return t, err
	}
	t.InputSchema, err = str("tool.input-schema", f["input-schema"])
	return t, err
}

func toolCallFrom(v wt.Val) (provider.ToolCall, error) {
	f, err := fields("tool-call", v, "id", "name", "arguments")
	if err != nil {
		return provider.ToolCall{}, err
	}
	var tc provider.ToolCall
	if tc.ID, err = str("tool-call.id", f["id"]); err != nil {
		return tc, err
	}
	if tc.Name, err = str("tool-call.name", f["name"]); err != nil {
		return tc, err
	}
	tc.Arguments, err = str("tool-call.arguments", f["arguments"])
	return tc, err
}

func messageFrom(v wt.Val) (provider.Message, error) {
	f, err := fields("message", v, "role", "content", "tool-calls", "tool-call-id")
	if err != nil {
		return provider.Message{}, err
	}
	var m provider.Message
	e, ok := f["role"].(wt.Enum)
	i, known := caseIndex(roleCases, string(e))
	if !ok || !known {
		return m, badShape("message.role", f["role"])
	}
	m.Role = provider.Role(i)
	if m.Content, err = str("message.content", f["content"]); err != nil {
		return m, err
	}
	calls, err := list("message.tool-calls", f["tool-calls"])
	if err != nil {
		return m, err
	}
	for _, c := range calls {
		tc, err := toolCallFrom(c)
		if err != nil {
			return m, err
		}
		m.ToolCalls = append(m.ToolCalls, tc)
	}
	id, err := optStr("message.tool-call-id", f["tool-call-id"])
	if id != nil {
		m.ToolCallID = *id
	}
	return m, err
}

func toolChoiceFrom(v wt.Val) (*provider.ToolChoice, error) {
	p, err := option("chat-request.tool-choice", v)
	if err != nil || p == nil {
		return nil, err
	}
	vr, ok := p.(wt.Variant)
	i, known := caseIndex(choiceCases, vr.Case)
	if !ok || !known {
		return nil, badShape("tool-choice", p)
	}
	tc := &provider.ToolChoice{Mode: provider.ToolChoiceMode(i)}
	if tc.Mode == provider.ToolChoiceNamed {
		if tc.Name, err = str("tool-choice.named", vr.Payload); err != nil {
			return nil, err
		}
	} else if vr.Payload != nil {
		return nil, badShape("tool-choice."+vr.Case, vr.Payload)
	}
	return tc, nil
}

// chatRequestFrom lifts a WIT chat-request.
func chatRequestFrom(v wt.Val) (provider.Request, error) {
	f, err := fields("chat-request", v, "model", "messages", "tools", "tool-choice", "max-tokens", "temperature", "stop")
	if err != nil {
		return provider.Request{}, err
	}
	var req provider.Request
	model, err := optStr("chat-request.model", f["model"])
	if err != nil {
		return req, err
	}
	if model != nil {
		req.Model = *model
	}
	msgs, err := list("chat-request.messages", f["messages"])
	if err != nil {
		return req, err
	}
	for _, mv := range msgs {
		m, err := messageFrom(mv)
		if err != nil {
			return req, err
		}
		req.Messages = append(req.Messages, m)
	}
	tools, err := list("chat-request.tools", f["tools"])
	if err != nil {
		return req, err
	}
	for _, tv := range tools {
		t, err := toolFrom(tv)
		if err != nil {
			return req, err
		}
		req.Tools = append(req.Tools, t)
	}
	if req.ToolChoice, err = toolChoiceFrom(f["tool-choice"]); err != nil {
		return req, err
	}
	if p, err := option("chat-request.max-tokens", f["max-tokens"]); err != nil {
		return req, err
	} else if p != nil {
		n, ok := p.(wt.U32)
		if !ok {
			return req, badShape("chat-request.max-tokens", p)
		}
		u := uint32(n)
		req.MaxTokens = &u
	}
	if p, err := option("chat-request.temperature", f["temperature"]); err != nil {
		return req, err
	} else if p != nil {
		x, ok := p.(wt.F32)
		if !ok {
			return req, badShape("chat-request.temperature", p)
		}
		t := float32(x)
		req.Temperature = &t
	}
	stop, err := list("chat-request.stop", f["stop"])
	if err != nil {
		return req, err
	}
	for _, sv := range stop {
		s, err := str("chat-request.stop", sv)
		if err != nil {
			return req, err
		}
		req.Stop = append(req.Stop, s)
	}
	return req, nil
}

func toolCallVal(tc provider.ToolCall) wt.Val {
	return wt.Record{
		{Name: "id", Val: wt.String(tc.ID)},
		{Name: "name", Val: wt.String(tc.Name)},
		{Name: "arguments", Val: wt.String(tc.Arguments)},
	}
}

func messageVal(m provider.Message) wt.Val {
	calls := make(wt.List, len(m.ToolCalls))
	for i, tc := range m.ToolCalls {
		calls[i] = toolCallVal(tc)
	}
	role := "assistant"
	if int(m.Role) < len(roleCases) {
		role = roleCases[m.Role]
	}
	var id wt.Val = wt.None
	if m.ToolCallID != "" {
		id = wt.Some(wt.String(m.ToolCallID))
	}
	return wt.Record{
		{Name: "role", Val: wt.Enum(role)},
		{Name: "content", Val: wt.String(m.Content)},
		{Name: "tool-calls", Val: calls},
		{Name: "tool-call-id", Val: id},
	}
}

// chatResponseVal is the WIT chat-response for r.
func chatResponseVal(r provider.Response) wt.Val {
	finish := "other"
	if int(r.FinishReason) < len(finishCases) {
		finish = finishCases[r.FinishReason]
	}
	return wt.Record{
		{Name: "message", Val: messageVal(r.Message)},
		{Name: "finish-reason", Val: wt.Enum(finish)},
		{Name: "usage", Val: wt.Record{
			{Name: "input-tokens", Val: wt.U32(r.Usage.InputTokens)},
			{Name: "output-tokens", Val: wt.U32(r.Usage.OutputTokens)},
		}},
		{Name: "model", Val: wt.String(r.Model)},
	}
}
