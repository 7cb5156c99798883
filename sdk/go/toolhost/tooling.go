package toolhost

import (
	"encoding/json"
	"fmt"
	"runtime"
)

// Tooling is a handle on one configured tooling (the WIT resource
// tooling). Close drops it, which cancels the calls and ends the
// subscriptions made through it. After Close, the methods that return an
// error return ErrClosed, the others their zero value ("" for Kind and
// Name, false for IsOpen, Cancel and the unsubscribes), and Close itself
// returns nil again.
type Tooling struct{ x handle }

// Get returns a new handle on the named tooling: a *HostError with code
// NotFound if it is not configured, Denied if this agent was not granted
// it, InvalidArgument if name is not valid UTF-8.
func Get(name string) (*Tooling, error) {
	h, err := getHandle("the tooling name", name, rawGet)
	if err != nil {
		return nil, err
	}
	return &Tooling{x: handle{h: h}}, nil
}

// Close drops the handle. It returns nil, also when called again.
func (t *Tooling) Close() error {
	t.x.close(rawDrop)
	return nil
}

// Kind is the tooling's implementation, e.g. "mcp".
func (t *Tooling) Kind() string { return t.x.stringOf(rawKind) }

// Name is the tooling's configured name.
func (t *Tooling) Name() string { return t.x.stringOf(rawName) }

// ListTools returns every tool, following pagination to the end.
func (t *Tooling) ListTools() ([]Tool, error) {
	return resultOf(&t.x, rawListTools, func(m memory, a uint32) []Tool { return liftList(m, a, sizeTool, liftTool) })
}

// CallTool validates that args is a JSON object, queues the call and
// returns its id at once; exactly one envelope with that id follows (a
// ToolResultEvent or an ErrorEvent) unless the call is cancelled first.
//
// args is passed as JSON text as it is when it is a string, a []byte or a
// json.RawMessage — so CallTool(tool, "hello") sends the text hello, which
// the host refuses (InvalidArgument: not a JSON object); pass
// map[string]any{"message": "hello"} for an argument — and is marshalled
// with encoding/json otherwise (nil: {}). JSON text that is not valid
// UTF-8 is InvalidArgument, as is a tool name that is not.
func (t *Tooling) CallTool(tool string, args any) (id string, err error) {
	a, err := argumentsJSON(tool, args)
	if err != nil {
		return "", err
	}
	return twoStringCall(t, tool, a, rawCallTool, liftString)
}

// IsOpen is true from CallTool until the call's envelope is enqueued or
// the call is cancelled; false for unknown ids.
func (t *Tooling) IsOpen(id string) bool { return t.x.boolOf(id, rawIsOpen) }

// Cancel is true if the call was open or its envelope undelivered; no
// envelope with that id is received after it returns true.
func (t *Tooling) Cancel(id string) bool { return t.x.boolOf(id, rawCancel) }

// CallToolBlocking runs the same path as CallTool (args as there) and
// waits for the result. A tool that reports isError is a success: see
// ToolResult.Result.
func (t *Tooling) CallToolBlocking(tool string, args any) (*ToolResult, error) {
	a, err := argumentsJSON(tool, args)
	if err != nil {
		return nil, err
	}
	r, err := twoStringCall(t, tool, a, rawCallToolBlocking, liftToolResult)
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// ListResources returns every resource, following pagination to the end.
func (t *Tooling) ListResources() ([]ResourceInfo, error) {
	return resultOf(&t.x, rawListResources, func(m memory, a uint32) []ResourceInfo {
		return liftList(m, a, sizeResInfo, liftResourceInfo)
	})
}

// ReadResource reads one resource now (InvalidArgument for a uri that is
// not valid UTF-8).
func (t *Tooling) ReadResource(uri string) (*ResourceContent, error) {
	c, err := resultOfString(&t.x, "the URI", uri, rawReadResource, liftResourceContent)
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// SubscribeResourceList returns a subscription id; each later change of the
// resource list yields one ResourceListUpdatedEvent envelope with that id.
func (t *Tooling) SubscribeResourceList() (id string, err error) {
	return resultOf(&t.x, rawSubscribeResourceList, liftString)
}

// UnsubscribeResourceList is true if it ended a live subscription.
func (t *Tooling) UnsubscribeResourceList(id string) bool {
	return t.x.boolOf(id, rawUnsubscribeResourceList)
}

// SubscribeResource returns a subscription id; each later update of uri
// yields one ResourceUpdatedEvent envelope with that id (Unsupported when
// the server cannot subscribe; InvalidArgument for a uri that is not valid
// UTF-8).
func (t *Tooling) SubscribeResource(uri string) (id string, err error) {
	return resultOfString(&t.x, "the URI", uri, rawSubscribeResource, liftString)
}

// UnsubscribeResource is true if it ended a live subscription.
func (t *Tooling) UnsubscribeResource(id string) bool {
	return t.x.boolOf(id, rawUnsubscribeResource)
}

func twoStringCall[T any](t *Tooling, tool, args string, raw func(self, ap, an, bp, bn, ret uint32), ok func(memory, uint32) T) (T, error) {
	var v T
	if err := checkUTF8("the tool name", tool); err != nil {
		return v, err
	}
	if err := checkUTF8("the arguments of "+sanitize(tool), args); err != nil {
		return v, err
	}
	return resultOf(&t.x, func(self, ret uint32) {
		ap, an := stringArg(tool)
		bp, bn := stringArg(args)
		raw(self, ap, an, bp, bn, ret)
		runtime.KeepAlive(tool)
		runtime.KeepAlive(args)
	}, ok)
}

// argumentsJSON is CallTool's args as JSON text.
func argumentsJSON(tool string, args any) (string, error) {
	switch a := args.(type) {
	case nil:
		return "{}", nil
	case string:
		return a, nil
	case []byte:
		return string(a), nil
	case json.RawMessage:
		return string(a), nil
	}
	b, err := json.Marshal(args)
	if err != nil {
		return "", fmt.Errorf("toolhost: arguments of %s: %w", sanitize(tool), err)
	}
	return string(b), nil
}
