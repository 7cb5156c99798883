package tooling

import (
	"context"
	"encoding/json"
)

// Idle is a configured tooling that is not started (`toolhostd run
// --grant` leaves the others idle): it is known by name, so that agents get
// denied rather than not-found for it, but it never runs a server. Every
// operation fails with unavailable; Serve waits for its context.
func Idle(name string) Tooling { return idle(name) }

type idle string

func (t idle) err(op string) error {
	return Errorf(CodeUnavailable, "%s: tooling %s is not started", op, string(t))
}

func (t idle) Kind() string { return KindMCP }
func (t idle) Name() string { return string(t) }
func (t idle) ListTools(context.Context) ([]Tool, error) {
	return nil, t.err("tools/list")
}
func (t idle) CallTool(context.Context, string, json.RawMessage) (ToolResult, error) {
	return ToolResult{}, t.err("tools/call")
}
func (t idle) ListResources(context.Context) ([]ResourceInfo, error) {
	return nil, t.err("resources/list")
}
func (t idle) ReadResource(context.Context, string) (ResourceContent, error) {
	return ResourceContent{}, t.err("resources/read")
}
func (t idle) SupportsSubscribe() bool                   { return false }
func (t idle) Subscribe(context.Context, string) error   { return t.err("resources/subscribe") }
func (t idle) Unsubscribe(context.Context, string) error { return nil }
func (t idle) Serve(ctx context.Context, _ Observer) error {
	<-ctx.Done()
	return ctx.Err()
}
