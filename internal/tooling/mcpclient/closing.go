package mcpclient

import (
	"context"
	"errors"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolhostd/toolhostd/internal/tooling/transport"
)

// callerKey is the context key of the context of the caller of run.
type callerKey struct{}

// callerGaveUp reports whether the request made with ctx ended because its
// caller gave up (its own context ended, not the session's): the request's
// context may have been cancelled by the session's end first even then.
func callerGaveUp(ctx context.Context) bool {
	if c, ok := ctx.Value(callerKey{}).(context.Context); ok {
		ctx = c
	}
	var lost *sessionLostError
	return ctx.Err() != nil && !errors.As(context.Cause(ctx), &lost)
}

// trackSending is the client's sending middleware: it counts each session's
// requests in flight and those given up by their caller (a Ctrl-C, a
// timeout). Those given up because the session ends (a background tool
// list refresh) owe no flushed notice: closing does not wait for them.
func (m *Client) trackSending(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		v, ok := m.reqs.trackers.Load(req.GetSession())
		if !ok || strings.HasPrefix(method, "notifications/") {
			return next(ctx, method, req)
		}
		t := v.(*transport.Tracker)
		t.Begin()
		res, err := next(ctx, method, req)
		var we *jsonrpc.Error
		if err == nil || errors.As(err, &we) {
			t.Answered()
		}
		t.End(err != nil && ctx.Err() != nil && callerGaveUp(ctx))
		return res, err
	}
}
