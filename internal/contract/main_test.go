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

	"go.opentelemetry.io/otel/trace"
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

// newServer is the suite's MCP server: the tools echo, fail and slow, the
// resources test://r0, r1 and r2 (content "v0"), resources/subscribe when
// subscribable.
func newServer(subscribable bool) *testenv.MCPServer {
	s := testenv.NewMCPServer(testenv.MCPServerOptions{Name: "pump-test", Subscribable: subscribable, SlowTool: "slow"})
	for i := range 3 {
		s.AddResource(fmt.Sprintf("test://r%d", i), "v0")
	}
	return s
}

func counter(m *sync.Map, key string) *atomic.Int64 {
	v, _ := m.LoadOrStore(key, new(atomic.Int64))
	return v.(*atomic.Int64)
}

func cfgDur(d time.Duration) config.Duration { return config.Duration{Duration: d} }

// env is a hub serving one real mcp tooling connected to a server.
type env struct {
	srv *testenv.MCPServer
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
	calls    atomic.Int64 // the tools/call made
}

// CallTool counts the call and makes it.
func (c *countingTooling) CallTool(ctx context.Context, name string, args json.RawMessage) (tooling.ToolResult, error) {
	c.calls.Add(1)
	return c.Tooling.CallTool(ctx, name, args)
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
	// tracer, if set, traces the tooling's MCP requests.
	tracer trace.TracerProvider
}

func newEnv(t testing.TB, o envOptions) *env {
	t.Helper()
	s := newServer(!o.noSubscribe)
	log := o.log
	if log == nil {
		log = zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel))
	}
	m := memToolingWith(t, "mem", s, log, 5*time.Second, mcpclient.Options{Tracer: o.tracer})
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
func memTooling(t testing.TB, name string, s *testenv.MCPServer, log *zap.Logger, connect time.Duration) *mcpclient.Client {
	t.Helper()
	return memToolingWith(t, name, s, log, connect, mcpclient.Options{})
}

// memToolingWith is memTooling with o (its Dialer is s's).
func memToolingWith(t testing.TB, name string, s *testenv.MCPServer, log *zap.Logger, connect time.Duration, o mcpclient.Options) *mcpclient.Client {
	t.Helper()
	cfg := &config.Tooling{
		Name:           name,
		Kind:           "mcp",
		Transport:      "stdio",
		Restart:        config.Restart{InitialBackoff: cfgDur(10 * time.Millisecond), MaxBackoff: cfgDur(100 * time.Millisecond), HealthyAfter: cfgDur(time.Second)},
		ToolingProcess: config.ToolingProcess{Command: "unused-with-a-dialer"},
		ToolingCalls:   config.ToolingCalls{ConnectTimeout: cfgDur(connect), CallTimeout: cfgDur(30 * time.Second), MaxConcurrentCalls: 64},
	}
	o.Dialer = s.Dialer()
	m, err := mcpclient.New(cfg, log, o)
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
