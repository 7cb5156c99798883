package tooling

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/thejerf/suture/v4"
	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/config"
)

// KindMCP is the kind of the MCP implementation of Tooling.
const KindMCP = "mcp"

// Defaults for the zero values of a tooling config (config.Parse fills the
// same ones).
const (
	DefaultConnectTimeout     = 10 * time.Second
	DefaultCallTimeout        = 60 * time.Second
	DefaultMaxConcurrentCalls = 16
	DefaultInitialBackoff     = 250 * time.Millisecond
	DefaultMaxBackoff         = 30 * time.Second
	DefaultHealthyAfter       = 60 * time.Second

	// DefaultPingInterval and DefaultPingTimeout are the liveness check:
	// a ping every interval; no answer within the timeout ends the session.
	DefaultPingInterval = 15 * time.Second
	DefaultPingTimeout  = 5 * time.Second
	// DefaultTerminateDuration is how long closing a stdio server waits
	// after closing its stdin before SIGTERM, and after SIGTERM before
	// SIGKILL.
	DefaultTerminateDuration = time.Second
)

// DefaultProtocolVersion is the MCP protocol version the client asks for.
// go-sdk v1.8.0 would otherwise ask for 2026-07-28 (stateless, SEP-2575),
// where Subscribe returns before the server has made the subscription
// (subscriptions/listen is not awaited) and list results are served from
// client-side TTL caches; 2025-11-25 keeps request/response semantics for
// resources/subscribe and is what the npm servers speak.
const DefaultProtocolVersion = "2025-11-25"

// clientImpl is how toolhostd introduces itself to servers.
var clientImpl = &mcp.Implementation{Name: "toolhostd", Version: "0.1.0"}

type options struct {
	dial         Dialer
	pingInterval time.Duration
	pingTimeout  time.Duration
	terminate    time.Duration
	protocol     string
}

// Option tunes an MCP tooling beyond its config.
type Option func(*options)

// WithDialer replaces the transport the config describes (command or url)
// by d, called once per connection attempt.
func WithDialer(d Dialer) Option { return func(o *options) { o.dial = d } }

// WithLiveness sets the liveness check: a ping every interval that must be
// answered within timeout, else the session is torn down. interval <= 0
// disables it.
func WithLiveness(interval, timeout time.Duration) Option {
	return func(o *options) { o.pingInterval, o.pingTimeout = interval, timeout }
}

// WithProtocolVersion sets the MCP protocol version asked for at
// initialization (default DefaultProtocolVersion).
func WithProtocolVersion(v string) Option { return func(o *options) { o.protocol = v } }

// WithTerminateDuration sets how long closing a stdio server waits before
// each escalation (stdin closed → SIGTERM → SIGKILL).
func WithTerminateDuration(d time.Duration) Option {
	return func(o *options) { o.terminate = d }
}

// Status is a snapshot of an MCP tooling's session.
type Status struct {
	Connected     bool
	Restarts      int // reconnection attempts since Serve started
	LastError     string
	ServerName    string
	ServerVersion string
	InFlight      int // requests in flight now
}

// MCP is the `mcp` kind: one go-sdk ClientSession shared by every caller,
// kept alive by Serve.
type MCP struct {
	name           string
	cfg            *config.Tooling
	connectTimeout time.Duration
	callTimeout    time.Duration
	initialBackoff time.Duration
	maxBackoff     time.Duration
	healthyAfter   time.Duration
	opts           options
	log            *zap.Logger
	client         *mcp.Client
	slots          chan struct{}
	inFlight       atomic.Int64
	observer       atomic.Pointer[observerBox]

	mu       sync.Mutex
	cur      *session      // nil while no session is up
	ready    chan struct{} // closed while cur != nil
	lastErr  error
	secrets  []redaction // expanded secrets of the current transport (redact)
	restarts int
	tools    []Tool // cache, valid while toolsOK
	toolsOK  bool
	toolsGen uint64 // bumped on every invalidation

	// subMu serializes Subscribe, Unsubscribe and re-subscription.
	subMu sync.Mutex
	subs  map[string]*session // live subscriptions, by the session they were made on
}

type observerBox struct{ o Observer }

