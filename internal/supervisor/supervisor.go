// Package supervisor runs the agents of one host: a record per [agent.X]
// entry with its typed State, a suture sub-supervisor per agent in the
// daemon's root running its service (the restart policy and its backoff,
// the on-message start and idle stop, a per-session agent's pool of
// instances), the operations on them (start, stop, restart, halt, resume,
// a reload's replacements) and what they report (status, instances, where
// a message goes: Lookup). It owns no config file, no endpoint and no
// cluster: the daemon orchestrates it, the dispatcher delivers through it.
package supervisor

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/thejerf/suture/v4"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/host"
	"github.com/toolhostd/toolhostd/internal/metrics"
	"github.com/toolhostd/toolhostd/internal/oplog"
	"github.com/toolhostd/toolhostd/internal/policy"
	"github.com/toolhostd/toolhostd/internal/provider"
)

// stopMargin is what an agent gets past its stop grace to end after it
// was interrupted (an epoch tick, releasing its calls and store).
const stopMargin = 5 * time.Second

// Intensity limit of each agent's sub-supervisor: more than
// failureThreshold restarts within about failureDecay seconds pause the
// agent for its maximum restart backoff (on top of the backoff itself).
const (
	failureThreshold = 5
	failureDecay     = 30 // seconds
)

// Options are what a Supervisor runs agents with.
type Options struct {
	// Host starts the instances.
	Host *host.Host
	// Log is the supervisor's logger (named by the caller).
	Log *zap.Logger
	// Metrics, if set, counts instances, traps and inbox depths.
	Metrics *metrics.Metrics
	// Recorder gets the grants' policy decisions (nil: none).
	Recorder policy.Recorder
	// Config is the host.AgentConfig of one instance (System.AgentConfig
	// with what the daemon adds: the router, the stop grace's cap).
	Config func(Instance) host.AgentConfig
	// Limit is p under agent's grant g, made once per agent and provider
	// (System.Limit).
	Limit func(agent string, p provider.Provider, g *config.ProviderGrant) (*provider.Limited, error)
	// Sessions claims a per-session instance's session before it starts
	// and releases it after (a cluster node); nil: a single host.
	Sessions Sessions
	// Tracer, if set, records a per-session instance's start as a span
	// under the message that caused it.
	Tracer trace.TracerProvider
	// Oplog is the durable agents' oplog store (System.Oplog), opened on
	// first use; nil: no agent is durable.
	Oplog func() (*oplog.Store, error)
}

// Instance is what Options.Config builds one instance's config from.
type Instance struct {
	Agent   string
	Config  *config.Agent // as the agent's service started
	Session string        // a per-session instance's ("" for the others)
	Env     map[string]string
	Policy  *policy.Agent
	// Limit is the agent's one Limited per provider, kept across runs.
	Limit func(name string, p provider.Provider, g *config.ProviderGrant) (provider.Provider, error)
}

// Sessions is where a per-session instance's session is claimed: a
// cluster node. The rest says which sessions that a host which left had
// (a durable agent's, with an oplog) this host resumes: those nobody holds
// that are placed here, looked for again when a member leaves.
type Sessions interface {
	ClaimSession(ctx context.Context, agent, session string) error
	ReleaseSession(agent, session string)
	Self() string
	SessionOwner(agent, session string) (string, bool)
	PlaceSession(agent, session string) string
	Changed() <-chan struct{}
	Departed() uint64
}

// Supervisor runs the agents of one config.
type Supervisor struct {
	opts Options
	log  *zap.Logger

	mu       sync.Mutex
	agents   map[string]*record
	root     *suture.Supervisor // set while the daemon serves
	stopping bool
	halted   bool                 // fenced: no instance may start
	sessions map[*host.Agent]bool // running per-session instances, which Halt stops too

	startWG sync.WaitGroup // the first instance of each agent Run started
	started chan struct{}  // closed once startWG is done
}

// New is the supervisor of agents; nothing runs until Run.
func New(agents map[string]*config.Agent, opts Options) *Supervisor {
	if opts.Log == nil {
		opts.Log = zap.NewNop()
	}
	s := &Supervisor{opts: opts, log: opts.Log, agents: map[string]*record{}, sessions: map[*host.Agent]bool{},
		started: make(chan struct{})}
	for name, a := range agents {
		s.agents[name] = newRecord(name, a, opts.Recorder)
	}
	return s
}

// Run puts the named agents under root (each in a sub-supervisor of its
// own) and makes root the one later starts go to. Started is closed once
// each of them started its first instance or could not.
func (s *Supervisor) Run(root *suture.Supervisor, names []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.root = root
	s.startWG.Add(len(names))
	for _, name := range names {
		s.startLocked(s.agents[name], s.startWG.Done)
	}
	go func() { s.startWG.Wait(); close(s.started) }()
}

// Started is closed once the agents Run started have started (or could
// not); never before Run.
func (s *Supervisor) Started() <-chan struct{} { return s.started }

// isStarted reports whether Started is closed.
func (s *Supervisor) isStarted() bool {
	select {
	case <-s.started:
		return true
	default:
		return false
	}
}

// Names are the configured agents, sorted.
func (s *Supervisor) Names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.agents))
}

// Configured reports whether name is a configured agent.
func (s *Supervisor) Configured(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.agents[name] != nil
}

// Agent is name's config entry (as last applied), or nil.
func (s *Supervisor) Agent(name string) *config.Agent {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.agents[name]; r != nil {
		return r.cfg
	}
	return nil
}

// startLocked puts a new sub-supervisor with a new service for r into the
// root (s.mu held, s.root set). onStarted, if not nil, is called once when
// the first instance was started or could not be.
func (s *Supervisor) startLocked(r *record, onStarted func()) {
	r.slot.gen++
	svc := &service{s: s, r: r, gen: r.slot.gen, cfg: r.cfg, onStarted: onStarted}
	sup := suture.New("agent/"+r.name, suture.Spec{
		FailureThreshold: failureThreshold,
		FailureDecay:     failureDecay,
		FailureBackoff:   r.cfg.RestartBackoff.Max.Duration,
		Timeout:          r.stopTimeout(),
	})
	sup.Add(svc)
	r.slot.sup, r.slot.svc, r.slot.final, r.slot.hasSup = sup, svc, false, true
	s.setState(r, Starting)
	r.slot.token = s.root.Add(sup)
}

// stopRec removes r's sub-supervisor, which stops its instance (shutdown
// envelope, grace, interrupt), and waits for it; then r is in state (an
// agent that had already exited or failed keeps that state).
func (s *Supervisor) stopRec(r *record, state State) {
	s.mu.Lock()
	root := s.root
	if !r.slot.hasSup || root == nil {
		s.mu.Unlock()
		return
	}
	tok, svc := r.slot.token, r.slot.svc
	r.slot.hasSup = false
	if r.run.inst != nil {
		s.setState(r, Stopping)
	}
	s.mu.Unlock()
	if err := root.RemoveAndWait(tok, r.stopTimeout()); err != nil {
		s.log.Error("agent did not stop in time", zap.String("agent", r.name), zap.Error(err))
	}
	svc.started() // stopped before it could start: nobody waits for it
	s.mu.Lock()
	r.slot.gen++
	r.run.inst = nil
	if !r.slot.final {
		s.setState(r, state)
	}
	s.mu.Unlock()
}

func zapAgent(name string) zap.Field         { return zap.String("agent", name) }
func zapState(key string, s State) zap.Field { return zap.String(key, s.String()) }
