package mcpclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhostd/toolhostd/internal/testenv"
)

type bigIn struct {
	Bytes int `json:"bytes"`
}

// garbageLines is how many non-JSON lines the garbage tool prints.
const garbageLines = 20

type touchIn struct {
	URI string `json:"uri"`
}

var objectSchema = json.RawMessage(`{"type":"object"}`)

// newTestServer is the suite's MCP server, run in-process (in-memory
// transports), over HTTP or as a subprocess (the test binary re-run, see
// TestMain): besides testenv.MCPServer's echo and fail, "wire-error" and
// "invalid-params" (JSON-RPC errors), "block" (its SlowTool), "blocked"
// (how many calls of block are under way), "pid", "touch" (sends
// notifications/resources/updated of its uri), "garbage" (prints non-JSON
// lines on stdout) and "big" (a result of its bytes); and resources of
// each kind a tooling converts.
func newTestServer(pageSize int) *testenv.MCPServer {
	ts := testenv.NewMCPServer(testenv.MCPServerOptions{
		Name: "tooling-test-server", Version: "1.2.3", PageSize: pageSize, Subscribable: true, SlowTool: "block",
	})
	ts.Server.AddTool(&mcp.Tool{Name: "wire-error", InputSchema: objectSchema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, &jsonrpc.Error{Code: -32099, Message: "custom failure"}
		})
	ts.Server.AddTool(&mcp.Tool{Name: "invalid-params", InputSchema: objectSchema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "bad argument x"}
		})
	ts.Server.AddTool(&mcp.Tool{Name: "blocked", InputSchema: objectSchema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(ts.SlowActive())}}}, nil
		})
	ts.Server.AddTool(&mcp.Tool{Name: "pid", InputSchema: objectSchema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(os.Getpid())}}}, nil
		})
	mcp.AddTool(ts.Server, &mcp.Tool{Name: "touch"},
		func(ctx context.Context, _ *mcp.CallToolRequest, in touchIn) (*mcp.CallToolResult, any, error) {
			err := ts.Server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: in.URI})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "touched"}}}, nil, err
		})
	ts.Server.AddTool(&mcp.Tool{Name: "garbage", InputSchema: objectSchema},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			// Only meaningful on stdio: stray prints between the messages
			// (one line per write, so they do not tear a message apart).
			for i := range garbageLines {
				line := fmt.Sprintf("this is not JSON-RPC, line %d\n", i)
				if i == 0 {
					line = "{not json either " + strings.Repeat("x", 1000) + "\n"
				}
				_, _ = os.Stdout.Write([]byte(line))
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "printed garbage"}}}, nil
		})
	mcp.AddTool(ts.Server, &mcp.Tool{Name: "big"},
		func(_ context.Context, _ *mcp.CallToolRequest, in bigIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("b", in.Bytes)}}}, nil, nil
		})
	for i := range 5 {
		uri := fmt.Sprintf("test://text/%d", i)
		ts.Server.AddResource(&mcp.Resource{URI: uri, Name: fmt.Sprintf("text-%d", i), Description: "text", MIMEType: "text/plain"},
			func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: "hello " + uri}}}, nil
			})
	}
	add := func(uri string, contents ...*mcp.ResourceContents) {
		ts.Server.AddResource(&mcp.Resource{URI: uri, Name: uri},
			func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{Contents: contents}, nil
			})
	}
	add("test://blob/text", &mcp.ResourceContents{URI: "test://blob/text", MIMEType: "text/plain", Blob: []byte("blob as text")})
	add("test://json", &mcp.ResourceContents{URI: "test://json", MIMEType: "application/json", Text: `{"a":1}`})
	add("test://png", &mcp.ResourceContents{URI: "test://png", MIMEType: "image/png", Blob: []byte{0x89, 'P', 'N', 'G', 0, 0xff}})
	add("test://nomime", &mcp.ResourceContents{URI: "test://nomime", Text: "plain"})
	add("test://multi",
		&mcp.ResourceContents{URI: "test://multi/other", MIMEType: "text/plain", Text: "other"},
		&mcp.ResourceContents{URI: "test://multi", MIMEType: "text/plain", Text: "mine"})
	add("test://multi-none",
		&mcp.ResourceContents{URI: "test://x/first", MIMEType: "text/plain", Text: "first"},
		&mcp.ResourceContents{URI: "test://x/second", MIMEType: "text/plain", Text: "second"})
	ts.Server.AddResource(&mcp.Resource{URI: "test://broken", Name: "broken"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return nil, errors.New("disk on fire")
		})
	return ts
}
