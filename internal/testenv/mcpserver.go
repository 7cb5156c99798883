package testenv

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCPServerOptions configures NewMCPServer.
type MCPServerOptions struct {
	// Name and Version are the server's implementation ("testenv",
	// "1.0.0" when empty).
	Name, Version string
	// PageSize is the size of the server's list pages (the go-sdk's
	// default when 0): small pages make a client follow the cursors.
	PageSize int
	// Subscribable makes the server handle resources/subscribe and
	// resources/unsubscribe (and so advertise resources.subscribe),
	// counting them per uri.
	Subscribable bool
	// OnSubscribe, when set, runs in each resources/subscribe the server
	// has not refused (see RefuseSubscribe) before it is counted; its
	// error fails the subscribe.
	OnSubscribe func(ctx context.Context, uri string) error
	// SlowTool, when set, names a tool that blocks until its request is
	// cancelled or ReleaseSlow is called (and at most a minute, so that
	// a failed test does not hang its cleanup).
	SlowTool string
	// GateTool, when set, names a tool that blocks until the gate of its
	// tag is opened (OpenGate) or its request is cancelled; its result is
	// "passed <tag>".
	GateTool string
}

// ToolIn is the input of the MCPServer's tools; every field is optional.
type ToolIn struct {
	Text    string `json:"text,omitempty"`
	Message string `json:"message,omitempty"` // the example agents' name for text
	Tag     string `json:"tag,omitempty"`     // names a slow or gated call
}

// MCPServer is a real go-sdk MCP server for tests, run in-process (Dialer,
// DirectSession) or over any transport Server can serve, with a record of
// what it saw. It always serves the tools "echo" (its result is the text
// and message of its input) and "fail" (a tool error, "failed: <text>"),
// plus the SlowTool and GateTool its options name; a suite adds its own
// odd tools and resources to Server. The zero value is not usable: make
// one with NewMCPServer.
type MCPServer struct {
	// Server is the go-sdk server.
	Server *mcp.Server

	requests, calls        counters // by method; tools/call by tool name
	subscribes, unsubs     counters // by uri
	reads                  counters // by uri (AddResource's resources)
	totalReads             atomic.Int64
	refused                sync.Map // uri ("" for every uri) -> true
	slowActive, slowMax    atomic.Int64
	slowStarted, slowEnded sync.Map // tag -> *signal
	slowStarts, slowEnds   chan string
	releaseSlow            chan struct{}
	releaseSlowOnce        sync.Once
	gates                  sync.Map // tag -> *Gate

	mu        sync.Mutex
	content   map[string]string
	readHold  chan struct{} // when set, reads wait for it to close
	readStart chan string
}

// streamSize is how many unread tags SlowStarts, SlowCancels and
// ReadStarts keep; later ones are dropped.
const streamSize = 1024

// NewMCPServer makes a server as o says.
func NewMCPServer(o MCPServerOptions) *MCPServer {
	s := &MCPServer{
		slowStarts:  make(chan string, streamSize),
		slowEnds:    make(chan string, streamSize),
		readStart:   make(chan string, streamSize),
		releaseSlow: make(chan struct{}),
		content:     map[string]string{},
	}
	impl := &mcp.Implementation{Name: o.Name, Version: o.Version}
	if impl.Name == "" {
		impl.Name = "testenv"
	}
	if impl.Version == "" {
		impl.Version = "1.0.0"
	}
	opts := &mcp.ServerOptions{PageSize: o.PageSize}
	if o.Subscribable {
		opts.SubscribeHandler = func(ctx context.Context, req *mcp.SubscribeRequest) error {
			uri := req.Params.URI
			if s.isRefused(uri) {
				return errors.New("subscriptions to this uri are off")
			}
			if o.OnSubscribe != nil {
				if err := o.OnSubscribe(ctx, uri); err != nil {
					return err
				}
			}
			s.subscribes.get(uri).Add(1)
			return nil
		}
		opts.UnsubscribeHandler = func(_ context.Context, req *mcp.UnsubscribeRequest) error {
			s.unsubs.get(req.Params.URI).Add(1)
			return nil
		}
	}
	s.Server = mcp.NewServer(impl, opts)
	s.Server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			s.requests.get(method).Add(1)
			if call, ok := req.(*mcp.CallToolRequest); ok && call.Params != nil {
				s.calls.get(call.Params.Name).Add(1)
			}
			return next(ctx, method, req)
		}
	})
	s.addTools(o)
	return s
}

