package mcpclient

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/tooling"
	"github.com/toolhostd/toolhostd/internal/tooling/oauth"
	"github.com/toolhostd/toolhostd/internal/tooling/transport"
)

// DefaultTerminateDuration is how long closing a stdio server waits after
// closing its stdin before SIGTERM, and after SIGTERM before SIGKILL. The
// zero values of a tooling config take config's defaults (config.Parse
// fills the same ones).
const DefaultTerminateDuration = time.Second

// DefaultProtocolVersion is the MCP protocol version the client asks for.
// go-sdk v1.8.0 would otherwise ask for 2026-07-28 (stateless, SEP-2575),
// where Subscribe returns before the server has made the subscription
// (subscriptions/listen is not awaited) and list results are served from
// client-side TTL caches; 2025-11-25 keeps request/response semantics for
// resources/subscribe and is what the npm servers speak.
const DefaultProtocolVersion = "2025-11-25"

// clientImpl is how toolhostd introduces itself to servers.
var clientImpl = &mcp.Implementation{Name: "toolhostd", Version: "0.1.0"}

// Options tune an MCP tooling beyond its config; the zero Options are the
// config's own settings (and config's defaults where it has none).
type Options struct {
	// Dialer replaces the transport the config describes (command or
	// url); it is called once per connection attempt. Nil: the config's.
	Dialer Dialer
	// PingInterval is the liveness check: a ping every interval that must
	// be answered within PingTimeout, else the session is torn down. Zero:
	// the config's ping_interval; negative: no liveness check.
	PingInterval time.Duration
	// PingTimeout bounds a ping's answer. Zero: the config's ping_timeout.
	PingTimeout time.Duration
	// ProtocolVersion is the MCP protocol version asked for at
	// initialization. "": DefaultProtocolVersion.
	ProtocolVersion string
	// TerminateDuration is how long closing a stdio server waits before
	// each escalation (stdin closed → SIGTERM → SIGKILL). Zero:
	// DefaultTerminateDuration.
	TerminateDuration time.Duration
	// Login makes the tooling's sessions run the authorization-code flow
	// (redirected to a loopback listener) whenever the server wants a
	// token, and store what it obtains, instead of failing with
	// ErrLoginRequired: for a person at a terminal and the conformance
	// adapter, not the daemon. Nil: never.
	Login *oauth.LoginOptions
	// Sampler offers the server sampling (the capability is advertised),
	// answered by it. Nil: SamplerFor's, else sampling is refused
	// (capabilities.go).
	Sampler Sampler
	// SamplerFor offers sampling to a tooling whose config has a sampling
	// table, answered by the Sampler it returns for that config (nil: not
	// offered): one Options serves a whole registry.
	SamplerFor func(cfg *config.Tooling) Sampler
	// Tracer starts a span per tools/call and resources/read, its trace
	// context carried to the server; nil: none.
	Tracer trace.TracerProvider
}

// options are the settings a Client runs with: its Options and its
// config, defaults applied.
type options struct {
	dial         Dialer
	timeout      timeouts
	restart      restartPacing
	pingInterval time.Duration // <= 0: no liveness check
	pingTimeout  time.Duration
	terminate    time.Duration
	protocol     string
	maxMessage   int64
	login        *oauth.LoginOptions // nil: never run an OAuth flow
	sampler      Sampler             // nil: sampling is not offered
}

// timeouts bound a Client's waits for its server.
type timeouts struct {
	connect time.Duration // a connection attempt, and a request waiting for a session
	call    time.Duration // one request's answer
}

// restartPacing is how Serve paces reconnections: the delay starts at initial
// and doubles up to max, and starts over after a session that stayed up
// healthyAfter.
type restartPacing struct {
	initial, max time.Duration
	healthyAfter time.Duration
}

// Status is a snapshot of an MCP tooling's session.
type Status struct {
	Connected     bool
	Restarts      int // reconnection attempts since Serve started
	LastError     string
	ServerName    string
	ServerVersion string
	InFlight      int // requests in flight now
	// ProgressNotifications counts every progress notification received,
	// for a call in flight or not.
	ProgressNotifications uint64
}

// Client is the `mcp` kind: one go-sdk ClientSession shared by every caller,
// kept alive by Serve.
type Client struct {
	name        string
	cfg         *config.Tooling
	opts        options
	log         *zap.Logger
	client      *mcp.Client
	tracer      trace.Tracer // nil: no spans (trace.go)
	reqs        requests
	logins      atomic.Int64 // OAuth authorizations completed (Options.Login)
	oauthWanted atomic.Bool  // a server without an oauth table asked for a bearer token
	progress    progressTracker
	subs        subscriptions

	connState // the session in service and how the last attempt went, under mu
}

// requests is a Client's account of the requests it makes.
type requests struct {
	slots    chan struct{} // one per tools/call running (max_concurrent_calls)
	inFlight atomic.Int64  // requests of every kind in flight now
	trackers sync.Map      // *mcp.ClientSession → its *transport.Tracker (closing.go)
}

// connState is what a Client knows of its connection to the server: the
// session in service, how the last connection attempt went, and what
// lasts only as long as a session or a transport. mu guards all of it.
type connState struct {
	mu      sync.Mutex
	cur     *session      // nil while no session is up
	ready   chan struct{} // closed while cur != nil
	down    bool          // the last connection attempt failed (and none is up since)
	failed  chan struct{} // closed and renewed on every failed attempt
	lastErr error
	// loginWait is closed while lastErr is a login-required error.
	loginWait signal
	secrets   []tooling.Redaction // expanded secrets of the current transport (redact)
	restarts  int
	tools     toolsCache
}

