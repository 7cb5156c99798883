package contract_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/contract"
	"github.com/toolhostd/toolhostd/internal/gateway"
	"github.com/toolhostd/toolhostd/internal/inbox"
	"github.com/toolhostd/toolhostd/internal/testenv"
	"github.com/toolhostd/toolhostd/internal/tooling"
	"github.com/toolhostd/toolhostd/internal/tooling/mcpclient"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// server is a real go-sdk MCP server, run in-process over in-memory
// transports, with the tools and resources the tests need and counters of
// what it saw.
type server struct {
	srv *mcp.Server

	slowStarted   chan string // the slow tool began (its "tag" argument)
	slowCancelled chan string // the slow tool saw its request cancelled
	release       chan struct{}

	subscribes   sync.Map // uri -> *atomic.Int64
	unsubscribes sync.Map // uri -> *atomic.Int64
	reads        atomic.Int64
	failSubs     atomic.Bool // SubscribeHandler fails

	slowActive, slowMax atomic.Int64 // slow tools running now, at most

	readGate    atomic.Pointer[chan struct{}] // when set, reads wait on it
	readStarted chan string

	mu      sync.Mutex
	content map[string]string
}

type echoIn struct {
	Text string `json:"text,omitempty"`
	Tag  string `json:"tag,omitempty"`
}

func counter(m *sync.Map, key string) *atomic.Int64 {
	v, _ := m.LoadOrStore(key, new(atomic.Int64))
	return v.(*atomic.Int64)
}

func newServer(subscribable bool) *server {
	s := &server{
		slowStarted:   make(chan string, 1024),
		slowCancelled: make(chan string, 1024),
		release:       make(chan struct{}),
		readStarted:   make(chan string, 1024),
		content:       map[string]string{},
	}
	opts := &mcp.ServerOptions{}
	if subscribable {
		opts.SubscribeHandler = func(_ context.Context, req *mcp.SubscribeRequest) error {
			if s.failSubs.Load() {
				return errors.New("subscriptions are off")
			}
			counter(&s.subscribes, req.Params.URI).Add(1)
			return nil
		}
		opts.UnsubscribeHandler = func(_ context.Context, req *mcp.UnsubscribeRequest) error {
			counter(&s.unsubscribes, req.Params.URI).Add(1)
			return nil
		}
	}
	s.srv = mcp.NewServer(&mcp.Implementation{Name: "pump-test", Version: "1.0.0"}, opts)
	mcp.AddTool(s.srv, &mcp.Tool{Name: "echo", Description: "echoes text"},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	mcp.AddTool(s.srv, &mcp.Tool{Name: "fail", Description: "a tool error"},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "failed: " + in.Text}}}, nil, nil
		})
	mcp.AddTool(s.srv, &mcp.Tool{Name: "slow", Description: "blocks until cancelled or released"},
		func(ctx context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			n := s.slowActive.Add(1)
			defer s.slowActive.Add(-1)
			for {
				m := s.slowMax.Load()
				if n <= m || s.slowMax.CompareAndSwap(m, n) {
					break
				}
			}
			s.slowStarted <- in.Tag
			select {
			case <-ctx.Done():
				s.slowCancelled <- in.Tag
				return nil, nil, ctx.Err()
			case <-s.release:
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "released " + in.Tag}}}, nil, nil
			}
		})
	for i := range 3 {
		s.addResource(fmt.Sprintf("test://r%d", i), "v0")
	}
	return s
}

// addResource adds (or replaces) a text resource; the server then sends
// notifications/resources/list_changed.
func (s *server) addResource(uri, text string) {
	s.setContent(uri, text)
	s.srv.AddResource(&mcp.Resource{URI: uri, Name: uri, MIMEType: "text/plain"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			s.reads.Add(1)
			if g := s.readGate.Load(); g != nil {
				s.readStarted <- req.Params.URI
				select {
				case <-*g:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			s.mu.Lock()
			text := s.content[req.Params.URI]
			s.mu.Unlock()
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: text}}}, nil
		})
}

func (s *server) setContent(uri, text string) {
	s.mu.Lock()
	s.content[uri] = text
	s.mu.Unlock()
}

// update changes uri's content and notifies its subscribers.
func (s *server) update(t testing.TB, uri, text string) {
	t.Helper()
	s.setContent(uri, text)
	if err := s.srv.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
}

// dropSessions closes every server session: the tooling reconnects.
func (s *server) dropSessions() {
	for ss := range s.srv.Sessions() {
		ss.Close()
	}
}

func cfgDur(d time.Duration) config.Duration { return config.Duration{Duration: d} }

// env is a hub serving one real mcp tooling connected to a server.
type env struct {
	srv *server
	mcp *mcpclient.Client
	ct  *countingTooling // what the hub serves: mcp, its subscriptions counted
	hub *gateway.Hub
}

// countingTooling is the real tooling with its Subscribe and Unsubscribe
// calls counted per uri: what the pump asks of the tooling, exactly. (The
// server's own counts can include the tooling's re-subscription when a
// session comes up.)
type countingTooling struct {
	tooling.Tooling
	subscribes, unsubscribes sync.Map // uri -> *atomic.Int64
	// notified counts the notifications/resources/updated the tooling has
	// handed to the hub's observer (which has taken them in), per uri.
	notified sync.Map
}

