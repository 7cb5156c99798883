package host

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhostd/toolhostd/internal/testenv"
)

// testServer is a real go-sdk MCP server run in-process, with the tools
// and resources the tests need and a record of what it saw.
type testServer struct {
	srv *mcp.Server

	slowStarted   sync.Map // tag -> chan struct{} (closed when started)
	slowCancelled sync.Map // tag -> chan struct{} (closed when its context ended)
	gates         sync.Map // tag -> *gate
	failSubscribe sync.Map // uri -> true: resources/subscribe fails

	subscribes   sync.Map // uri -> *atomic.Int64
	unsubscribes sync.Map // uri -> *atomic.Int64
	reads        sync.Map // uri -> *atomic.Int64
	echoes       atomic.Int64

	mu      sync.Mutex
	content map[string]string
}

type gate struct {
	entered chan struct{}
	release chan struct{}
	done    chan struct{} // closed when the handler returns (subscribe only)
}

type toolIn struct {
	Text    string `json:"text,omitempty"`
	Message string `json:"message,omitempty"` // the example agents' name for it
	Tag     string `json:"tag,omitempty"`
}

func counter(m *sync.Map, key string) *atomic.Int64 {
	v, _ := m.LoadOrStore(key, new(atomic.Int64))
	return v.(*atomic.Int64)
}

func signal(m *sync.Map, key string) chan struct{} {
	v, _ := m.LoadOrStore(key, make(chan struct{}))
	return v.(chan struct{})
}

// reset forgets what the server saw (each test starts afresh, so that
// -count=N works).
func (s *testServer) reset() {
	for _, m := range []*sync.Map{&s.slowStarted, &s.slowCancelled, &s.gates, &s.failSubscribe, &s.subscribes, &s.unsubscribes, &s.reads} {
		m.Clear()
	}
}

func (s *testServer) gate(tag string) *gate {
	v, _ := s.gates.LoadOrStore(tag, &gate{entered: make(chan struct{}), release: make(chan struct{}), done: make(chan struct{})})
	return v.(*gate)
}

// Subscribable URIs (one per test, so that the counters stay apart).
var subURIs = []string{"test://sub/basic", "test://sub/coalesce", "test://sub/drop", "test://sub/exit", "test://sub/kill", "test://sub/busy", "test://sub/shared", "test://sub/stop", "test://sub/watch", "test://sub/resubscribe", slowSubscribeURI, stubbornSubscribeURI}

// The resources/subscribe of these waits for the gate of the uri's name;
// the stubborn one ignores notifications/cancelled (as a server does when
// the cancellation arrives after it has answered).
const (
	slowSubscribeURI     = "test://sub/slow-subscribe"
	stubbornSubscribeURI = "test://sub/stubborn-subscribe"
)

func newTestServer(subscribable bool) *testServer {
	s := &testServer{content: map[string]string{}}
	// Small pages: list-tools and list-resources must follow the cursors.
	opts := &mcp.ServerOptions{PageSize: 3}
	if subscribable {
		opts.SubscribeHandler = func(ctx context.Context, req *mcp.SubscribeRequest) error {
			if _, fail := s.failSubscribe.Load(req.Params.URI); fail {
				return errors.New("subscriptions to this uri are off")
			}
			switch uri := req.Params.URI; uri {
			case slowSubscribeURI, stubbornSubscribeURI: // held until the test opens its gate
				g := s.gate(uri)
				defer close(g.done)
				close(g.entered)
				if uri == stubbornSubscribeURI { // as if the cancellation came too late
					<-g.release
					break
				}
				select {
				case <-g.release:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			counter(&s.subscribes, req.Params.URI).Add(1)
			return nil
		}
		opts.UnsubscribeHandler = func(_ context.Context, req *mcp.UnsubscribeRequest) error {
			counter(&s.unsubscribes, req.Params.URI).Add(1)
			return nil
		}
	}
	s.srv = mcp.NewServer(&mcp.Implementation{Name: "host-test", Version: "1.0.0"}, opts)
	mcp.AddTool(s.srv, &mcp.Tool{Name: "echo", Description: "echoes text"},
		func(_ context.Context, _ *mcp.CallToolRequest, in toolIn) (*mcp.CallToolResult, any, error) {
			s.echoes.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text + in.Message}}}, nil, nil
		})
	mcp.AddTool(s.srv, &mcp.Tool{Name: "fail", Description: "a tool error (isError)"},
		func(_ context.Context, _ *mcp.CallToolRequest, in toolIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "failed: " + in.Text}}}, nil, nil
		})
	mcp.AddTool(s.srv, &mcp.Tool{Name: "slow", Description: "blocks until its request is cancelled"},
		func(ctx context.Context, _ *mcp.CallToolRequest, in toolIn) (*mcp.CallToolResult, any, error) {
			close(signal(&s.slowStarted, in.Tag))
			<-ctx.Done()
			close(signal(&s.slowCancelled, in.Tag))
			return nil, nil, ctx.Err()
		})
	mcp.AddTool(s.srv, &mcp.Tool{Name: "gate", Description: "blocks until the test releases its tag"},
		func(ctx context.Context, _ *mcp.CallToolRequest, in toolIn) (*mcp.CallToolResult, any, error) {
			g := s.gate(in.Tag)
			close(g.entered)
			select {
			case <-g.release:
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "passed " + in.Tag}}}, nil, nil
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
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
		s.srv.AddResource(&mcp.Resource{URI: uri, Name: uri, MIMEType: contents[0].MIMEType},
			func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				counter(&s.reads, uri).Add(1)
				return &mcp.ReadResourceResult{Contents: contents}, nil
			})
	}
	for _, uri := range subURIs {
		s.addResource(uri, "v0")
	}
	return s
}

// addResource adds a text resource whose content setContent changes; the
// server sends notifications/resources/list_changed.
func (s *testServer) addResource(uri, text string) {
	s.setContent(uri, text)
	s.srv.AddResource(&mcp.Resource{URI: uri, Name: uri, MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			counter(&s.reads, uri).Add(1)
			s.mu.Lock()
			text := s.content[uri]
			s.mu.Unlock()
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: text}}}, nil
		})
}

func (s *testServer) setContent(uri, text string) {
	s.mu.Lock()
	s.content[uri] = text
	s.mu.Unlock()
}

// update changes uri's content and sends notifications/resources/updated.
func (s *testServer) update(t testing.TB, uri, text string) {
	t.Helper()
	s.setContent(uri, text)
	if err := s.srv.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
}

// ---- gates ----

// enterGate waits until the guest is inside the gate tool for tag.
func (s *testServer) enterGate(t testing.TB, tag string) {
	t.Helper()
	testenv.Recv(t, s.gate(tag).entered, 20*time.Second, "the guest to call gate "+tag)
}

func (s *testServer) openGate(tag string) { close(s.gate(tag).release) }

// ---- the probe agent ----
