//lint:file-ignore SA1019 the MCP 2025-11-25 features servers ask for (roots, sampling, logging) are deprecated only from protocol 2026-07-28, which toolhostd does not speak (DefaultProtocolVersion)

package mcpclient

import (
	"context"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"
)

// What toolhostd's client offers servers: roots (when configured, see
// roots.go), elicitation (answered by the tooling's policy, see
// elicitation.go), server log messages (logging.go) and progress
// (progress.go). Sampling is offered only with a Sampler (Options: the tooling's
// sampling table names a provider, see sampling.go); otherwise a
// sampling/createMessage gets a method-not-found error.

// clientOptions are the go-sdk client options of m: the capabilities
// toolhostd offers servers and the handlers of what they send.
func (m *Client) clientOptions() *mcp.ClientOptions {
	caps := &mcp.ClientCapabilities{} // no roots unless configured
	if len(m.cfg.Roots) > 0 {
		// The list is fixed for the tooling's life (a reload makes a new
		// tooling), so no listChanged.
		caps.RootsV2 = &mcp.RootCapabilities{}
	}
	var createMessage func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error)
	if m.opts.sampler != nil {
		createMessage = m.onCreateMessage
	}
	return &mcp.ClientOptions{
		Logger:                      slog.New(&slogToZap{log: m.log.Named("go-sdk")}),
		CreateMessageHandler:        createMessage,
		Capabilities:                caps,
		ToolListChangedHandler:      m.onToolListChanged,
		ResourceListChangedHandler:  m.onResourceListChanged,
		ResourceUpdatedHandler:      m.onResourceUpdated,
		ElicitationHandler:          m.onElicit,
		LoggingMessageHandler:       m.onServerLog,
		ProgressNotificationHandler: m.onProgress,
	}
}

// receiving is the middleware on what servers send the client: sampling is
// refused with a clear error, roots/list is logged.
func (m *Client) receiving(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "sampling/createMessage":
			if m.opts.sampler != nil {
				break
			}
			m.log.Warn("the server asked for sampling; refused (toolhostd does not offer sampling)")
			// go-sdk's own answer would be its -31001 "client does not
			// support CreateMessage"; method not found is JSON-RPC's
			// (go-sdk words its message: method not found: "sampling/createMessage").
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "toolhostd does not offer sampling"}
		case "roots/list":
			m.log.Debug("the server listed the roots", zap.Strings("roots", m.cfg.Roots))
		}
		return next(ctx, method, req)
	}
}
