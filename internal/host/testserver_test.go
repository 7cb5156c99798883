package host

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhostd/toolhostd/internal/testenv"
)

// Subscribable URIs (one per test, so that the counters stay apart).
var subURIs = []string{"test://sub/basic", "test://sub/coalesce", "test://sub/drop", "test://sub/exit", "test://sub/kill", "test://sub/busy", "test://sub/shared", "test://sub/stop", "test://sub/watch", "test://sub/resubscribe", slowSubscribeURI, stubbornSubscribeURI}

// The resources/subscribe of these waits for the gate of the uri's name;
// the stubborn one ignores notifications/cancelled (as a server does when
// the cancellation arrives after it has answered).
const (
	slowSubscribeURI     = "test://sub/slow-subscribe"
	stubbornSubscribeURI = "test://sub/stubborn-subscribe"
)

// newTestServer is the suite's in-process MCP server: testenv.MCPServer
// with small pages (list-tools and list-resources must follow the
// cursors), the tools echo, fail, slow and gate, fixed resources of each
// kind a guest reads, and when subscribable resources/subscribe, with a
// text resource per subscription test (subURIs, content "v0").
func newTestServer(subscribable bool) *testenv.MCPServer {
	var s *testenv.MCPServer
	s = testenv.NewMCPServer(testenv.MCPServerOptions{
		Name: "host-test", PageSize: 3, Subscribable: subscribable, SlowTool: "slow", GateTool: "gate",
		OnSubscribe: func(ctx context.Context, uri string) error {
			if uri != slowSubscribeURI && uri != stubbornSubscribeURI {
				return nil
			}
			g := s.Gate(uri) // held until the test opens it
			defer g.Leave()
			g.Enter()
			if uri == stubbornSubscribeURI { // as if the cancellation came too late
				<-g.Released()
				return nil
			}
			select {
			case <-g.Released():
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		},
	})
	text := func(uri, mime, text string) *mcp.ResourceContents {
		return &mcp.ResourceContents{URI: uri, MIMEType: mime, Text: text}
	}
	fixed := map[string][]*mcp.ResourceContents{
		"test://text":     {text("test://text", "text/plain", "hello, text")},
		"test://markdown": {text("test://markdown", "text/markdown", "# title")},
		"test://notype":   {text("test://notype", "", "no mime type")},
		"test://json":     {text("test://json", "application/json", `{"a":1}`)},
		"test://blob":     {{URI: "test://blob", MIMEType: "application/octet-stream", Blob: []byte{0, 1, 2, 0xff}}},
		"test://blobtext": {{URI: "test://blobtext", MIMEType: "text/plain", Blob: []byte("héllo from a blob")}},
		"test://multi":    {text("test://other", "text/plain", "not me"), text("test://multi", "text/plain", "me")},
		"test://firstof":  {text("test://firstof/a", "text/plain", "first"), text("test://firstof/b", "text/plain", "second")},
	}
	for uri, contents := range fixed {
		s.Server.AddResource(&mcp.Resource{URI: uri, Name: uri, MIMEType: contents[0].MIMEType},
			func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{Contents: contents}, nil
			})
	}
	for _, uri := range subURIs {
		s.AddResource(uri, "v0")
	}
	return s
}

// ---- the probe agent ----
