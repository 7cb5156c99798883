// Package mcpserve serves the agents exposed over MCP as MCP tools, with
// go-sdk's server and its Streamable HTTP handler: one tool per agent (its
// name, its description, input {"message", "session"?}); a call is a
// message from "mcp" through the message Router and its result is the
// reply's text. Reply deltas go out as progress notifications when the
// client sent a progress token; tools come and go with the catalog (and
// notifications/tools/list_changed).
package mcpserve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"
	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/expose"
	"github.com/toolhostd/toolhostd/internal/message"
	"github.com/toolhostd/toolhostd/internal/tooling"
	"github.com/toolhostd/toolhostd/internal/tracing"
)

// DefaultMaxRequestBytes bounds a request's body when Options leave it 0.
const DefaultMaxRequestBytes = 4 << 20

// Options configure a Server.
type Options struct {
	// Router sends the messages (required).
	Router *message.Router
	// Catalog lists the agents exposed over MCP (required).
	Catalog expose.Catalog
	// Listen is the address the handler is served on ([host] mcp.listen):
	// without a Token it must be loopback-only.
	Listen string
	// Token, when set, is the bearer token every request must carry.
	Token string
	// MaxRequestBytes bounds a request's body (DefaultMaxRequestBytes).
	MaxRequestBytes int64
	// Version is the server's version in the MCP handshake.
	Version string
	// Log gets the start line and refusals (zap.NewNop if nil).
	Log *zap.Logger
}

// Input is a tool call's arguments.
type Input struct {
	Message string `json:"message" jsonschema:"the message to the agent"`
	Session string `json:"session,omitempty" jsonschema:"the conversation it belongs to; without one, the MCP session is the conversation"`
}

// Server is the MCP endpoint, an http.Handler. Close it to stop following
// the catalog.
type Server struct {
	router  *message.Router
	catalog expose.Catalog
	log     *zap.Logger
	mcp     *mcp.Server
	handler http.Handler

	mu    sync.Mutex
	tools map[string]string // name -> description, as served
	stop  func()
}

// New is the MCP endpoint over opts.Router. It refuses to serve a
// non-loopback address without a token.
func New(opts Options) (*Server, error) {
	if opts.Router == nil || opts.Catalog == nil {
		return nil, errors.New("mcpserve: a router and a catalog are required")
	}
	if err := expose.CheckListen("mcp", opts.Listen, opts.Token); err != nil {
		return nil, err
	}
	if opts.MaxRequestBytes <= 0 {
		opts.MaxRequestBytes = DefaultMaxRequestBytes
	}
	log := opts.Log
	if log == nil {
		log = zap.NewNop()
	}
	s := &Server{router: opts.Router, catalog: opts.Catalog, log: log.Named("mcp"), tools: map[string]string{}}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "toolhostd", Version: opts.Version}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, nil)
	s.handler = expose.LimitBody(opts.MaxRequestBytes, expose.RequireToken(opts.Token, h))
	if opts.Token != "" {
		s.log.Info("mcp endpoint requires a bearer token", zap.String("listen", opts.Listen))
	} else {
		s.log.Warn("mcp endpoint without a token: loopback only, any local process may call its agents", zap.String("listen", opts.Listen))
	}
	s.stop = opts.Catalog.OnChange(s.sync)
	s.sync()
	return s, nil
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// Close stops following the catalog and closes the open MCP sessions.
func (s *Server) Close() error {
	s.stop()
	for ss := range s.mcp.Sessions() {
		_ = ss.Close()
	}
	return nil
}

// sync makes the served tools those of the catalog: the go-sdk tells the
// sessions with notifications/tools/list_changed.
func (s *Server) sync() {
	s.mu.Lock()
	defer s.mu.Unlock()
	want := map[string]string{}
	for _, a := range s.catalog.Exposed(expose.MCP) {
		want[a.Name] = a.Description
	}
	var gone []string
	for name := range s.tools {
		if _, ok := want[name]; !ok {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		s.mcp.RemoveTools(gone...)
	}
	for name, desc := range want {
		if old, ok := s.tools[name]; ok && old == desc {
			continue
		}
		mcp.AddTool(s.mcp, &mcp.Tool{Name: name, Description: desc}, s.call(name))
	}
	s.tools = want
}

// call is the tool of agent: send the message, follow its reply.
func (s *Server) call(agent string) mcp.ToolHandlerFor[Input, any] {
	return func(ctx context.Context, req *mcp.CallToolRequest, in Input) (*mcp.CallToolResult, any, error) {
		if in.Message == "" {
			return nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "message is empty"}
		}
		session := in.Session
		if session == "" && req.Session != nil {
			session = req.Session.ID()
		}
		m, _, err := s.router.Send(traceContext(ctx, req), message.Request{Agent: agent, Session: session, Sender: message.SenderMCP, Content: in.Message})
		if err != nil {
			return nil, nil, s.refusal(agent, err)
		}
		token := req.Params.GetProgressToken()
		var seq uint64
		for {
			evs, _, changed := m.After(seq)
			for _, ev := range evs {
				seq = ev.Seq
				switch ev.Kind {
				case message.KindDelta:
					if token != nil {
						_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
							ProgressToken: token, Progress: float64(ev.Seq), Message: ev.Text})
					}
				case message.KindReply:
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: ev.Text}}}, nil, nil
				default:
					return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: errorText(ev)}}}, nil, nil
				}
			}
			select {
			case <-changed:
			case <-ctx.Done():
				// The client stopped waiting; the message goes on and
				// stays retained under its id.
				s.log.Debug("call abandoned", zap.String("agent", agent), zap.String("message", m.ID()), zap.Error(ctx.Err()))
				return nil, nil, ctx.Err()
			}
		}
	}
}

// refusal maps a Router refusal: a tool that is gone or input the agent
// cannot take is the protocol's invalid params; the rest (denied, busy,
// unavailable, unsupported) a tool result with isError, its text the
// reason.
func (s *Server) refusal(agent string, err error) error {
	s.log.Debug("call refused", zap.String("agent", agent), zap.Error(err))
	switch {
	case errors.Is(err, message.ErrUnknownAgent):
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", agent)}
	case errors.Is(err, message.ErrTooLarge):
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: tooling.AsError(err).Message}
	}
	return errors.New(tooling.AsError(err).Message)
}

// errorText is a failed reply as the tool's error text: the agent's own
// words for a reply-error, else the code and message.
func errorText(ev message.Event) string {
	if ev.Code == message.CodeReplyError {
		return ev.Text
	}
	return ev.Code + ": " + ev.Text
}

// traceContext is ctx with the caller's trace context, so that the
// message is a child of the caller's span: the request's _meta
// (traceparent, tracestate, baggage, as the MCP conventions carry them)
// or, without a traceparent there, the HTTP request's headers.
func traceContext(ctx context.Context, req *mcp.CallToolRequest) context.Context {
	c := propagation.MapCarrier{}
	for k, v := range req.Params.GetMeta() {
		if s, ok := v.(string); ok {
			c[strings.ToLower(k)] = s
		}
	}
	if c.Get("traceparent") == "" && req.Extra != nil && req.Extra.Header != nil {
		return tracing.Propagator.Extract(ctx, propagation.HeaderCarrier(req.Extra.Header))
	}
	return tracing.Propagator.Extract(ctx, c)
}
