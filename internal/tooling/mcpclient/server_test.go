package mcpclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// testServer is a real go-sdk MCP server with the tools and resources the
// tests use. It runs in-process (in-memory transports) or as a subprocess
// (the test binary re-run, see TestMain).
type testServer struct {
	srv       *mcp.Server
	started   chan string // a blocking tool began (its name)
	cancelled chan string // a blocking tool saw its context end
	toolLists atomic.Int64
	subscribe atomic.Int64
	blocked   atomic.Int64 // calls of "block" under way
}

type echoIn struct {
	Text string `json:"text"`
}

type bigIn struct {
	Bytes int `json:"bytes"`
}

// garbageLines is how many non-JSON lines the garbage tool prints.
const garbageLines = 20

type touchIn struct {
	URI string `json:"uri"`
}

var objectSchema = json.RawMessage(`{"type":"object"}`)

func newTestServer(pageSize int) *testServer {
	ts := &testServer{started: make(chan string, 16), cancelled: make(chan string, 16)}
	ts.srv = mcp.NewServer(&mcp.Implementation{Name: "tooling-test-server", Version: "1.2.3"}, &mcp.ServerOptions{
		PageSize: pageSize,
		SubscribeHandler: func(context.Context, *mcp.SubscribeRequest) error {
			ts.subscribe.Add(1)
			return nil
		},
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	ts.srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				ts.toolLists.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	mcp.AddTool(ts.srv, &mcp.Tool{Name: "echo", Description: "Echoes its text.\nSecond line."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	ts.srv.AddTool(&mcp.Tool{Name: "fail", InputSchema: objectSchema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "it failed"}}}, nil
		})
	ts.srv.AddTool(&mcp.Tool{Name: "wire-error", InputSchema: objectSchema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, &jsonrpc.Error{Code: -32099, Message: "custom failure"}
		})
	ts.srv.AddTool(&mcp.Tool{Name: "invalid-params", InputSchema: objectSchema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "bad argument x"}
		})
	ts.srv.AddTool(&mcp.Tool{Name: "block", InputSchema: objectSchema},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ts.blocked.Add(1)
			defer ts.blocked.Add(-1)
			ts.started <- "block"
			select {
			case <-ctx.Done():
			case <-time.After(time.Minute):
				// Never cancelled: a test failed; do not hang its cleanup.
				return nil, errors.New("block: not cancelled within a minute")
			}
			ts.cancelled <- "block"
			return nil, ctx.Err()
		})
	ts.srv.AddTool(&mcp.Tool{Name: "blocked", InputSchema: objectSchema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(ts.blocked.Load())}}}, nil
		})
	ts.srv.AddTool(&mcp.Tool{Name: "pid", InputSchema: objectSchema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(os.Getpid())}}}, nil
		})
	mcp.AddTool(ts.srv, &mcp.Tool{Name: "touch"},
		func(ctx context.Context, _ *mcp.CallToolRequest, in touchIn) (*mcp.CallToolResult, any, error) {
			err := ts.srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: in.URI})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "touched"}}}, nil, err
		})
	ts.srv.AddTool(&mcp.Tool{Name: "garbage", InputSchema: objectSchema},
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
	mcp.AddTool(ts.srv, &mcp.Tool{Name: "big"},
		func(_ context.Context, _ *mcp.CallToolRequest, in bigIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("b", in.Bytes)}}}, nil, nil
		})
	for i := range 5 {
		uri := fmt.Sprintf("test://text/%d", i)
		ts.srv.AddResource(&mcp.Resource{URI: uri, Name: fmt.Sprintf("text-%d", i), Description: "text", MIMEType: "text/plain"},
			func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: "hello " + uri}}}, nil
			})
	}
	add := func(uri string, contents ...*mcp.ResourceContents) {
		ts.srv.AddResource(&mcp.Resource{URI: uri, Name: uri},
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
	ts.srv.AddResource(&mcp.Resource{URI: "test://broken", Name: "broken"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return nil, errors.New("disk on fire")
		})
	return ts
}
