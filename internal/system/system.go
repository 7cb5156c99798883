// Package system builds the common graph of toolhostd's commands. New
// builds, from a config and options, the graph they run agents on: the audit log, the
// providers and their token budgets, the toolings (their sampling answered
// through the providers, instrumented when metrics are given), the gateway
// hub serving them, the key-value store and the host agents run on, each agent's contract
// (audit, providers, chat observer) given by the host. Close takes it down
// in the reverse order.
//
// serve (package daemon), run, chat and compile all build through New, so
// that an agent's operations are checked, limited and audited alike
// whichever command runs it. What serve needs beyond it (the cluster's
// pieces, the router, the endpoints, metrics, the control server) is still
// built by package daemon and the serve command.
package system

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/audit"
	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/contract"
	"github.com/toolhostd/toolhostd/internal/engine"
	"github.com/toolhostd/toolhostd/internal/gateway"
	"github.com/toolhostd/toolhostd/internal/host"
	"github.com/toolhostd/toolhostd/internal/kv"
	"github.com/toolhostd/toolhostd/internal/metrics"
	"github.com/toolhostd/toolhostd/internal/policy"
	"github.com/toolhostd/toolhostd/internal/provider"
	"github.com/toolhostd/toolhostd/internal/tooling"
	"github.com/toolhostd/toolhostd/internal/tooling/mcpclient"
)

// An Option changes what New builds.
type Option func(*options)

type options struct {
	metrics     *metrics.Metrics
	toolingOpts mcpclient.Options
	serve       func(tooling string) bool // nil: every tooling
	epochTick   time.Duration
	fuel        *bool
	providers   []string // nil: every [provider.*]
	noHost      bool
	engineOnly  bool
	etcd        *clientv3.Client // store.go
	tempStore   bool
}

// WithMetrics instruments every tooling (including those MakeToolings
// makes later), reports chats and samplings to m and points m at the audit
// log and the key-value store.
func WithMetrics(m *metrics.Metrics) Option { return func(o *options) { o.metrics = m } }

// WithToolingOptions applies opts to every MCP tooling made (its
// SamplerFor is the system's).
func WithToolingOptions(opts mcpclient.Options) Option {
	return func(o *options) { o.toolingOpts = opts }
}

// WithToolings starts only the toolings serve reports true for; the others
// are served idle (an agent granted one gets it, and its operations fail
// with unavailable), so that their names stay known.
func WithToolings(serve func(name string) bool) Option {
	return func(o *options) { o.serve = serve }
}

// WithEpochTick sets the engine's epoch tick (engine.Options.EpochTick).
func WithEpochTick(d time.Duration) Option { return func(o *options) { o.epochTick = d } }

// WithFuel makes the engine meter fuel or not, instead of as the config's
// agents need (toolhostd compile --fuel).
func WithFuel(fuel bool) Option { return func(o *options) { o.fuel = &fuel } }

// WithProviders opens only the providers named instead of every
// [provider.*] (chat asks one; another's missing key must not stop it).
func WithProviders(names ...string) Option { return func(o *options) { o.providers = names } }

// WithoutHost builds no host (no engine) and opens no token budgets: for
// commands that run no agent (chat).
func WithoutHost() Option { return func(o *options) { o.noHost = true } }

// EngineOnly builds the engine and nothing else: no audit log, providers,
// toolings, gateway or host; the engine checks components against the
// toolhost:agent world as the host's does. toolhostd compile uses it.
func EngineOnly() Option { return func(o *options) { o.engineOnly = true } }

// System is the graph of one config. Its fields are set by New and not
// changed afterwards.
type System struct {
	Config *config.Config
	// Audit is [host] audit_log; nil: none.
	Audit *audit.Log
	// Providers are the [provider.*], opened (no request made).
	Providers *provider.Registry
	// Budgets keeps the agents' token counters; nil without providers.
	Budgets *provider.Budgets
	// Toolings are the toolings the hub serves at New, by name.
	Toolings map[string]tooling.Tooling
	// Hub is the gateway serving the toolings.
	Hub *gateway.Hub
	// Host runs agents; nil WithoutHost or EngineOnly.
	Host *host.Host
	// Engine compiles and loads components: Host's, or EngineOnly's own;
	// nil WithoutHost.
	Engine *engine.Engine
	// KV is the key-value store the agents' wasi:keyvalue imports reach and
	// the operators' kv commands drive; nil WithoutHost or EngineOnly.
	KV *kv.Service

	log      *zap.Logger
	opts     options
	store    kv.Store // KV's backend (store.go)
	storeDir string   // a temporary store's directory, removed by Close
}

