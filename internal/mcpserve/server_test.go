package mcpserve_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/expose"
	"github.com/toolhostd/toolhostd/internal/mcpserve"
	"github.com/toolhostd/toolhostd/internal/message"
	"github.com/toolhostd/toolhostd/internal/testenv"
	"github.com/toolhostd/toolhostd/internal/testenv/talker"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type fixture struct {
	tk      *talker.Talker
	router  *message.Router
	catalog *expose.Static
	url     string
}

var agents = map[string][]expose.Agent{expose.MCP: {
	{Name: "talk", Description: "talks back"},
	{Name: "quiet", Description: "takes no MCP messages"},
}}

// serve is an MCP endpoint over a talker (talk accepts mcp, quiet does
// not) on a loopback httptest server.
func serve(t *testing.T, token string) *fixture {
	t.Helper()
	return serveWith(t, token, message.Options{})
}

// serveWith is serve with the router's options.
func serveWith(t *testing.T, token string, ro message.Options) *fixture {
	t.Helper()
	tk := talker.New(t, 8, map[string]message.Target{
		"talk":  {Accepts: []string{"mcp"}, MaxMessageBytes: 64},
		"quiet": {Accepts: []string{"api"}},
	})
	f := &fixture{tk: tk, router: message.NewRouter(tk, ro), catalog: expose.NewStatic(agents)}
	s, err := mcpserve.New(mcpserve.Options{Router: f.router, Catalog: f.catalog, Listen: "127.0.0.1:0", Token: token})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux() // mounted as the daemon mounts it
	mux.Handle(config.MCPPath, s)
	hs := httptest.NewServer(mux)
	t.Cleanup(func() { s.Close(); hs.Close() })
	f.url = hs.URL + config.MCPPath
	return f
}

func connect(t *testing.T, url, token string, opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: url}
	if token != "" {
		tr.HTTPClient = testenv.BearerClient(token)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, opts)
	cs, err := c.Connect(t.Context(), tr, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func TestListTools(t *testing.T) {
	f := serve(t, "")
	cs, err := connect(t, f.url, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*mcp.Tool{}
	for _, tool := range res.Tools {
		got[tool.Name] = tool
	}
	if len(got) != 2 || got["talk"] == nil || got["talk"].Description != "talks back" || got["quiet"] == nil {
		t.Fatalf("tools %+v", res.Tools)
	}
	schema, ok := got["talk"].InputSchema.(map[string]any)
	if !ok {
		t.Fatalf("input schema %T", got["talk"].InputSchema)
	}
	props, _ := schema["properties"].(map[string]any)
	req, _ := schema["required"].([]any)
	if props["message"] == nil || props["session"] == nil || len(req) != 1 || req[0] != "message" {
		t.Fatalf("input schema %v", schema)
	}
}

func TestCall(t *testing.T) {
	f := serve(t, "")
	cs, err := connect(t, f.url, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, tool string
		args       map[string]any
		want       string
		isError    bool
		protocol   bool // a JSON-RPC error rather than a result
	}{
		{"reply", "talk", map[string]any{"message": "hello"}, "hello", false, false},
		{"deltas then reply", "talk", map[string]any{"message": "words a b"}, "a b .", false, false},
		{"session given", "talk", map[string]any{"message": "session", "session": "s1"}, "s1", false, false},
		{"reply-error", "talk", map[string]any{"message": "fail"}, "cannot do that", true, false},
		{"sender not accepted", "quiet", map[string]any{"message": "hi"}, `does not accept messages from "mcp"`, true, false},
		{"no message", "talk", map[string]any{"session": "s1"}, "message", true, false},
		{"unknown field", "talk", map[string]any{"message": "x", "extra": 1}, "extra", true, false},
		{"empty message", "talk", map[string]any{"message": ""}, "message is empty", false, true},
		{"too large", "talk", map[string]any{"message": strings.Repeat("x", 65)}, "max_message_bytes", false, true},
		{"unknown tool", "nobody", map[string]any{"message": "hi"}, "nobody", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
			if tc.protocol {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("want a protocol error with %q, got %v %+v", tc.want, err, res)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError != tc.isError || !strings.Contains(text(res), tc.want) {
				t.Fatalf("isError %v %q, want %v %q", res.IsError, text(res), tc.isError, tc.want)
			}
		})
	}
}

func TestSessionIsTheConversation(t *testing.T) {
	f := serve(t, "")
	cs, err := connect(t, f.url, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "talk", Arguments: map[string]any{"message": "session"}})
	if err != nil {
		t.Fatal(err)
	}
	if cs.ID() == "" || text(res) != cs.ID() {
		t.Fatalf("session %q, MCP session %q", text(res), cs.ID())
	}
}

func TestProgress(t *testing.T) {
	f := serve(t, "")
	var mu sync.Mutex
	var got []string
	cs, err := connect(t, f.url, "", &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			got = append(got, req.Params.Message)
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	params := &mcp.CallToolParams{Name: "talk", Arguments: map[string]any{"message": "words a b c"}}
	params.SetProgressToken("p1")
	res, err := cs.CallTool(t.Context(), params)
	if err != nil || text(res) != "a b c ." {
		t.Fatalf("%v %+v", err, res)
	}
	// The server sends them before the result; the client may run its
	// handler for the last one after CallTool returned.
	testenv.Eventually(t, 10*time.Second, "three progress notifications", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == 3
	})
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(got, "") != "a b c " {
		t.Fatalf("progress %q", got)
	}
}

func TestListChanged(t *testing.T) {
	f := serve(t, "")
	changed := make(chan struct{}, 4)
	cs, err := connect(t, f.url, "", &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	if err != nil {
		t.Fatal(err)
	}
	f.catalog.Set(map[string][]expose.Agent{expose.MCP: {{Name: "talk", Description: "talks back, reloaded"}}})
	testenv.Recv(t, changed, 10*time.Second, "notifications/tools/list_changed")
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 1 || res.Tools[0].Name != "talk" || res.Tools[0].Description != "talks back, reloaded" {
		t.Fatalf("tools after reload %+v", res.Tools)
	}
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "quiet", Arguments: map[string]any{"message": "x"}}); err == nil {
		t.Fatal("a removed tool answered")
	}
}