func (s *MCPServer) addTools(o MCPServerOptions) {
	text := func(t string) []mcp.Content { return []mcp.Content{&mcp.TextContent{Text: t}} }
	mcp.AddTool(s.Server, &mcp.Tool{Name: "echo", Description: "Echoes its text.\nA message is echoed after it."},
		func(_ context.Context, _ *mcp.CallToolRequest, in ToolIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: text(in.Text + in.Message)}, nil, nil
		})
	mcp.AddTool(s.Server, &mcp.Tool{Name: "fail", Description: "a tool error (isError)"},
		func(_ context.Context, _ *mcp.CallToolRequest, in ToolIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{IsError: true, Content: text("failed: " + in.Text)}, nil, nil
		})
	if o.SlowTool != "" {
		mcp.AddTool(s.Server, &mcp.Tool{Name: o.SlowTool, Description: "blocks until cancelled or released"},
			func(ctx context.Context, _ *mcp.CallToolRequest, in ToolIn) (*mcp.CallToolResult, any, error) {
				n := s.slowActive.Add(1)
				defer s.slowActive.Add(-1)
				for {
					if m := s.slowMax.Load(); n <= m || s.slowMax.CompareAndSwap(m, n) {
						break
					}
				}
				signalOf(&s.slowStarted, in.Tag).fire()
				offer(s.slowStarts, in.Tag)
				select {
				case <-ctx.Done():
					signalOf(&s.slowEnded, in.Tag).fire()
					offer(s.slowEnds, in.Tag)
					return nil, nil, ctx.Err()
				case <-s.releaseSlow:
					return &mcp.CallToolResult{Content: text("released " + in.Tag)}, nil, nil
				case <-time.After(time.Minute):
					return nil, nil, errors.New("slow: not cancelled within a minute")
				}
			})
	}
	if o.GateTool != "" {
		mcp.AddTool(s.Server, &mcp.Tool{Name: o.GateTool, Description: "blocks until the test opens its tag's gate"},
			func(ctx context.Context, _ *mcp.CallToolRequest, in ToolIn) (*mcp.CallToolResult, any, error) {
				g := s.Gate(in.Tag)
				g.Enter()
				defer g.Leave()
				select {
				case <-g.Released():
					return &mcp.CallToolResult{Content: text("passed " + in.Tag)}, nil, nil
				case <-ctx.Done():
					return nil, nil, ctx.Err()
				}
			})
	}
}

// Dialer connects each attempt to the server over a fresh pair of
// in-memory transports: an mcpclient.Dialer.
func (s *MCPServer) Dialer() func(context.Context) (mcp.Transport, error) {
	return InMemoryDialer(s.Server)
}

// DropSessions closes every live server session (the server going away:
// a client reconnects).
func (s *MCPServer) DropSessions() {
	for ss := range s.Server.Sessions() {
		ss.Close()
	}
}

// Reset forgets what the server saw and the gates, slow-call signals and
// refusals (a server shared by a suite's tests, so that each starts
// afresh and -count=N works). Resources and their content stay.
func (s *MCPServer) Reset() {
	for _, c := range []*counters{&s.requests, &s.calls, &s.subscribes, &s.unsubs, &s.reads} {
		c.m.Clear()
	}
	s.totalReads.Store(0)
	s.refused.Clear()
	s.slowStarted.Clear()
	s.slowEnded.Clear()
	s.gates.Clear()
	for _, ch := range []chan string{s.slowStarts, s.slowEnds, s.readStart} {
		drain(ch)
	}
}

// Requests is how many requests of method (e.g. "tools/list") the server
// has received.
func (s *MCPServer) Requests(method string) int64 { return s.requests.get(method).Load() }

// Calls is how many tools/call of tool the server has received.
func (s *MCPServer) Calls(tool string) int64 { return s.calls.get(tool).Load() }

// ---- resources and subscriptions ----

// AddResource adds (or replaces) the text/plain resource uri, whose
// content is text until SetContent or Update changes it; its reads are
// counted. The server sends notifications/resources/list_changed.
func (s *MCPServer) AddResource(uri, text string) {
	s.SetContent(uri, text)
	s.Server.AddResource(&mcp.Resource{URI: uri, Name: uri, MIMEType: "text/plain"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			s.reads.get(uri).Add(1)
			s.totalReads.Add(1)
			s.mu.Lock()
			hold := s.readHold
			s.mu.Unlock()
			if hold != nil {
				offer(s.readStart, uri)
				select {
				case <-hold:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			s.mu.Lock()
			text := s.content[uri]
			s.mu.Unlock()
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: text}}}, nil
		})
}

// SetContent changes the content of AddResource's uri, silently.
func (s *MCPServer) SetContent(uri, text string) {
	s.mu.Lock()
	s.content[uri] = text
	s.mu.Unlock()
}

// Update changes uri's content and sends notifications/resources/updated
// to its subscribers.
func (s *MCPServer) Update(t testing.TB, uri, text string) {
	t.Helper()
	s.SetContent(uri, text)
	if err := s.Server.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
}

// Reads is how many reads of AddResource's uri the server has begun.
func (s *MCPServer) Reads(uri string) int64 { return s.reads.get(uri).Load() }

