package tooling

import (
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// clientOptions are the go-sdk client options of m: the capabilities
// toolhostd offers servers and the handlers of what they send.
func (m *MCP) clientOptions() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		Logger:                     slog.New(&slogToZap{log: m.log.Named("go-sdk")}),
		ToolListChangedHandler:     m.onToolListChanged,
		ResourceListChangedHandler: m.onResourceListChanged,
		ResourceUpdatedHandler:     m.onResourceUpdated,
		ElicitationHandler:         m.onElicit,
	}
}
