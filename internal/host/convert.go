package host

import (
	"fmt"

	"github.com/toolhostd/toolhostd/internal/inbox"
	"github.com/toolhostd/toolhostd/internal/tooling"
	wt "github.com/toolhostd/toolhostd/internal/wasmtime"
)

// This file converts the domain types of packages tooling and inbox to the
// component values of the WIT contract (toolhost:agent/types and inbox).
// Record fields are listed in WIT declaration order.

func optString(s *string) wt.Val {
	if s == nil {
		return wt.None
	}
	return wt.Some(wt.String(*s))
}

func hostErrorVal(e *tooling.Error) wt.Val {
	return wt.Record{
		{Name: "code", Val: wt.Enum(e.Code.String())},
		{Name: "message", Val: wt.String(e.Message)},
	}
}

// errResult is the err case of result<_, host-error> for any error.
func errResult(err error) wt.Val { return wt.Err(hostErrorVal(tooling.AsError(err))) }

func toolVal(t tooling.Tool) wt.Val {
	return wt.Record{
		{Name: "name", Val: wt.String(t.Name)},
		{Name: "description", Val: optString(t.Description)},
		{Name: "input-schema", Val: wt.String(t.InputSchema)},
	}
}

func toolResultVal(r tooling.ToolResult) wt.Val {
	return wt.Record{
		{Name: "name", Val: wt.String(r.Name)},
		{Name: "arguments", Val: wt.String(r.Arguments)},
		{Name: "value", Val: wt.String(r.Value)},
	}
}

func resourceInfoVal(r tooling.ResourceInfo) wt.Val {
	return wt.Record{
		{Name: "uri", Val: wt.String(r.URI)},
		{Name: "name", Val: wt.String(r.Name)},
		{Name: "description", Val: optString(r.Description)},
		{Name: "mime-type", Val: optString(r.MIMEType)},
	}
}

func resourceInfoList(rs []tooling.ResourceInfo) wt.Val {
	l := make(wt.List, len(rs))
	for i, r := range rs {
		l[i] = resourceInfoVal(r)
	}
	return l
}

func resourceContentVal(c tooling.ResourceContent) wt.Val {
	return wt.Record{
		{Name: "uri", Val: wt.String(c.URI)},
		{Name: "mime-type", Val: optString(c.MIMEType)},
		{Name: "content", Val: wt.String(c.Content)},
	}
}

func toolList(ts []tooling.Tool) wt.Val {
	l := make(wt.List, len(ts))
	for i, t := range ts {
		l[i] = toolVal(t)
	}
	return l
}

// eventVal is the WIT inbox.event variant for ev.
func eventVal(ev inbox.Event) (wt.Val, error) {
	switch e := ev.(type) {
	case inbox.ToolResult:
		return wt.Variant{Case: "tool-result", Payload: toolResultVal(e.Result)}, nil
	case inbox.Error:
		return wt.Variant{Case: "error", Payload: hostErrorVal(&e.Err)}, nil
	case inbox.ResourceListUpdated:
		return wt.Variant{Case: "resource-list-updated", Payload: resourceInfoList(e.Resources)}, nil
	case inbox.ResourceUpdated:
		return wt.Variant{Case: "resource-updated", Payload: resourceContentVal(e.Content)}, nil
	case inbox.Shutdown:
		return wt.Variant{Case: "shutdown"}, nil
	case inbox.ChatDelta:
		return wt.Variant{Case: "chat-delta", Payload: wt.String(e.Text)}, nil
	case inbox.ChatDone:
		return wt.Variant{Case: "chat-done", Payload: chatResponseVal(e.Response)}, nil
	case inbox.Message:
		return wt.Variant{Case: "message", Payload: wt.Record{
			{Name: "sender", Val: wt.String(e.Sender)},
			{Name: "session", Val: optString(e.Session)},
			{Name: "content", Val: wt.String(e.Content)},
		}}, nil
	case inbox.ReplyDelta:
		return wt.Variant{Case: "reply-delta", Payload: wt.String(e.Text)}, nil
	case inbox.Reply:
		return wt.Variant{Case: "reply", Payload: wt.String(e.Text)}, nil
	}
	return nil, fmt.Errorf("inbox event %T has no WIT case", ev)
}

// receivedKind names what recv returned, for its span: the event's WIT
// case, or "none" (its timeout passed, or the agent is stopping).
func receivedKind(env inbox.Envelope, got bool) string {
	if !got {
		return "none"
	}
	switch env.Event.(type) {
	case inbox.ToolResult:
		return "tool-result"
	case inbox.Error:
		return "error"
	case inbox.ResourceListUpdated:
		return "resource-list-updated"
	case inbox.ResourceUpdated:
		return "resource-updated"
	case inbox.Shutdown:
		return "shutdown"
	case inbox.ChatDelta:
		return "chat-delta"
	case inbox.ChatDone:
		return "chat-done"
	case inbox.Message:
		return "message"
	case inbox.ReplyDelta:
		return "reply-delta"
	case inbox.Reply:
		return "reply"
	}
	return "other"
}

// envelopeOption is option<envelope>: none when ok is false.
func envelopeOption(env inbox.Envelope, ok bool) (wt.Val, error) {
	if !ok {
		return wt.None, nil
	}
	ev, err := eventVal(env.Event)
	if err != nil {
		return nil, err
	}
	return wt.Some(wt.Record{
		{Name: "id", Val: wt.String(env.ID)},
		{Name: "event", Val: ev},
	}), nil
}
