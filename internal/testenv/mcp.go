package testenv

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// InMemoryDialer connects each attempt to srv over a fresh pair of go-sdk
// in-memory transports: an mcpclient.Dialer for a tooling served
// in-process.
func InMemoryDialer(srv *mcp.Server) func(context.Context) (mcp.Transport, error) {
	return func(ctx context.Context) (mcp.Transport, error) {
		ct, st := mcp.NewInMemoryTransports()
		if _, err := srv.Connect(ctx, st, nil); err != nil {
			return nil, err
		}
		return ct, nil
	}
}

// EchoIn is the echo tool's input.
type EchoIn struct {
	Text string `json:"text"`
}

// AddEcho adds to srv the tool "echo", whose result is the text of its
// input ({"text": ...}): the tool most tests call through a tooling.
func AddEcho(srv *mcp.Server) {
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "echoes text"},
		func(_ context.Context, _ *mcp.CallToolRequest, in EchoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
}