// session is one live ClientSession.
type session struct {
	cs      *mcp.ClientSession
	init    *mcp.InitializeResult
	ctx     context.Context // cancelled with a *sessionLostError when it ends
	cancel  context.CancelCauseFunc
	refresh chan struct{} // tools/list_changed seen

	bgMu     sync.Mutex
	bgClosed bool           // set before bg is waited for: no more spawns
	bg       sync.WaitGroup // requests that outlive their caller (abandoned subscribes)
}

// spawn runs f on a goroutine owned by the session; false (f not run) once
// the session is winding down.
func (s *session) spawn(f func()) bool {
	s.bgMu.Lock()
	defer s.bgMu.Unlock()
	if s.bgClosed {
		return false
	}
	s.bg.Go(f)
	return true
}

// closeBackground waits for the session's goroutines; it follows the end
// of s.ctx, which bounds each of them.
func (s *session) closeBackground() {
	s.bgMu.Lock()
	s.bgClosed = true
	s.bgMu.Unlock()
	s.bg.Wait()
}

var _ Tooling = (*MCP)(nil)

// NewMCP makes the MCP tooling for cfg. It does not connect: Serve does.
func NewMCP(cfg *config.Tooling, log *zap.Logger, opts ...Option) (*MCP, error) {
	if cfg == nil {
		return nil, errors.New("nil tooling config")
	}
	if log == nil {
		log = zap.NewNop()
	}
	c := *cfg
	m := &MCP{
		name:           c.Name,
		cfg:            &c,
		connectTimeout: orDefault(c.ConnectTimeout.Duration, DefaultConnectTimeout),
		callTimeout:    orDefault(c.CallTimeout.Duration, DefaultCallTimeout),
		initialBackoff: orDefault(c.Restart.InitialBackoff.Duration, DefaultInitialBackoff),
		maxBackoff:     orDefault(c.Restart.MaxBackoff.Duration, DefaultMaxBackoff),
		healthyAfter:   orDefault(c.Restart.HealthyAfter.Duration, DefaultHealthyAfter),
		opts: options{
			pingInterval: DefaultPingInterval,
			pingTimeout:  DefaultPingTimeout,
			terminate:    DefaultTerminateDuration,
			protocol:     DefaultProtocolVersion,
		},
		log:   log.Named("tooling").With(zap.String("tooling", c.Name)),
		ready: make(chan struct{}),
		subs:  make(map[string]*session),
	}
	if m.maxBackoff < m.initialBackoff {
		m.maxBackoff = m.initialBackoff
	}
	for _, o := range opts {
		o(&m.opts)
	}
	if m.opts.pingTimeout <= 0 {
		m.opts.pingTimeout = DefaultPingTimeout
	}
	n := c.MaxConcurrentCalls
	if n <= 0 {
		n = DefaultMaxConcurrentCalls
	}
	m.slots = make(chan struct{}, n)
	m.client = mcp.NewClient(clientImpl, &mcp.ClientOptions{
		Logger:                     slog.New(&slogToZap{log: m.log.Named("go-sdk")}),
		ToolListChangedHandler:     m.onToolListChanged,
		ResourceListChangedHandler: m.onResourceListChanged,
		ResourceUpdatedHandler:     m.onResourceUpdated,
	})
	return m, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Kind returns "mcp".
func (m *MCP) Kind() string { return KindMCP }

// Name returns the configured name.
func (m *MCP) Name() string { return m.name }

// SetObserver installs the receiver of server notifications (nil: none).
func (m *MCP) SetObserver(o Observer) {
	if o == nil {
		m.observer.Store(nil)
		return
	}
	m.observer.Store(&observerBox{o})
}

func (m *MCP) obs() Observer {
	if b := m.observer.Load(); b != nil {
		return b.o
	}
	return nil
}

// Status returns a snapshot of the session.
func (m *MCP) Status() Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := Status{Connected: m.cur != nil, Restarts: m.restarts, InFlight: int(m.inFlight.Load())}
	if m.lastErr != nil {
		st.LastError = m.lastErr.Error()
	}
	if m.cur != nil && m.cur.init != nil && m.cur.init.ServerInfo != nil {
		st.ServerName = m.cur.init.ServerInfo.Name
		st.ServerVersion = m.cur.init.ServerInfo.Version
	}
	return st
}