func TestToken(t *testing.T) {
	f := serve(t, "s3cret")
	for _, tc := range []struct {
		name, token string
		ok          bool
	}{
		{"missing", "", false},
		{"wrong", "guess", false},
		{"right", "s3cret", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, err := connect(t, f.url, tc.token, nil)
			if (err == nil) != tc.ok {
				t.Fatalf("connect: %v, want ok %v", err, tc.ok)
			}
			if !tc.ok {
				if !strings.Contains(err.Error(), "Unauthorized") {
					t.Fatalf("want 401, got %v", err)
				}
				return
			}
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "talk", Arguments: map[string]any{"message": "hi"}})
			if err != nil || text(res) != "hi" {
				t.Fatalf("%v %+v", err, res)
			}
		})
	}
}

func TestNeedsTokenOffLoopback(t *testing.T) {
	tk := talker.New(t, 1, nil)
	opts := mcpserve.Options{Router: message.NewRouter(tk, message.Options{}), Catalog: expose.NewStatic(nil)}
	for _, listen := range []string{"0.0.0.0:8787", "192.0.2.1:8787", ":8787"} {
		opts.Listen = listen
		if _, err := mcpserve.New(opts); err == nil {
			t.Errorf("%s without a token: no error", listen)
		}
	}
	for _, listen := range []string{"127.0.0.1:8787", "[::1]:8787", "localhost:8787"} {
		opts.Listen = listen
		s, err := mcpserve.New(opts)
		if err != nil {
			t.Errorf("%s: %v", listen, err)
			continue
		}
		s.Close()
	}
}

func TestClientGoneMessageGoesOn(t *testing.T) {
	f := serve(t, "")
	cs, err := connect(t, f.url, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "talk", Arguments: map[string]any{"message": "hold"}})
		errc <- err
	}()
	testenv.Eventually(t, 10*time.Second, "the held message to be open", func() bool {
		open, _, _ := f.router.Stats()
		return open == 1
	})
	cancel()
	if err := testenv.Recv(t, errc, 10*time.Second, "the cancelled call"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
	if open, _, _ := f.router.Stats(); open != 1 {
		t.Fatalf("the message did not go on: %d open", open)
	}
	f.tk.Release()
	testenv.Eventually(t, 10*time.Second, "the held message to be answered", func() bool {
		open, retained, _ := f.router.Stats()
		return open == 0 && retained == 1
	})
}
