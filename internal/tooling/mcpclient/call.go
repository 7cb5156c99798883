package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolhostd/toolhostd/internal/tooling"
	"github.com/toolhostd/toolhostd/internal/tooling/oauth"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// acquire returns the live session, waiting for one at most the connect
// timeout. While the tooling is down after a failed connection attempt it
// fails at once with that attempt's error; a caller waiting meanwhile
// fails as soon as an attempt does.
func (m *Client) acquire(ctx context.Context, op string) (*session, error) {
	var timeout <-chan time.Time
	for {
		m.mu.Lock()
		s, ready, failed, down, lastErr, loginWait := m.cur, m.ready, m.failed, m.down, m.lastErr, m.loginWait.ch
		m.mu.Unlock()
		if s == nil && down && lastErr != nil {
			return nil, tooling.Errorf(tooling.CodeUnavailable, "%s: tooling %s is not connected: %w", op, m.name, lastErr)
		}
		if s != nil {
			if s.ctx.Err() == nil {
				return s, nil
			}
			// Ended but still current: take it out so ready is renewed.
			m.endSession(s, context.Cause(s.ctx))
			continue
		}
		if le := m.needsLogin(); le != nil {
			// Waiting would not help: nobody logs in for this request.
			return nil, tooling.Errorf(tooling.CodeUnavailable, "%s: %w", op, le)
		}
		if timeout == nil {
			t := time.NewTimer(m.opts.timeout.connect)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-ready:
		case <-failed:
		case <-loginWait:
		case <-ctx.Done():
			return nil, mapError(ctx, ctx, op, ctx.Err())
		case <-timeout:
			m.mu.Lock()
			lastErr := m.lastErr
			m.mu.Unlock()
			if lastErr != nil {
				return nil, tooling.Errorf(tooling.CodeUnavailable, "%s: no session within %v; last connection error: %w", op, m.opts.timeout.connect, lastErr)
			}
			return nil, tooling.Errorf(tooling.CodeUnavailable, "%s: no session within %v", op, m.opts.timeout.connect)
		}
	}
}

// notSentError is a request go-sdk refused to send, or the server refused
// to run, because the connection was closing: it ran nowhere, so it may be
// made again on the next session.
type notSentError struct{ err *tooling.Error }

func (e *notSentError) Error() string { return e.err.Error() }

// run makes one request on s, bounded by ctx, the call timeout and the
// life of s, and maps its error.
func (m *Client) run(ctx context.Context, s *session, op string, f func(context.Context, *mcp.ClientSession) error) error {
	opCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(s.ctx, func() { cancel(context.Cause(s.ctx)) })
	defer stop()
	tctx, tcancel := context.WithTimeoutCause(opCtx, m.opts.timeout.call, errCallTimeout)
	defer tcancel()
	tctx = context.WithValue(tctx, callerKey{}, ctx) // for trackSending
	m.reqs.inFlight.Add(1)
	defer m.reqs.inFlight.Add(-1)
	err := f(tctx, s.cs)
	if err == nil {
		return nil
	}
	err = m.redact(err)
	if le := oauth.AsLoginRequired(err); le != nil {
		// The server wants a token nobody here can get: the session is
		// of no use until someone logs in.
		m.endSession(s, le)
		return tooling.Errorf(tooling.CodeUnavailable, "%s: %w", op, le)
	}
	if tctx.Err() == nil && errors.Is(err, mcp.ErrConnectionClosed) {
		// Either the connection is closing (the session's reader ends the
		// session when it really is) or the server answered with one of
		// the closing error codes: the request was not carried out, and
		// the session is not torn down on the strength of an error code.
		return &notSentError{mapError(ctx, tctx, op, err)}
	}
	mapped := mapError(ctx, tctx, op, err)
	if ctx.Err() == nil && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) {
		// The connection's stream ended under the request (go-sdk fails
		// the requests in flight with the reader's error before the
		// session's Wait returns): take the session out of service before
		// the caller hears of it, so that its next request waits for the
		// next session instead of being refused by this one.
		m.endSession(s, fmt.Errorf("connection closed: %w", err))
	}
	return mapped
}

// do is acquire then run. A request answered "connection closed" is made
// again on the next session (at most twice more) only when its session then
// really ends: go-sdk reports a request it refused to send on a closing
// connection that way, and such a request never reached the server, so
// even a tool call may be made again. A server can also answer with the
// jsonrpc closing codes while staying up; then nothing is repeated.
func (m *Client) do(ctx context.Context, op string, f func(context.Context, *mcp.ClientSession) error) error {
	for attempt := 0; ; attempt++ {
		s, err := m.acquire(ctx, op)
		if err != nil {
			return err
		}
		err = m.run(ctx, s, op, f)
		var ns *notSentError
		if !errors.As(err, &ns) {
			return err
		}
		if attempt == 2 || !sessionEnds(s) {
			return ns.err
		}
	}
}

// ListTools returns every tool, from the cache while it is valid (it is
// dropped on tools/list_changed and on every new session).
func (m *Client) ListTools(ctx context.Context) ([]tooling.Tool, error) {
	m.mu.Lock()
	if m.tools.list != nil {
		t := slices.Clone(m.tools.list)
		m.mu.Unlock()
		return t, nil
	}
	m.mu.Unlock()
	for attempt := 0; ; attempt++ {
		s, err := m.acquire(ctx, "tools/list")
		if err != nil {
			return nil, err
		}
		tools, err := m.fetchToolsOn(ctx, s)
		var ns *notSentError
		if errors.As(err, &ns) && attempt < 2 {
			continue
		}
		if err != nil {
			return nil, plainError(err)
		}
		return slices.Clone(tools), nil
	}
}