// ---- operations ----

// acquire returns the live session, waiting for one at most the connect
// timeout.
func (m *MCP) acquire(ctx context.Context, op string) (*session, error) {
	var timeout <-chan time.Time
	for {
		m.mu.Lock()
		s, ready := m.cur, m.ready
		m.mu.Unlock()
		if s != nil {
			if s.ctx.Err() == nil {
				return s, nil
			}
			// Ended but still current: take it out so ready is renewed.
			m.endSession(s, context.Cause(s.ctx))
			continue
		}
		if timeout == nil {
			t := time.NewTimer(m.connectTimeout)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-ready:
		case <-ctx.Done():
			return nil, mapError(ctx, ctx, op, ctx.Err())
		case <-timeout:
			m.mu.Lock()
			lastErr := m.lastErr
			m.mu.Unlock()
			if lastErr != nil {
				return nil, Errorf(CodeUnavailable, "%s: no session within %v; last connection error: %v", op, m.connectTimeout, lastErr)
			}
			return nil, Errorf(CodeUnavailable, "%s: no session within %v", op, m.connectTimeout)
		}
	}
}

// notSentError is a request go-sdk refused to send, or the server refused
// to run, because the connection was closing: it ran nowhere, so it may be
// made again on the next session.
type notSentError struct{ err *Error }

func (e *notSentError) Error() string { return e.err.Error() }

// run makes one request on s, bounded by ctx, the call timeout and the
// life of s, and maps its error.
func (m *MCP) run(ctx context.Context, s *session, op string, f func(context.Context, *mcp.ClientSession) error) error {
	opCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(s.ctx, func() { cancel(context.Cause(s.ctx)) })
	defer stop()
	tctx, tcancel := context.WithTimeoutCause(opCtx, m.callTimeout, errCallTimeout)
	defer tcancel()
	m.inFlight.Add(1)
	defer m.inFlight.Add(-1)
	err := f(tctx, s.cs)
	if err == nil {
		return nil
	}
	err = m.redact(err)
	if tctx.Err() == nil && errors.Is(err, mcp.ErrConnectionClosed) {
		// Either the connection is closing (the session's reader ends the
		// session when it really is) or the server answered with one of
		// the closing error codes: the request was not carried out, and
		// the session is not torn down on the strength of an error code.
		return &notSentError{mapError(ctx, tctx, op, err)}
	}
	return mapError(ctx, tctx, op, err)
}

// do is acquire then run. A request answered "connection closed" is made
// again on the next session (at most twice more) only when its session then
// really ends: go-sdk reports a request it refused to send on a closing
// connection that way, and such a request never reached the server, so
// even a tool call may be made again. A server can also answer with the
// jsonrpc closing codes while staying up; then nothing is repeated.
func (m *MCP) do(ctx context.Context, op string, f func(context.Context, *mcp.ClientSession) error) error {
	for attempt := 0; ; attempt++ {
		s, err := m.acquire(ctx, op)
		if err != nil {
			return err
		}
		err = m.run(ctx, s, op, f)
		var ns *notSentError
		if !errors.As(err, &ns) {
			return err
		}
		if attempt == 2 || !sessionEnds(s) {
			return ns.err
		}
	}
}

// ListTools returns every tool, from the cache while it is valid (it is
// dropped on tools/list_changed and on every new session).
func (m *MCP) ListTools(ctx context.Context) ([]Tool, error) {
	m.mu.Lock()
	if m.toolsOK {
		t := slices.Clone(m.tools)
		m.mu.Unlock()
		return t, nil
	}
	m.mu.Unlock()
	for attempt := 0; ; attempt++ {
		s, err := m.acquire(ctx, "tools/list")
		if err != nil {
			return nil, err
		}
		tools, err := m.fetchToolsOn(ctx, s)
		var ns *notSentError
		if errors.As(err, &ns) && attempt < 2 {
			continue
		}
		if err != nil {
			return nil, plainError(err)
		}
		return slices.Clone(tools), nil
	}
}

// fetchTools lists every tool on s and caches the list unless it was
// invalidated meanwhile.
func (m *MCP) fetchTools(ctx context.Context, s *session) ([]Tool, error) {
	tools, err := m.fetchToolsOn(ctx, s)
	return tools, plainError(err)
}