// New builds the graph of cfg. Nothing runs until Serve (the audit writer,
// the hub); Close releases what New made.
func New(cfg *config.Config, log *zap.Logger, opts ...Option) (s *System, err error) {
	if cfg == nil {
		return nil, errors.New("system: no config")
	}
	if log == nil {
		log = zap.NewNop()
	}
	s = &System{Config: cfg, log: log}
	for _, o := range opts {
		o(&s.opts)
	}
	defer func() {
		if err != nil {
			_ = s.Close()
			s = nil
		}
	}()
	if s.opts.engineOnly {
		if s.Engine, err = engine.New(host.EngineOptions(s.hostOptions())); err != nil {
			return s, &HostError{Err: err}
		}
		return s, nil
	}
	// The audit log and the providers come first: the toolings' samplers
	// use them.
	if err := s.openAudit(); err != nil {
		return s, err
	}
	if err := s.openProviders(); err != nil {
		return s, err
	}
	serve := cfg.Tooling
	var idle []gateway.Entry
	if only := s.opts.serve; only != nil {
		serve = map[string]*config.Tooling{}
		for _, n := range slices.Sorted(maps.Keys(cfg.Tooling)) {
			if only(n) {
				serve[n] = cfg.Tooling[n]
			} else {
				idle = append(idle, gateway.Entry{Tooling: tooling.Idle(n)})
			}
		}
	}
	if s.Toolings, err = s.MakeToolings(serve); err != nil {
		return s, err
	}
	entries := idle
	for _, name := range slices.Sorted(maps.Keys(s.Toolings)) {
		entries = append(entries, gateway.Entry{Tooling: s.Toolings[name], Limits: gateway.LimitsFrom(cfg.Tooling[name])})
	}
	s.Hub = gateway.NewHub(entries, log)
	if s.opts.noHost {
		return s, nil
	}
	if err := s.openStore(); err != nil {
		return s, &StoreError{Err: err}
	}
	if s.Host, err = host.New(s.hostOptions(), s.Hub); err != nil {
		return s, &HostError{Err: err}
	}
	s.Engine = s.Host.Engine
	return s, nil
}

// HostError is New's error when the host (its engine, its compile cache)
// could not be made, as opposed to a config that does not open.
type HostError struct{ Err error }

func (e *HostError) Error() string { return e.Err.Error() }
func (e *HostError) Unwrap() error { return e.Err }

// StoreError is New's error when the key-value store could not be opened
// (its bbolt file locked by another process or corrupt: the message names
// the file and what to do).
type StoreError struct{ Err error }

func (e *StoreError) Error() string { return e.Err.Error() }
func (e *StoreError) Unwrap() error { return e.Err }

// HostOptions are the host options of cfg: its compile cache and the
// engine settings that key the cache's entries (fuel metering on when some
// agent has limits.fuel > 0), so that what compile fills is what serve
// finds.
func HostOptions(cfg *config.Config, log *zap.Logger) host.Options {
	return host.Options{Engine: engine.Options{CacheDir: cfg.CacheDir(), Fuel: needsFuel(cfg)}, Log: log}
}

func (s *System) hostOptions() host.Options {
	o := HostOptions(s.Config, s.log)
	o.Engine.EpochTick = s.opts.epochTick
	if s.opts.fuel != nil {
		o.Engine.Fuel = *s.opts.fuel
	}
	o.Agent = s.AgentOptions()
	return o
}

// needsFuel reports whether some agent of cfg has a fuel limit.
func needsFuel(cfg *config.Config) bool {
	for _, a := range cfg.Agent {
		if a.Limits.Fuel > 0 {
			return true
		}
	}
	return false
}

// Serve runs the audit writer and the hub until ctx ends, and returns once
// both have stopped (the hub's calls cancelled, the audit log written and
// closed). The daemon, which stops them in its own order, runs them itself.
func (s *System) Serve(ctx context.Context) error {
	auditCtx, stopAudit := context.WithCancel(context.Background())
	auditDone := s.RunAudit(auditCtx)
	err := s.Hub.Serve(ctx)
	stopAudit()
	<-auditDone
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

// Start runs Serve on a goroutine; stop ends it and waits.
func (s *System) Start() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Serve(ctx) }()
	return func() { cancel(); <-done }
}

// Close releases the engine (the host's), the key-value store, the audit
// log and the providers. Agents must have ended, and Serve returned.
func (s *System) Close() error {
	var err error
	if s.Engine != nil {
		err = s.Engine.Close()
	}
	if serr := s.closeStore(); err == nil {
		err = serr
	}
	s.Audit.Close()
	if s.Providers != nil {
		_ = s.Providers.Close()
	}
	return err
}

// AgentOptions are what every agent's contract.Agent is made with: the
// providers, the audit log and, with metrics, the chat observer.
func (s *System) AgentOptions() contract.Options {
	var opts contract.Options
	if s.Providers != nil {
		opts.Providers = s.Providers.Get
	}
	if s.Audit != nil {
		opts.Audit = s.Audit
	}
	if m := s.opts.metrics; m != nil {
		opts.ChatObserver = func(r contract.ChatRecord) {
			m.ObserveChat(metrics.Chat{
				Agent: r.Agent, Provider: r.Provider, Model: r.Model, Outcome: r.Outcome,
				Duration: r.Duration, FirstToken: r.FirstToken, HasFirstToken: r.HasFirstToken,
				InputTokens: r.Usage.InputTokens, OutputTokens: r.Usage.OutputTokens,
			})
		}
	}
	return opts
}

// Recorder is the metrics as the policy's Recorder (nil without metrics).
func (s *System) Recorder() policy.Recorder {
	if m := s.opts.metrics; m != nil {
		return m
	}
	return nil
}
