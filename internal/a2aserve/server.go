// Package a2aserve serves the agents exposed over A2A with a2a-go's server
// (a2asrv): per agent an agent card at its well-known path and the
// JSON-RPC binding (SendMessage, SendStreamingMessage, GetTask,
// CancelTask, ListTasks), for A2A 1.0 clients and, through a2acompat, 0.3
// ones. A task is a message from "a2a" through the message Router; its
// contextId is the session; tasks are kept for the messages' retention.
package a2aserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/expose"
	"github.com/toolhostd/toolhostd/internal/message"
)

// Defaults of Options left at zero.
const (
	DefaultMaxRequestBytes = 4 << 20
	DefaultMaxTasks        = 10000
	keepAliveEvery         = 15 * time.Second
)

// Paths under the handler's root, for an agent NAME.
const (
	// CardPath is the agent card: /NAME/.well-known/agent-card.json.
	CardPath = "/.well-known/agent-card.json"
	// V0Path is the A2A 0.3 JSON-RPC endpoint: /NAME/v0.3 (1.0 is /NAME).
	V0Path = "/v0.3"
)

// Options configure a Server.
type Options struct {
	// Router sends the messages (required).
	Router *message.Router
	// Catalog lists the agents exposed over A2A (required).
	Catalog expose.Catalog
	// BaseURL is the handler's root as clients reach it (e.g.
	// "https://host/a2a"): the cards' interface URLs are under it
	// (required).
	BaseURL string
	// Listen is the address the handler is served on: without a Token it
	// must be loopback-only.
	Listen string
	// Token, when set, is the bearer token every JSON-RPC request must
	// carry (the cards stay public and say so).
	Token string
	// Retention keeps ended tasks (the messages' retention,
	// message.DefaultRetention); MaxTasks bounds an agent's kept tasks.
	Retention time.Duration
	MaxTasks  int
	// MaxRequestBytes bounds a request's body.
	MaxRequestBytes int64
	// Version is the cards' version.
	Version string
	// Log gets refusals (zap.NewNop if nil).
	Log *zap.Logger
	// Now is the clock (time.Now).
	Now func() time.Time
}

// Server is the A2A endpoint of every exposed agent, an http.Handler.
type Server struct {
	opts    Options
	log     *zap.Logger
	handler http.Handler

	mu     sync.Mutex
	agents map[string]*endpoint
	stop   func()
}

// endpoint is one agent's handlers; its tasks outlive a change of its
// description, not its removal from the catalog.
type endpoint struct {
	card, v1, v0 http.Handler
}