// plainError unwraps a notSentError for callers that do not retry.
func plainError(err error) error {
	var ns *notSentError
	if errors.As(err, &ns) {
		return ns.err
	}
	return err
}

func (m *MCP) fetchToolsOn(ctx context.Context, s *session) ([]Tool, error) {
	m.mu.Lock()
	gen := m.toolsGen
	m.mu.Unlock()
	var out []Tool
	err := m.run(ctx, s, "tools/list", func(ctx context.Context, cs *mcp.ClientSession) error {
		out = out[:0]
		for t, err := range cs.Tools(ctx, nil) {
			if err != nil {
				return err
			}
			out = append(out, convertTool(t))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []Tool{}
	}
	m.mu.Lock()
	if gen == m.toolsGen && m.cur == s {
		m.tools, m.toolsOK = out, true
	}
	m.mu.Unlock()
	return out, nil
}

func convertTool(t *mcp.Tool) Tool {
	out := Tool{Name: t.Name, InputSchema: `{"type":"object"}`}
	if t.Description != "" {
		d := t.Description
		out.Description = &d
	}
	if t.InputSchema != nil {
		if b, err := json.Marshal(t.InputSchema); err == nil {
			out.InputSchema = string(b)
		}
	}
	return out
}

// CallTool calls tool name with args (a JSON object; empty means {}). An
// MCP result with isError true is a success here. It is never retried.
func (m *MCP) CallTool(ctx context.Context, name string, args json.RawMessage) (ToolResult, error) {
	if name == "" {
		return ToolResult{}, Errorf(CodeInvalidArgument, "tools/call: empty tool name")
	}
	a := bytes.TrimSpace(args)
	if len(a) == 0 {
		a = []byte("{}")
	}
	if a[0] != '{' || !json.Valid(a) {
		return ToolResult{}, Errorf(CodeInvalidArgument, "tools/call %q: arguments must be a JSON object", name)
	}
	op := fmt.Sprintf("tools/call %q", name)
	var res *mcp.CallToolResult
	// A call is repeated only if it never reached the server (see do).
	err := m.do(ctx, op, func(ctx context.Context, cs *mcp.ClientSession) error {
		select {
		case m.slots <- struct{}{}:
			defer func() { <-m.slots }()
		case <-ctx.Done():
			return ctx.Err()
		}
		var err error
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(a)})
		return err
	})
	if err != nil {
		return ToolResult{}, err
	}
	v, err := json.Marshal(res)
	if err != nil {
		return ToolResult{}, Errorf(CodeInternal, "%s: encoding the result: %v", op, err)
	}
	return ToolResult{Name: name, Arguments: string(a), Value: string(v)}, nil
}