// Serve serves the tooling with o behind a counter of its ResourceUpdated
// calls.
func (c *countingTooling) Serve(ctx context.Context, o tooling.Observer) error {
	if o == nil {
		return c.Tooling.Serve(ctx, nil)
	}
	return c.Tooling.Serve(ctx, countingObserver{o, c})
}

type countingObserver struct {
	tooling.Observer
	c *countingTooling
}

func (o countingObserver) ResourceUpdated(uri string) {
	o.Observer.ResourceUpdated(uri)
	counter(&o.c.notified, uri).Add(1)
}

func (c *countingTooling) Subscribe(ctx context.Context, uri string) error {
	counter(&c.subscribes, uri).Add(1)
	return c.Tooling.Subscribe(ctx, uri)
}

func (c *countingTooling) Unsubscribe(ctx context.Context, uri string) error {
	counter(&c.unsubscribes, uri).Add(1)
	return c.Tooling.Unsubscribe(ctx, uri)
}

type envOptions struct {
	limits      gateway.Limits
	log         *zap.Logger
	noSubscribe bool // the server lacks resources.subscribe
}

func newEnv(t testing.TB, o envOptions) *env {
	t.Helper()
	s := newServer(!o.noSubscribe)
	log := o.log
	if log == nil {
		log = zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel))
	}
	m := memTooling(t, "mem", s, log, 5*time.Second)
	// The tooling allows 64 calls at once: the pump's own limit is what the
	// tests see.
	lim := o.limits
	if lim.MaxConcurrentCalls == 0 {
		lim.MaxConcurrentCalls = 64
	}
	ct := &countingTooling{Tooling: m}
	hub := gateway.NewHub([]gateway.Entry{{Tooling: ct, Limits: lim}}, log)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- hub.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("Hub.Serve did not return after cancel")
		}
	})
	testenv.Eventually(t, 10*time.Second, "a session", func() bool { return m.Status().Connected })
	return &env{srv: s, mcp: m, ct: ct, hub: hub}
}

// memTooling is a real mcp tooling called name connected to s over
// in-memory transports (a fresh pair per connection attempt), allowing 64
// calls at once, waiting at most connect for a session. Nothing serves it
// yet.
func memTooling(t testing.TB, name string, s *server, log *zap.Logger, connect time.Duration) *mcpclient.Client {
	t.Helper()
	cfg := &config.Tooling{
		Name: name, Kind: "mcp", Transport: "stdio", Command: "unused-with-a-dialer",
		ConnectTimeout:     cfgDur(connect),
		CallTimeout:        cfgDur(30 * time.Second),
		MaxConcurrentCalls: 64,
		Restart:            config.Restart{InitialBackoff: cfgDur(10 * time.Millisecond), MaxBackoff: cfgDur(100 * time.Millisecond), HealthyAfter: cfgDur(time.Second)},
	}
	m, err := mcpclient.New(cfg, log, mcpclient.Options{Dialer: testenv.InMemoryDialer(s.srv)})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// agent makes an agent with its own inbox and a handle on the tooling.
func (e *env) agent(t testing.TB, name string, capacity int) (*contract.Agent, *contract.Handle, *inbox.Inbox) {
	t.Helper()
	in := inbox.New(capacity)
	a := contract.NewAgent(e.hub, name, in, contract.Options{})
	t.Cleanup(a.Close)
	h, err := a.Get("mem")
	if err != nil {
		t.Fatal(err)
	}
	return a, h, in
}

func dur(d time.Duration) *time.Duration { return &d }

// recv waits up to 10s for the next envelope.
func recv(t testing.TB, in *inbox.Inbox) inbox.Envelope {
	t.Helper()
	env, ok := in.Recv(context.Background(), dur(10*time.Second))
	if !ok {
		t.Fatal("no envelope within 10s")
	}
	return env
}

// quiet asserts that nothing arrives within d.
func quiet(t testing.TB, in *inbox.Inbox, d time.Duration) {
	t.Helper()
	if env, ok := in.Recv(context.Background(), &d); ok {
		t.Fatalf("unexpected envelope %+v", env)
	}
}

func codeOf(t testing.TB, err error) tooling.ErrorCode {
	t.Helper()
	var te *tooling.Error
	if !errors.As(err, &te) {
		t.Fatalf("error %v (%T) is not a *tooling.Error", err, err)
	}
	return te.Code
}

// resultText is the text of the first content of a tool-result value.
func resultText(t testing.TB, r tooling.ToolResult) (string, bool) {
	t.Helper()
	var v struct {
		Content []struct {
			Text string `json:"text,omitempty"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal([]byte(r.Value), &v); err != nil {
		t.Fatalf("tool-result value %q: %v", r.Value, err)
	}
	if len(v.Content) == 0 {
		t.Fatalf("tool-result value %q has no content", r.Value)
	}
	return v.Content[0].Text, v.IsError
}