// setLastErrLocked records err; a login-required error wakes the callers
// waiting for a session (none is coming until someone logs in). mu is held.
func (c *connState) setLastErrLocked(err error) {
	c.lastErr = err
	if oauth.AsLoginRequired(err) != nil {
		c.loginWait.close()
	} else {
		c.loginWait.renew()
	}
}

// toolsCache is the tool list of the current session, kept until
// tools/list_changed or a new session invalidates it.
type toolsCache struct {
	list []tooling.Tool // nil: not cached (a fetched list is never nil)
	gen  uint64         // bumped on every invalidation
}

// invalidate drops the list; a fetch begun before it does not fill the
// cache (its generation is gone).
func (t *toolsCache) invalidate() {
	t.list = nil
	t.gen++
}

// fill caches list, fetched at generation gen, unless the cache was
// invalidated since.
func (t *toolsCache) fill(gen uint64, list []tooling.Tool) {
	if gen == t.gen {
		t.list = list
	}
}

// session is one live ClientSession.
type session struct {
	cs      *mcp.ClientSession
	init    *mcp.InitializeResult
	ctx     context.Context // cancelled with a *sessionLostError when it ends
	cancel  context.CancelCauseFunc
	refresh chan struct{} // tools/list_changed seen
	track   *transport.Tracker
	obs     tooling.Observer // Serve's; nil: notifications go nowhere

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

var _ tooling.Tooling = (*Client)(nil)

// New makes the MCP tooling for cfg. It does not connect: Serve does.
func New(cfg *config.Tooling, log *zap.Logger, o Options) (*Client, error) {
	if cfg == nil {
		return nil, errors.New("nil tooling config")
	}
	if log == nil {
		log = zap.NewNop()
	}
	c := *cfg
	m := &Client{
		name: c.Name,
		cfg:  &c,
		opts: options{
			dial: o.Dialer,
			timeout: timeouts{
				connect: orDefault(c.ConnectTimeout.Duration, config.DefaultConnectTimeout),
				call:    orDefault(c.CallTimeout.Duration, config.DefaultCallTimeout),
			},
			restart: restartPacing{
				initial:      orDefault(c.Restart.InitialBackoff.Duration, config.DefaultInitialBackoff),
				max:          orDefault(c.Restart.MaxBackoff.Duration, config.DefaultMaxBackoff),
				healthyAfter: orDefault(c.Restart.HealthyAfter.Duration, config.DefaultHealthyAfter),
			},
			pingInterval: orDefault(o.PingInterval, orDefault(c.PingInterval.Duration, config.DefaultPingInterval)),
			pingTimeout:  orDefault(o.PingTimeout, orDefault(c.PingTimeout.Duration, config.DefaultPingTimeout)),
			maxMessage:   int64(config.DefaultMaxMessageBytes),
			terminate:    orDefault(o.TerminateDuration, DefaultTerminateDuration),
			protocol:     o.ProtocolVersion,
			login:        o.Login,
			sampler:      o.Sampler,
		},
		log:  log.Named("tooling").With(zap.String("tooling", c.Name)),
		subs: subscriptions{uris: make(map[string]*session)},
		connState: connState{
			ready:     make(chan struct{}),
			failed:    make(chan struct{}),
			loginWait: signal{ch: make(chan struct{})},
		},
	}
	if o.Tracer != nil {
		m.tracer = o.Tracer.Tracer(tracerName)
	}
	if r := &m.opts.restart; r.max < r.initial {
		r.max = r.initial
	}
	if o.PingInterval < 0 {
		m.opts.pingInterval = 0
	}
	if m.opts.protocol == "" {
		m.opts.protocol = DefaultProtocolVersion
	}
	if m.opts.sampler == nil && o.SamplerFor != nil && c.Sampling != nil {
		m.opts.sampler = o.SamplerFor(&c)
	}
	if c.MaxMessageBytes > 0 {
		m.opts.maxMessage = int64(min(c.MaxMessageBytes, 1<<62))
	}
	n := c.MaxConcurrentCalls
	if n <= 0 {
		n = config.DefaultMaxConcurrentCalls
	}
	m.reqs.slots = make(chan struct{}, n)
	m.client = mcp.NewClient(clientImpl, m.clientOptions())
	m.offerRoots()
	m.client.AddReceivingMiddleware(m.receiving)
	m.client.AddSendingMiddleware(m.trackSending)
	return m, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Kind returns "mcp".
func (m *Client) Kind() string { return tooling.KindMCP }

// Name returns the configured name.
func (m *Client) Name() string { return m.name }

// Status returns a snapshot of the session.
func (m *Client) Status() Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := Status{Connected: m.cur != nil, Restarts: m.restarts, InFlight: int(m.reqs.inFlight.Load()),
		ProgressNotifications: m.progress.count.Load()}
	if m.lastErr != nil {
		st.LastError = m.lastErr.Error()
	}
	if m.cur != nil && m.cur.init != nil && m.cur.init.ServerInfo != nil {
		st.ServerName = m.cur.init.ServerInfo.Name
		st.ServerVersion = m.cur.init.ServerInfo.Version
	}
	return st
}