// ListResources returns every resource, following pagination.
func (m *MCP) ListResources(ctx context.Context) ([]ResourceInfo, error) {
	out := []ResourceInfo{}
	err := m.do(ctx, "resources/list", func(ctx context.Context, cs *mcp.ClientSession) error {
		out = out[:0]
		for r, err := range cs.Resources(ctx, nil) {
			if err != nil {
				return err
			}
			ri := ResourceInfo{URI: r.URI, Name: r.Name}
			if r.Description != "" {
				d := r.Description
				ri.Description = &d
			}
			if r.MIMEType != "" {
				mt := r.MIMEType
				ri.MIMEType = &mt
			}
			out = append(out, ri)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ReadResource reads uri and applies the contract's encoding rule
// (EncodeContent) to the content whose uri is uri, else the first.
func (m *MCP) ReadResource(ctx context.Context, uri string) (ResourceContent, error) {
	op := fmt.Sprintf("resources/read %q", uri)
	var res *mcp.ReadResourceResult
	err := m.do(ctx, op, func(ctx context.Context, cs *mcp.ClientSession) error {
		var err error
		res, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		return err
	})
	if err != nil {
		return ResourceContent{}, err
	}
	c := SelectContent(uri, res.Contents)
	if c == nil {
		return ResourceContent{}, Errorf(CodeProtocol, "%s: the server returned no contents", op)
	}
	return EncodeContent(c), nil
}

func supportsSubscribe(s *session) bool {
	return s != nil && s.init != nil && s.init.Capabilities != nil &&
		s.init.Capabilities.Resources != nil && s.init.Capabilities.Resources.Subscribe
}

// SupportsSubscribe reports whether the current session's server offers
// resources.subscribe; false while no session is up.
func (m *MCP) SupportsSubscribe() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return supportsSubscribe(m.cur)
}

// Subscribe makes the MCP subscription to uri and keeps it across
// reconnects until Unsubscribe.
func (m *MCP) Subscribe(ctx context.Context, uri string) error {
	m.subMu.Lock()
	defer m.subMu.Unlock()
	op := fmt.Sprintf("resources/subscribe %q", uri)
	s, err := m.acquire(ctx, op)
	if err != nil {
		return err
	}
	// The request is not cancelled with the caller: a server may complete
	// a subscribe after the caller gave up (cancellation is only advisory),
	// and nobody would ever withdraw that subscription. So the request runs
	// on its own, bounded by the call timeout and the session; if the
	// caller leaves first, a subscription that still succeeds is withdrawn.
	done := make(chan error, 1)
	if !s.spawn(func() { done <- m.subscribeOn(context.WithoutCancel(ctx), s, op, uri) }) {
		return Errorf(CodeUnavailable, "%s: the session is closing", op)
	}
	select {
	case err := <-done:
		if err != nil {
			return plainError(err)
		}
		m.subs[uri] = s
		return nil
	case <-ctx.Done():
		// The caller leaves; done is buffered, so the request's goroutine
		// ends either way. If the session is closing, it is gone with it.
		s.spawn(func() { m.withdrawAbandoned(s, uri, <-done) })
		return mapError(ctx, ctx, op, ctx.Err())
	}
}

// withdrawAbandoned unsubscribes from uri on s after a subscribe whose
// caller gave up succeeded anyway, unless uri was subscribed again since.
// It never waits for subMu past the end of the session (a Subscribe may
// hold subMu while it waits for the next session).
func (m *MCP) withdrawAbandoned(s *session, uri string, subscribeErr error) {
	if subscribeErr != nil {
		return
	}
	for !m.subMu.TryLock() {
		select {
		case <-s.ctx.Done():
			return // the server forgets the session's subscriptions with it
		case <-time.After(5 * time.Millisecond):
		}
	}
	defer m.subMu.Unlock()
	if _, live := m.subs[uri]; live {
		return
	}
	err := m.run(s.ctx, s, fmt.Sprintf("resources/unsubscribe %q", uri), func(ctx context.Context, cs *mcp.ClientSession) error {
		return cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
	})
	if err != nil {
		m.log.Debug("withdrawing an abandoned subscription failed", zap.String("uri", uri), zap.Error(err))
	}
}

func (m *MCP) subscribeOn(ctx context.Context, s *session, op, uri string) error {
	if !supportsSubscribe(s) {
		return Errorf(CodeUnsupported, "%s: the server does not offer resources.subscribe", op)
	}
	return m.run(ctx, s, op, func(ctx context.Context, cs *mcp.ClientSession) error {
		return cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
	})
}

// Unsubscribe withdraws the subscription to uri. It never waits for a
// session: with none up there is nothing to withdraw, and uri is not
// re-subscribed.
func (m *MCP) Unsubscribe(ctx context.Context, uri string) error {
	m.subMu.Lock()
	defer m.subMu.Unlock()
	if _, ok := m.subs[uri]; !ok {
		return nil
	}
	delete(m.subs, uri)
	m.mu.Lock()
	s := m.cur
	m.mu.Unlock()
	if s == nil {
		return nil
	}
	return plainError(m.run(ctx, s, fmt.Sprintf("resources/unsubscribe %q", uri), func(ctx context.Context, cs *mcp.ClientSession) error {
		return cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
	}))
}

// resubscribe makes every live subscription again on a new session.
func (m *MCP) resubscribe(s *session) {
	m.subMu.Lock()
	defer m.subMu.Unlock()
	uris := make([]string, 0, len(m.subs))
	for u, on := range m.subs {
		// A Subscribe that ran between the session going up and this
		// re-subscription already made it on s.
		if on != s {
			uris = append(uris, u)
		}
	}
	sort.Strings(uris)
	for _, uri := range uris {
		err := plainError(m.subscribeOn(s.ctx, s, fmt.Sprintf("resources/subscribe %q", uri), uri))
		if err == nil {
			m.subs[uri] = s
			continue
		}
		if s.ctx.Err() != nil {
			// The session died again: the next one tries these.
			return
		}
		m.log.Warn("re-subscription failed", zap.String("uri", uri), zap.Error(err))
		delete(m.subs, uri)
		if o := m.obs(); o != nil {
			o.ResubscribeFailed(uri, err)
		}
	}
}

// closingGrace is how long do waits for a session that answered
// "connection closed" to end.
const closingGrace = 2 * time.Second

// sessionEnds reports whether s ends within closingGrace.
func sessionEnds(s *session) bool {
	t := time.NewTimer(closingGrace)
	defer t.Stop()
	select {
	case <-s.ctx.Done():
		return true
	case <-t.C:
		return false
	}
}

// ---- notifications ----

func (m *MCP) isCurrent(cs mcp.Session) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cur != nil && mcp.Session(m.cur.cs) == cs
}

func (m *MCP) onToolListChanged(_ context.Context, req *mcp.ToolListChangedRequest) {
	m.mu.Lock()
	m.toolsOK = false
	m.tools = nil
	m.toolsGen++
	s := m.cur
	m.mu.Unlock()
	if s != nil && mcp.Session(s.cs) == req.Session {
		select {
		case s.refresh <- struct{}{}:
		default:
		}
	}
}

func (m *MCP) onResourceListChanged(_ context.Context, req *mcp.ResourceListChangedRequest) {
	if !m.isCurrent(req.Session) {
		return
	}
	if o := m.obs(); o != nil {
		o.ResourceListChanged()
	}
}

func (m *MCP) onResourceUpdated(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
	if req.Params == nil || !m.isCurrent(req.Session) {
		return
	}
	if o := m.obs(); o != nil {
		o.ResourceUpdated(req.Params.URI)
	}
}

// ---- supervision ----

var errConnectTimeout = errors.New("connect timeout")

// Serve keeps a session up until ctx ends: connect (bounded by the connect
// timeout), watch it (liveness pings), and after it ends reconnect with
// exponential backoff and jitter, re-subscribing every live subscription.
// It returns suture.ErrDoNotRestart for a config it can never run.
func (m *MCP) Serve(ctx context.Context) error {
	if m.opts.dial == nil {
		if err := checkConfig(m.cfg); err != nil {
			m.setLastErr(err)
			m.log.Error("tooling cannot run", zap.Error(err))
			return fmt.Errorf("tooling %s: %w (%w)", m.name, err, suture.ErrDoNotRestart)
		}
	}
	backoff := m.initialBackoff
	for {
		healthy, err := m.runSession(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if healthy >= m.healthyAfter {
			backoff = m.initialBackoff
		}
		// Jitter: a delay in [backoff/2, backoff).
		delay := backoff/2 + rand.N(backoff/2+1)
		m.log.Warn("session down; reconnecting", zap.Error(m.redact(err)), zap.Duration("backoff", delay))
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		backoff = min(backoff*2, m.maxBackoff)
		m.mu.Lock()
		m.restarts++
		m.mu.Unlock()
	}
}

// endSession takes s out of service at once (operations then wait for the
// next session) and cancels its context, failing its in-flight requests.
func (m *MCP) endSession(s *session, cause error) {
	cause = m.redact(cause)
	m.mu.Lock()
	if m.cur == s {
		m.cur = nil
		m.ready = make(chan struct{})
		m.lastErr = cause
		m.toolsOK, m.tools = false, nil
		m.toolsGen++
	}
	m.mu.Unlock()
	s.cancel(&sessionLostError{cause})
}

func (m *MCP) setLastErr(err error) {
	err = m.redact(err)
	m.mu.Lock()
	m.lastErr = err
	m.mu.Unlock()
}

// runSession connects once and returns when that session has ended, with
// how long it was up and why it ended.
func (m *MCP) runSession(ctx context.Context) (time.Duration, error) {
	var d *dialed
	if m.opts.dial != nil {
		t, err := m.opts.dial(ctx)
		if err != nil {
			err = fmt.Errorf("dialing: %w", err)
			m.setLastErr(err)
			return 0, err
		}
		d = &dialed{transport: t}
	} else {
		var err error
		if d, err = m.dial(); err != nil {
			err = fmt.Errorf("preparing the transport: %w", err)
			m.setLastErr(err)
			return 0, err
		}
	}
	if d.cleanup != nil {
		defer d.cleanup()
	}
	// The context given to Connect must outlive the handshake: go-sdk's SSE
	// transport ties its event stream to it. The connect timeout cancels
	// it only while Connect runs.
	life, endLife := context.WithCancelCause(ctx)
	defer endLife(nil)
	timer := time.AfterFunc(m.connectTimeout, func() { endLife(errConnectTimeout) })
	cs, err := m.client.Connect(life, d.transport, &mcp.ClientSessionOptions{ProtocolVersion: m.opts.protocol})
	if !timer.Stop() && err == nil {
		_ = cs.Close()
		err = context.Cause(life)
	}
	if err != nil {
		if errors.Is(context.Cause(life), errConnectTimeout) {
			err = fmt.Errorf("connecting: no session within %v: %w", m.connectTimeout, err)
		} else {
			err = fmt.Errorf("connecting: %w", err)
		}
		m.setLastErr(err)
		return 0, err
	}
	sctx, scancel := context.WithCancelCause(context.Background())
	s := &session{cs: cs, init: cs.InitializeResult(), ctx: sctx, cancel: scancel, refresh: make(chan struct{}, 1)}
	start := time.Now()
	stopOnCancel := context.AfterFunc(ctx, func() { m.endSession(s, errors.New("tooling stopped")) })
	defer stopOnCancel()

	m.mu.Lock()
	m.cur = s
	close(m.ready)
	m.toolsOK, m.tools = false, nil
	m.toolsGen++
	m.mu.Unlock()
	fields := []zap.Field{}
	if s.init != nil && s.init.ServerInfo != nil {
		fields = append(fields, zap.String("server", s.init.ServerInfo.Name), zap.String("server_version", s.init.ServerInfo.Version))
	}
	if s.init != nil {
		fields = append(fields, zap.String("protocol", s.init.ProtocolVersion))
	}
	m.log.Info("session up", fields...)

	var wg sync.WaitGroup
	wg.Go(func() {
		err := cs.Wait()
		if err == nil {
			err = errors.New("connection closed")
		}
		m.endSession(s, err)
	})
	wg.Go(func() { m.liveness(s) })
	wg.Go(func() {
		for {
			select {
			case <-s.ctx.Done():
				return
			case <-s.refresh:
				if _, err := m.fetchTools(s.ctx, s); err != nil {
					m.log.Debug("refreshing the tool list failed", zap.Error(err))
				}
			}
		}
	})
	m.resubscribe(s)

	<-s.ctx.Done()
	cause := context.Cause(s.ctx)
	m.endSession(s, cause) // no-op unless cancelled directly

	if ctx.Err() == nil && d.kill != nil {
		// Dead or unresponsive: do not wait for it to exit by itself.
		d.kill()
	}
	_ = cs.Close()
	if d.kill != nil {
		// After a graceful close too: what the server started itself (npx
		// → node, a shell's children) shares its process group and must
		// not outlive the session.
		d.kill()
	}
	wg.Wait()
	s.closeBackground()
	return time.Since(start), cause
}

// liveness pings the server; a ping unanswered within the timeout tears
// the session down (go-sdk's own keepalive closes the session but leaves
// in-flight calls waiting on a hung peer).
func (m *MCP) liveness(s *session) {
	if m.opts.pingInterval <= 0 {
		return
	}
	t := time.NewTicker(m.opts.pingInterval)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(s.ctx, m.opts.pingTimeout)
		err := s.cs.Ping(pctx, nil)
		cancel()
		if err == nil || s.ctx.Err() != nil {
			continue
		}
		var we *jsonrpc.Error
		if errors.As(err, &we) && we.Code == jsonrpc.CodeMethodNotFound {
			continue // it answered: alive, just without ping
		}
		m.endSession(s, fmt.Errorf("liveness check failed: %w", err))
		return
	}
}