// fetchTools lists every tool on s and caches the list unless it was
// invalidated meanwhile.
func (m *Client) fetchTools(ctx context.Context, s *session) ([]tooling.Tool, error) {
	tools, err := m.fetchToolsOn(ctx, s)
	return tools, plainError(err)
}

// plainError unwraps a notSentError for callers that do not retry.
func plainError(err error) error {
	var ns *notSentError
	if errors.As(err, &ns) {
		return ns.err
	}
	return err
}

func (m *Client) fetchToolsOn(ctx context.Context, s *session) ([]tooling.Tool, error) {
	m.mu.Lock()
	gen := m.tools.gen
	m.mu.Unlock()
	var out []tooling.Tool
	err := m.run(ctx, s, "tools/list", func(ctx context.Context, cs *mcp.ClientSession) error {
		out = out[:0]
		for t, err := range cs.Tools(ctx, nil) {
			if err != nil {
				return err
			}
			out = append(out, convertTool(t))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []tooling.Tool{}
	}
	m.mu.Lock()
	if m.cur == s {
		m.tools.fill(gen, out)
	}
	m.mu.Unlock()
	return out, nil
}

func convertTool(t *mcp.Tool) tooling.Tool {
	out := tooling.Tool{Name: t.Name, InputSchema: `{"type":"object"}`}
	if t.Description != "" {
		d := t.Description
		out.Description = &d
	}
	if t.InputSchema != nil {
		if b, err := json.Marshal(t.InputSchema); err == nil {
			out.InputSchema = string(b)
		}
	}
	if a := t.Annotations; a != nil {
		out.Repeatable = a.ReadOnlyHint || a.IdempotentHint
	}
	return out
}

// CallTool calls tool name with args (a JSON object; empty means {}). An
// MCP result with isError true is a success here. It is never retried.
func (m *Client) CallTool(ctx context.Context, name string, args json.RawMessage) (tooling.ToolResult, error) {
	if name == "" {
		return tooling.ToolResult{}, tooling.Errorf(tooling.CodeInvalidArgument, "tools/call: empty tool name")
	}
	a := bytes.TrimSpace(args)
	if len(a) == 0 {
		a = []byte("{}")
	}
	if a[0] != '{' || !json.Valid(a) {
		return tooling.ToolResult{}, tooling.Errorf(tooling.CodeInvalidArgument, "tools/call %q: arguments must be a JSON object", name)
	}
	op := fmt.Sprintf("tools/call %q", name)
	var res *mcp.CallToolResult
	token, untrack := m.progress.track(ctx, name)
	defer untrack()
	params := &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(a)}
	params.SetProgressToken(token)
	ctx, span := m.startSpan(ctx, "tools/call", name, semconv.GenAIToolName(name), semconv.GenAIOperationNameExecuteTool)
	injectMeta(ctx, span, params)
	// A call is repeated only if it never reached the server (see do).
	err := m.do(ctx, op, func(ctx context.Context, cs *mcp.ClientSession) error {
		select {
		case m.reqs.slots <- struct{}{}:
			defer func() { <-m.reqs.slots }()
		case <-ctx.Done():
			return ctx.Err()
		}
		sessionSpan(span, cs)
		var err error
		res, err = cs.CallTool(ctx, params)
		return err
	})
	endSpan(span, err)
	if err != nil {
		return tooling.ToolResult{}, err
	}
	v, err := json.Marshal(res)
	if err != nil {
		return tooling.ToolResult{}, tooling.Errorf(tooling.CodeInternal, "%s: encoding the result: %w", op, err)
	}
	return tooling.ToolResult{Name: name, Arguments: string(a), Value: string(v)}, nil
}

// ListResources returns every resource, following pagination.
func (m *Client) ListResources(ctx context.Context) ([]tooling.ResourceInfo, error) {
	out := []tooling.ResourceInfo{}
	err := m.do(ctx, "resources/list", func(ctx context.Context, cs *mcp.ClientSession) error {
		out = out[:0]
		for r, err := range cs.Resources(ctx, nil) {
			if err != nil {
				return err
			}
			ri := tooling.ResourceInfo{URI: r.URI, Name: r.Name}
			if r.Description != "" {
				d := r.Description
				ri.Description = &d
			}
			if r.MIMEType != "" {
				mt := r.MIMEType
				ri.MIMEType = &mt
			}
			out = append(out, ri)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ReadResource reads uri and applies the contract's encoding rule
// (EncodeContent) to the content whose uri is uri, else the first.
func (m *Client) ReadResource(ctx context.Context, uri string) (_ tooling.ResourceContent, err error) {
	op := fmt.Sprintf("resources/read %q", uri)
	var res *mcp.ReadResourceResult
	ctx, span := m.startSpan(ctx, "resources/read", uri, semconv.McpResourceURIKey.String(uri))
	params := &mcp.ReadResourceParams{URI: uri}
	injectMeta(ctx, span, params)
	defer func() { endSpan(span, err) }()
	err = m.do(ctx, op, func(ctx context.Context, cs *mcp.ClientSession) error {
		sessionSpan(span, cs)
		var err error
		res, err = cs.ReadResource(ctx, params)
		return err
	})
	if err != nil {
		return tooling.ResourceContent{}, err
	}
	c := SelectContent(uri, res.Contents)
	if c == nil {
		return tooling.ResourceContent{}, tooling.Errorf(tooling.CodeProtocol, "%s: the server returned no contents", op)
	}
	return EncodeContent(c), nil
}

// closingGrace is how long do waits for a session that answered
// "connection closed" to end.
const closingGrace = 2 * time.Second

// sessionEnds reports whether s ends within closingGrace.
func sessionEnds(s *session) bool {
	t := time.NewTimer(closingGrace)
	defer t.Stop()
	select {
	case <-s.ctx.Done():
		return true
	case <-t.C:
		return false
	}
}