// New is the A2A endpoint over opts.Router.
func New(opts Options) (*Server, error) {
	if opts.Router == nil || opts.Catalog == nil || opts.BaseURL == "" {
		return nil, errors.New("a2aserve: a router, a catalog and a base URL are required")
	}
	if err := expose.CheckListen("a2a", opts.Listen, opts.Token); err != nil {
		return nil, err
	}
	if opts.Retention <= 0 {
		opts.Retention = message.DefaultRetention
	}
	if opts.MaxTasks <= 0 {
		opts.MaxTasks = DefaultMaxTasks
	}
	if opts.MaxRequestBytes <= 0 {
		opts.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	opts.BaseURL = strings.TrimSuffix(opts.BaseURL, "/")
	log := opts.Log
	if log == nil {
		log = zap.NewNop()
	}
	s := &Server{opts: opts, log: log.Named("a2a"), agents: map[string]*endpoint{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{agent}"+CardPath, s.route(func(e *endpoint) http.Handler { return e.card }))
	mux.HandleFunc("OPTIONS /{agent}"+CardPath, s.route(func(e *endpoint) http.Handler { return e.card }))
	rpc := func(pick func(*endpoint) http.Handler) http.Handler {
		return expose.LimitBody(opts.MaxRequestBytes, expose.RequireToken(opts.Token, s.route(pick)))
	}
	mux.Handle("POST /{agent}", rpc(func(e *endpoint) http.Handler { return e.v1 }))
	mux.Handle("POST /{agent}"+V0Path, rpc(func(e *endpoint) http.Handler { return e.v0 }))
	s.handler = mux
	if opts.Token != "" {
		s.log.Info("a2a endpoint requires a bearer token", zap.String("listen", opts.Listen))
	} else {
		s.log.Warn("a2a endpoint without a token: loopback only, any local process may call its agents", zap.String("listen", opts.Listen))
	}
	s.stop = opts.Catalog.OnChange(s.sync)
	return s, nil
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// Close stops following the catalog.
func (s *Server) Close() error {
	s.stop()
	return nil
}

// CardURL is the agent card's URL of agent.
func (s *Server) CardURL(agent string) string { return s.opts.BaseURL + "/" + agent + CardPath }

// route serves a request for the agent in the path with pick's handler:
// 404 for an agent that is not exposed over A2A.
func (s *Server) route(pick func(*endpoint) http.Handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("agent")
		e := s.endpoint(name)
		if e == nil {
			s.log.Debug("unknown agent", zap.String("agent", name), zap.String("path", r.URL.Path))
			http.Error(w, "no agent "+name+" is exposed over A2A", http.StatusNotFound)
			return
		}
		pick(e).ServeHTTP(w, r)
	}
}

func (s *Server) endpoint(name string) *endpoint {
	if _, ok := expose.Find(s.opts.Catalog, expose.A2A, name); !ok {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.agents[name]; ok {
		return e
	}
	h := a2asrv.NewHandler(newExecutor(name, s.opts.Router, s.log),
		a2asrv.WithTaskStore(newStore(s.opts.Retention, s.opts.MaxTasks, s.opts.Now)),
		a2asrv.WithCapabilityChecks(&a2a.AgentCapabilities{Streaming: true}),
		a2asrv.WithCallInterceptors(logFailures{log: s.log.With(zap.String("agent", name))}),
		a2asrv.WithLogger(slog.New(slog.DiscardHandler)))
	producer := unionCard{a2av0.NewAgentCardProducer(a2asrv.AgentCardProducerFn(func(context.Context) (*a2a.AgentCard, error) {
		a, ok := expose.Find(s.opts.Catalog, expose.A2A, name)
		if !ok {
			return nil, a2a.NewError(a2a.ErrInvalidRequest, "agent "+name+" is no longer exposed")
		}
		return s.card(a), nil
	}))}
	// A stream that waits on a slow agent still gets a comment line now
	// and then (proxies drop idle connections).
	keepAlive := a2asrv.WithTransportKeepAlive(keepAliveEvery)
	e := &endpoint{card: a2asrv.NewAgentCardHandler(producer),
		v1: a2asrv.NewJSONRPCHandler(h, keepAlive), v0: a2av0.NewJSONRPCHandler(h, keepAlive)}
	s.agents[name] = e
	return e
}

// sync forgets the endpoints (and tasks) of agents no longer exposed.
func (s *Server) sync() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name := range s.agents {
		if _, ok := expose.Find(s.opts.Catalog, expose.A2A, name); !ok {
			delete(s.agents, name)
		}
	}
}

// card is agent's card: a 1.0 and a 0.3 JSON-RPC interface, streaming,
// text in and out, its skills (or one from its description), and the
// bearer scheme when a token is required.
func (s *Server) card(a expose.Agent) *a2a.AgentCard {
	url := s.opts.BaseURL + "/" + a.Name
	c := &a2a.AgentCard{
		Name:        a.Name,
		Description: a.Description,
		Version:     s.opts.Version,
		SupportedInterfaces: []*a2a.AgentInterface{
			{URL: url, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2a.Version},
			{URL: url + V0Path, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2av0.Version},
		},
		Capabilities:       a2a.AgentCapabilities{Streaming: true},
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain"},
		Skills:             skills(a),
	}
	if s.opts.Version == "" {
		c.Version = "0"
	}
	if s.opts.Token != "" {
		c.SecuritySchemes = a2a.NamedSecuritySchemes{"bearer": a2a.HTTPAuthSecurityScheme{Scheme: "Bearer"}}
		c.SecurityRequirements = a2a.SecurityRequirementsOptions{{"bearer": {}}}
	}
	return c
}

func skills(a expose.Agent) []a2a.AgentSkill {
	if len(a.Skills) == 0 {
		return []a2a.AgentSkill{{ID: a.Name, Name: a.Name, Description: a.Description, Tags: []string{}}}
	}
	out := make([]a2a.AgentSkill, len(a.Skills))
	for i, k := range a.Skills {
		tags := k.Tags
		if tags == nil {
			tags = []string{}
		}
		out[i] = a2a.AgentSkill{ID: k.ID, Name: k.Name, Description: k.Description, Tags: tags, Examples: k.Examples}
	}
	return out
}

// unionCard is a2acompat's card for 0.3 and 1.0 clients with one fix: its
// securitySchemes are in the 0.3 form only ({"type": "http", "scheme",
// "http": {...}}), which a 1.0 parser (a2a-go's own DefaultCardParser)
// refuses; each HTTP scheme also gets its 1.0 key, httpAuthSecurityScheme.
type unionCard struct{ a2asrv.AgentCardProducer }

// CardJSON implements a2asrv.AgentCardJSONProducer.
func (u unionCard) CardJSON(ctx context.Context) ([]byte, error) {
	b, err := u.AgentCardProducer.(a2asrv.AgentCardJSONProducer).CardJSON(ctx)
	if err != nil {
		return nil, err
	}
	var card map[string]any
	if err := json.Unmarshal(b, &card); err != nil {
		return nil, fmt.Errorf("agent card: %w", err)
	}
	schemes, _ := card["securitySchemes"].(map[string]any)
	if len(schemes) == 0 {
		return b, nil
	}
	for _, v := range schemes {
		if sc, ok := v.(map[string]any); ok && sc["http"] != nil {
			sc["httpAuthSecurityScheme"] = sc["http"]
		}
	}
	return json.MarshalIndent(card, "", "  ")
}

// logFailures logs the calls that end in an error (the SDK's own slog
// lines are discarded: they would bypass the daemon's log).
type logFailures struct {
	a2asrv.PassthroughCallInterceptor
	log *zap.Logger
}

func (l logFailures) After(_ context.Context, cc *a2asrv.CallContext, resp *a2asrv.Response) error {
	if resp.Err != nil {
		l.log.Debug("a2a call failed", zap.String("method", cc.Method()), zap.Error(resp.Err))
	}
	return nil
}
