package testenv

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DirectSession is a go-sdk client session on srv over in-memory
// transports, speaking protocol (the version the mcp tooling speaks),
// closed when tb ends: the baseline benchmarks measure a tooling's calls
// against.
func DirectSession(tb testing.TB, srv *mcp.Server, protocol string) *mcp.ClientSession {
	tb.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		tb.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1.0.0"}, nil)
	cs, err := c.Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return cs
}

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
