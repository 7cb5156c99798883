package toolhost

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
)

// ErrClosed is returned by a method of a Tooling after Close.
var ErrClosed = errors.New("toolhost: tooling handle is closed")

// Tooling is a handle on one configured tooling (the WIT resource
// tooling). Close drops it, which cancels the calls and ends the
// subscriptions made through it. A Tooling is not safe for use after
// Close; methods returning an error return ErrClosed then, the others
// panic.
type Tooling struct {
	h      uint32
	closed bool
}

// Get returns a new handle on the named tooling: a *HostError with code
// NotFound if it is not configured, Denied if this agent was not granted
// it.
func Get(name string) (*Tooling, error) {
	var t *Tooling
	var err error
	hostCall(func(ret uint32) {
		p, n := stringArg(name)
		rawGet(p, n, ret)
		runtime.KeepAlive(name)
	}, func(m memory, ret uint32) {
		var h uint32
		h, err = liftResult(m, ret, u32)
		if err == nil {
			t = &Tooling{h: h}
		}
	})
	return t, err
}

// Close drops the handle; a second Close returns ErrClosed.
func (t *Tooling) Close() error {
	if t.closed {
		return ErrClosed
	}
	t.closed = true
	lock()
	defer unlock()
	rawDrop(t.h)
	return nil
}

func (t *Tooling) self() uint32 {
	if t.closed {
		panic(ErrClosed)
	}
	return t.h
}

// stringCall calls an import (self, s, ret) and lifts a result<T, host-error>.
func stringCall[T any](t *Tooling, s string, raw func(self, p, n, ret uint32), ok func(memory, uint32) T) (T, error) {
	var v T
	var err error
	if t.closed {
		return v, ErrClosed
	}
	hostCall(func(ret uint32) {
		p, n := stringArg(s)
		raw(t.h, p, n, ret)
		runtime.KeepAlive(s)
	}, func(m memory, ret uint32) { v, err = liftResult(m, ret, ok) })
	return v, err
}

// selfCall calls an import (self, ret) and lifts a result<T, host-error>.
func selfCall[T any](t *Tooling, raw func(self, ret uint32), ok func(memory, uint32) T) (T, error) {
	var v T
	var err error
	if t.closed {
		return v, ErrClosed
	}
	hostCall(func(ret uint32) { raw(t.h, ret) }, func(m memory, ret uint32) { v, err = liftResult(m, ret, ok) })
	return v, err
}

// boolCall calls an import (self, s) -> bool.
func boolCall(t *Tooling, s string, raw func(self, p, n uint32) uint32) bool {
	self := t.self()
	lock()
	defer unlock()
	p, n := stringArg(s)
	b := raw(self, p, n)
	runtime.KeepAlive(s)
	return liftBool(b)
}

// stringOf calls an import (self, ret) that returns a string.
func stringOf(t *Tooling, raw func(self, ret uint32)) string {
	self := t.self()
	var s string
	hostCall(func(ret uint32) { raw(self, ret) }, func(m memory, ret uint32) { s = liftString(m, ret) })
	return s
}

// Kind is the tooling's implementation, e.g. "mcp".
func (t *Tooling) Kind() string { return stringOf(t, rawKind) }

// Name is the tooling's configured name.
func (t *Tooling) Name() string { return stringOf(t, rawName) }

// ListTools returns every tool, following pagination to the end.
func (t *Tooling) ListTools() ([]Tool, error) {
	return selfCall(t, rawListTools, func(m memory, a uint32) []Tool { return liftList(m, a, sizeTool, liftTool) })
}

// CallTool validates that args is a JSON object, queues the call and
// returns its id at once; exactly one envelope with that id follows (a
// ToolResultEvent or an ErrorEvent) unless the call is cancelled first.
// args is JSON text when it is a string, []byte or json.RawMessage, and
// is marshalled with encoding/json otherwise (nil: {}).
func (t *Tooling) CallTool(tool string, args any) (id string, err error) {
	a, err := argumentsJSON(tool, args)
	if err != nil {
		return "", err
	}
	return twoStringCall(t, tool, a, rawCallTool, liftString)
}

// IsOpen is true from CallTool until the call's envelope is enqueued or
// the call is cancelled; false for unknown ids.
func (t *Tooling) IsOpen(id string) bool { return boolCall(t, id, rawIsOpen) }

// Cancel is true if the call was open or its envelope undelivered; no
// envelope with that id is received after it returns true.
func (t *Tooling) Cancel(id string) bool { return boolCall(t, id, rawCancel) }

// CallToolBlocking runs the same path as CallTool and waits for the result.
// A tool that reports isError is a success: see ToolResult.Result.
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
	return selfCall(t, rawListResources, func(m memory, a uint32) []ResourceInfo {
		return liftList(m, a, sizeResInfo, liftResourceInfo)
	})
}

// ReadResource reads one resource now.
func (t *Tooling) ReadResource(uri string) (*ResourceContent, error) {
	c, err := stringCall(t, uri, rawReadResource, liftResourceContent)
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// SubscribeResourceList returns a subscription id; each later change of the
// resource list yields one ResourceListUpdatedEvent envelope with that id.
func (t *Tooling) SubscribeResourceList() (id string, err error) {
	return selfCall(t, rawSubscribeResourceList, liftString)
}

// UnsubscribeResourceList is true if it ended a live subscription.
func (t *Tooling) UnsubscribeResourceList(id string) bool {
	return boolCall(t, id, rawUnsubscribeResourceList)
}

// SubscribeResource returns a subscription id; each later update of uri
// yields one ResourceUpdatedEvent envelope with that id (Unsupported when
// the server cannot subscribe).
func (t *Tooling) SubscribeResource(uri string) (id string, err error) {
	return stringCall(t, uri, rawSubscribeResource, liftString)
}

// UnsubscribeResource is true if it ended a live subscription.
func (t *Tooling) UnsubscribeResource(id string) bool {
	return boolCall(t, id, rawUnsubscribeResource)
}

func twoStringCall[T any](t *Tooling, a, b string, raw func(self, ap, an, bp, bn, ret uint32), ok func(memory, uint32) T) (T, error) {
	var v T
	var err error
	if t.closed {
		return v, ErrClosed
	}
	hostCall(func(ret uint32) {
		ap, an := stringArg(a)
		bp, bn := stringArg(b)
		raw(t.h, ap, an, bp, bn, ret)
		runtime.KeepAlive(a)
		runtime.KeepAlive(b)
	}, func(m memory, ret uint32) { v, err = liftResult(m, ret, ok) })
	return v, err
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
		return "", fmt.Errorf("toolhost: arguments of %s: %w", tool, err)
	}
	return string(b), nil
}