// TotalReads is the sum of Reads over every uri.
func (s *MCPServer) TotalReads() int64 { return s.totalReads.Load() }

// HoldReads makes the reads of AddResource's resources announce their uri
// on ReadStarts and wait; the returned func stops holding and lets the
// waiting reads go on.
func (s *MCPServer) HoldReads() (release func()) {
	hold := make(chan struct{})
	s.mu.Lock()
	s.readHold = hold
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		s.readHold = nil
		s.mu.Unlock()
		close(hold)
	}
}

// ReadStarts yields the uri of each read held by HoldReads.
func (s *MCPServer) ReadStarts() <-chan string { return s.readStart }

// Subscribes and Unsubscribes are how many resources/subscribe (that
// succeeded) and resources/unsubscribe of uri the server has handled.
func (s *MCPServer) Subscribes(uri string) int64 { return s.subscribes.get(uri).Load() }

// Unsubscribes: see Subscribes.
func (s *MCPServer) Unsubscribes(uri string) int64 { return s.unsubs.get(uri).Load() }

// RefuseSubscribe makes resources/subscribe of uri ("" for every uri)
// fail while refuse holds.
func (s *MCPServer) RefuseSubscribe(uri string, refuse bool) {
	if refuse {
		s.refused.Store(uri, true)
	} else {
		s.refused.Delete(uri)
	}
}

func (s *MCPServer) isRefused(uri string) bool {
	_, one := s.refused.Load(uri)
	_, all := s.refused.Load("")
	return one || all
}

// ---- slow calls and gates ----

// SlowStarted is closed once a SlowTool call tagged tag has begun;
// SlowCancelled once one has seen its request cancelled.
func (s *MCPServer) SlowStarted(tag string) <-chan struct{} { return signalOf(&s.slowStarted, tag).ch }

// SlowCancelled: see SlowStarted.
func (s *MCPServer) SlowCancelled(tag string) <-chan struct{} { return signalOf(&s.slowEnded, tag).ch }

// SlowStarts yields the tag of each SlowTool call as it begins;
// SlowCancels that of each one cancelled.
func (s *MCPServer) SlowStarts() <-chan string { return s.slowStarts }

// SlowCancels: see SlowStarts.
func (s *MCPServer) SlowCancels() <-chan string { return s.slowEnds }

// ReleaseSlow ends every SlowTool call, now and later, with the result
// "released <tag>".
func (s *MCPServer) ReleaseSlow() { s.releaseSlowOnce.Do(func() { close(s.releaseSlow) }) }

// SlowActive is how many SlowTool calls are under way; SlowMax the most
// there have been at once.
func (s *MCPServer) SlowActive() int64 { return s.slowActive.Load() }

// SlowMax: see SlowActive.
func (s *MCPServer) SlowMax() int64 { return s.slowMax.Load() }

// Gate is a point a server handler waits at until the test opens it: the
// handler calls Enter, waits for Released, then Leave; the test waits for
// Entered, calls Release and can wait for Done.
type Gate struct {
	entered, released, done *signal
}

// Gate is the gate named tag (made on first use, forgotten by Reset).
func (s *MCPServer) Gate(tag string) *Gate {
	v, _ := s.gates.LoadOrStore(tag, &Gate{entered: newSignal(), released: newSignal(), done: newSignal()})
	return v.(*Gate)
}

// AwaitGate waits up to 20s for a call to enter the gate of tag.
func (s *MCPServer) AwaitGate(t testing.TB, tag string) {
	t.Helper()
	Recv(t, s.Gate(tag).Entered(), 20*time.Second, "a call to enter gate "+tag)
}

// OpenGate releases the gate of tag.
func (s *MCPServer) OpenGate(tag string) { s.Gate(tag).Release() }

// Enter marks the gate entered (the handler's side).
func (g *Gate) Enter() { g.entered.fire() }

// Entered is closed once the gate is entered.
func (g *Gate) Entered() <-chan struct{} { return g.entered.ch }

// Release opens the gate (the test's side).
func (g *Gate) Release() { g.released.fire() }

// Released is closed once the gate is open.
func (g *Gate) Released() <-chan struct{} { return g.released.ch }

// Leave marks the handler gone past the gate.
func (g *Gate) Leave() { g.done.fire() }

// Done is closed once the handler has left.
func (g *Gate) Done() <-chan struct{} { return g.done.ch }

// ---- small parts ----

type counters struct{ m sync.Map } // key -> *atomic.Int64

func (c *counters) get(key string) *atomic.Int64 {
	v, _ := c.m.LoadOrStore(key, new(atomic.Int64))
	return v.(*atomic.Int64)
}

func newSignal() *signal { return &signal{ch: make(chan struct{})} }

// offer sends v on ch unless ch is full.
func offer(ch chan string, v string) {
	select {
	case ch <- v:
	default:
	}
}

func drain(ch chan string) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}
