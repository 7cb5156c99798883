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
// whichever command runs it. NewServe builds serve's graph on it: the
// cluster's etcd client, forwarder and node, metrics, the agents'
// supervisor, the message router with its ledger and dispatcher, and the
// MCP and A2A endpoints (serve.go); the daemon orchestrates that graph.
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
	"github.com/toolhostd/toolhostd/internal/tracing"
)

// Options say what New builds beyond the config. The zero value builds
// everything the config names: every tooling and provider, the host with
// its engine (fuel metering as the config's agents need) and the store.
type Options struct {
	// Log is the graph's logger; nil: none.
	Log *zap.Logger
	// Metrics instruments every tooling (including those MakeToolings
	// makes later), gets the chats and samplings and the instances' hooks
	// (AgentConfig), and is pointed at the audit log and the store.
	Metrics *metrics.Metrics
	// ToolingOptions apply to every MCP tooling made (its SamplerFor is
	// the system's).
	ToolingOptions mcpclient.Options
	// Toolings, if set, starts only the toolings it reports true for; the
	// others are served idle (an agent granted one gets it, and its
	// operations fail with unavailable), so that their names stay known.
	Toolings func(name string) bool
	// EpochTick is the engine's epoch tick (engine.Options.EpochTick).
	EpochTick time.Duration
	// Fuel, if set, makes the engine meter fuel or not, instead of as the
	// config's agents need (toolhostd compile --fuel, run).
	Fuel *bool
	// Providers, if set, opens only the providers named instead of every
	// [provider.*] (chat asks one; another's missing key must not stop it).
	Providers []string
	// NoHost builds no host (no engine) and opens no token budgets: for
	// commands that run no agent (chat).
	NoHost bool
	// EngineOnly builds the engine and nothing else: no audit log,
	// providers, toolings, gateway or host; the engine checks components
	// against the toolhost:agent world as the host's does (compile).
	EngineOnly bool
	// Cluster are the cluster's parts the stores and traces use (the zero
	// value outside a cluster).
	Cluster ClusterStores
	// TemporaryStore keeps the key-value store in a bbolt file of a new
	// temporary directory that Close removes, instead of the configured
	// backend: for `toolhostd run` without a state directory of its own.
	TemporaryStore bool
	// Version is the traces' service.version.
	Version string
}

// ClusterStores are what New takes of a cluster host: its etcd client and
// oplog fence for the stores, its member id for the traces.
type ClusterStores struct {
	// Client is the cluster's etcd client, on which the key-value store's
	// etcd backend ([host] store = { backend = "etcd" }, the default with
	// [cluster]) keeps its keys. The caller closes it after Close.
	Client *clientv3.Client
	// OplogGuard, with Client, fences the durable agents' oplogs in etcd:
	// each write of an oplog must pass its comparisons (the cluster node's
	// WriteGuard: this host still holds the agent).
	OplogGuard func(key string) []clientv3.Cmp
	// Member is the cluster member id of the traces.
	Member string
}

// System is the graph of one config. Its fields are set by New and not
// changed afterwards.
type System struct {
	Config *config.Config
	// Audit is [host] audit_log; nil: none.
	Audit *audit.Log
	// Providers are the [provider.*], opened (no request made).
	Providers *provider.Registry
	// Toolings are the toolings the hub serves at New, by name.
	Toolings map[string]tooling.Tooling
	// Hub is the gateway serving the toolings.
	Hub *gateway.Hub
	// Host runs agents; nil WithoutHost or EngineOnly.
	Host *host.Host
	// Engine compiles and loads components: Host's, or EngineOnly's own;
	// nil WithoutHost.
	Engine *engine.Engine
	// Tracing is the traces ([host] traces, OTEL_*): tracing.Off when
	// neither asks; nil only EngineOnly.
	Tracing *tracing.Tracing
	// KV is the key-value store the agents' wasi:keyvalue imports reach and
	// the operators' kv commands drive; nil WithoutHost or EngineOnly.
	KV *kv.Service

	log    *zap.Logger
	opts   Options
	stores stores
}

// stores are what the System keeps on disk or in etcd besides the audit
// log: the key-value store, the oplogs and the token budgets.
type stores struct {
	kv     kv.Store // KV's backend (store.go)
	kvDir  string   // a temporary kv store's directory, removed by Close
	oplogs oplogs   // the durable agents' (oplog.go)
	// budgets keeps the agents' token counters; nil without providers.
	budgets *provider.Budgets
}

// New builds the graph of cfg. Nothing runs until Serve (the audit writer,
// the hub); Close releases what New made.
func New(cfg *config.Config, opts Options) (s *System, err error) {
	if cfg == nil {
		return nil, errors.New("system: no config")
	}
	log := opts.Log
	if log == nil {
		log = zap.NewNop()
	}
	s = &System{Config: cfg, log: log, opts: opts}
	defer func() {
		if err != nil {
			_ = s.Close()
			s = nil
		}
	}()
	if s.opts.EngineOnly {
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
	if err := s.openTracing(); err != nil {
		return s, err
	}
	if s.Tracing.On() {
		s.opts.ToolingOptions.Tracer = s.Tracing.Provider()
	}
	serve := cfg.Tooling
	var idle []gateway.Entry
	if only := s.opts.Toolings; only != nil {
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
	if s.opts.NoHost {
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
	o.Engine.EpochTick = s.opts.EpochTick
	if s.opts.Fuel != nil {
		o.Engine.Fuel = *s.opts.Fuel
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
	if oerr := s.closeOplog(); err == nil {
		err = oerr
	}
	s.Audit.Close()
	if s.Providers != nil {
		_ = s.Providers.Close()
	}
	s.closeTracing()
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
	if s.Tracing != nil && s.Tracing.On() {
		opts.Tracer, opts.CaptureContent = s.Tracing.Provider(), s.Tracing.CaptureContent()
	}
	if m := s.opts.Metrics; m != nil {
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
	if m := s.opts.Metrics; m != nil {
		return m
	}
	return nil
}
