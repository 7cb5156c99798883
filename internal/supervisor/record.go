package supervisor

import (
	"sync"
	"time"

	"github.com/thejerf/suture/v4"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/host"
	"github.com/toolhostd/toolhostd/internal/instances"
	"github.com/toolhostd/toolhostd/internal/policy"
	"github.com/toolhostd/toolhostd/internal/provider"
)

// record is one configured agent: its config, its status, what runs and
// the sub-supervisor running its current service. Its fields (but lim's)
// are guarded by Supervisor.mu.
type record struct {
	name string
	cfg  *config.Agent
	pol  *policy.Agent // the grants' policy, kept across runs; a reload may Update it
	lim  limited       // its Limited providers, kept across runs (own lock)
	st   status
	run  running
	slot slot
}

// status is what ps shows of an agent.
type status struct {
	state    State
	since    time.Time
	restarts int
	traps    int
	lastErr  string
	content  string        // the component content it was last started with (host.Program.Content)
	changed  chan struct{} // closed at the next state change (Lookup's callers wait on it)
}

// running is what of the agent runs: its instance, or its instances' pool.
type running struct {
	inst *host.Agent     // the running instance, if any
	pool *instances.Pool // a per-session agent's instances while its service runs
	// wake brings an on-message agent's first message, as its trace
	// context (buffered 1).
	wake chan trace.SpanContext
}

// slot is the agent's place in the root supervisor and its restart policy's
// memory.
type slot struct {
	sup     *suture.Supervisor
	svc     *service // the current service
	token   suture.ServiceToken
	hasSup  bool // token names a sub-supervisor in the root
	final   bool // the current service ended for good (exited, failed)
	gen     int  // bumped when a service is replaced: stale services write nothing
	started bool // some instance was started: the next start is a restart
	backoff time.Duration
	delay   time.Duration // wait before the next start
	// handOver: the service is stopped for a reload that restarts the
	// durable agent (StopAgents): its messages are left to the next.
	handOver bool
}

// limited is one provider.Limited per provider the agent got, under its
// grant: its running requests and rate bucket outlive a run (the token
// counters are the budgets').
type limited struct {
	mu sync.Mutex
	by map[string]*provider.Limited
}

func newRecord(name string, cfg *config.Agent, rec policy.Recorder) *record {
	return &record{
		name: name, cfg: cfg, pol: policy.FromConfig(cfg, rec),
		st:   status{state: Stopped, since: time.Now(), changed: make(chan struct{})},
		run:  running{wake: make(chan trace.SpanContext, 1)},
		slot: slot{backoff: cfg.RestartBackoff.Initial.Duration},
	}
}

// setState moves r to s; an illegal move is a bug, said at DPanic level
// (a panic in development loggers, an error line otherwise).
func (sv *Supervisor) setState(r *record, s State) {
	if r.st.state == s {
		return
	}
	if !legal(r.st.state, s) {
		sv.log.DPanic("illegal agent state transition", zapAgent(r.name), zapState("from", r.st.state), zapState("to", s))
	}
	r.st.state, r.st.since = s, time.Now()
	close(r.st.changed)
	r.st.changed = make(chan struct{})
}

// stopTimeout is how long removing the agent's sub-supervisor may take.
func (r *record) stopTimeout() time.Duration { return r.cfg.StopGrace.Duration + stopMargin }

// resetBackoff makes the next start immediate and its backoff the initial.
func (r *record) resetBackoff() {
	r.slot.delay, r.slot.backoff = 0, r.cfg.RestartBackoff.Initial.Duration
}

// nextDelay is the wait before restarting after a run that lasted ran:
// exponential from restart_backoff.initial to .max, back to initial after
// a run that lasted at least .max.
func (r *record) nextDelay(ran time.Duration) time.Duration {
	initial, maxB := r.cfg.RestartBackoff.Initial.Duration, r.cfg.RestartBackoff.Max.Duration
	if ran >= maxB || r.slot.backoff <= 0 {
		r.slot.backoff = initial
	}
	d := r.slot.backoff
	r.slot.backoff = min(2*r.slot.backoff, maxB)
	return d
}

// limit is p under the agent's grant g: the one Limited of this provider,
// its grant updated to g, or a new one made by newLimited.
func (r *record) limit(name string, p provider.Provider, g *config.ProviderGrant,
	newLimited func(agent string, p provider.Provider, g *config.ProviderGrant) (*provider.Limited, error)) (provider.Provider, error) {
	r.lim.mu.Lock()
	defer r.lim.mu.Unlock()
	if l := r.lim.by[name]; l != nil {
		l.Update(g)
		return l, nil
	}
	l, err := newLimited(r.name, p, g)
	if err != nil {
		return nil, err
	}
	if r.lim.by == nil {
		r.lim.by = map[string]*provider.Limited{}
	}
	r.lim.by[name] = l
	return l, nil
}
