// Package tooling owns the domain of the tooling interface: tools, tool
// results, resources, the contract's error codes, the Tooling interface that
// mirrors the WIT `tooling` resource, the progress and call id a caller
// puts in a call's context, and Idle, a tooling known by name but not
// started. The MCP session that implements Tooling is in mcpclient, the
// wire under it in transport. Nothing here knows about WebAssembly.
package tooling

import (
	"context"
	"encoding/json"
)

// KindMCP is the kind of the MCP implementation of Tooling (the
// mcpclient package), and of Idle.
const KindMCP = "mcp"

// Tool is one tool a tooling offers (WIT types.tool).
type Tool struct {
	Name        string
	Description *string
	// InputSchema is the tool's JSON Schema as JSON text.
	InputSchema string
	// Repeatable: the server's annotations say a call may be made again
	// with no further effect (MCP readOnlyHint or idempotentHint), as a
	// durable agent's replay asks of a call whose outcome was lost.
	Repeatable bool `json:",omitempty"`
}

// ToolResult is the outcome of one successful call (WIT types.tool-result).
// A result with MCP isError true is still a ToolResult.
type ToolResult struct {
	// Name is the tool that was called.
	Name string
	// Arguments is the JSON object text it was called with.
	Arguments string
	// Value is the MCP CallToolResult as JSON text.
	Value string
}

// ResourceInfo is one URI-addressed resource (WIT types.resource-info).
type ResourceInfo struct {
	URI         string
	Name        string
	Description *string
	MIMEType    *string
}

// ResourceContent is a resource read at one moment (WIT
// types.resource-content). Content is text when MIMEType is nil or text/*,
// base64 of the bytes otherwise (see EncodeContent).
type ResourceContent struct {
	URI      string
	MIMEType *string
	Content  string
}

// Observer receives a tooling's server notifications. Calls come from the
// tooling's own goroutines and must not block for long.
type Observer interface {
	// ResourceUpdated reports notifications/resources/updated for uri.
	ResourceUpdated(uri string)
	// ResourceListChanged reports notifications/resources/list_changed.
	ResourceListChanged()
	// ResubscribeFailed reports that, after a reconnect, the MCP
	// subscription to uri could not be made again.
	ResubscribeFailed(uri string, err error)
}

// Tooling is one configured tool server, shared by every agent that uses it.
// It mirrors the operations of the WIT `tooling` resource that talk to the
// server; queued calls, is-open and cancel live in package gateway and
// package contract on top of it.
// Every method is safe for concurrent use and returns an *Error on failure.
type Tooling interface {
	// Kind is the implementation, e.g. "mcp".
	Kind() string
	// Name is the configured name.
	Name() string
	// ListTools returns every tool, following pagination to the end.
	ListTools(ctx context.Context) ([]Tool, error)
	// CallTool calls one tool with a JSON object of arguments and waits for
	// its result, bounded by ctx and the tooling's call timeout. Cancelling
	// ctx cancels the request on the server.
	CallTool(ctx context.Context, name string, args json.RawMessage) (ToolResult, error)
	// ListResources returns every resource, following pagination.
	ListResources(ctx context.Context) ([]ResourceInfo, error)
	// ReadResource reads uri now, applying the contract's encoding rule.
	ReadResource(ctx context.Context, uri string) (ResourceContent, error)
	// SupportsSubscribe reports whether the server offers resources.subscribe.
	// It is known only once connected; before that it returns false.
	SupportsSubscribe() bool
	// Subscribe makes the MCP resources/subscribe for uri and keeps it across
	// reconnects until Unsubscribe. Callers refcount; the tooling does not.
	Subscribe(ctx context.Context, uri string) error
	// Unsubscribe withdraws the MCP subscription to uri.
	Unsubscribe(ctx context.Context, uri string) error
	// Serve keeps the tooling's session alive until ctx ends: connect,
	// reconnect with backoff, re-subscribe; the server notifications of
	// its sessions go to o (nil: nowhere), from the tooling's own
	// goroutines. Whoever runs the tooling receives what it announces:
	// there is no observer to install or forward besides. It returns
	// suture.ErrDoNotRestart for a config it can never run.
	// Operations made while no session is up wait for one, at most the
	// tooling's connect timeout, then fail with unavailable; while the
	// last connection attempt has failed they fail at once, with its error.
	Serve(ctx context.Context, o Observer) error
}
