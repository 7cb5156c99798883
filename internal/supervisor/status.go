package supervisor

import (
	"context"
	"maps"
	"slices"

	"go.opentelemetry.io/otel/trace"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/host"
	"github.com/toolhostd/toolhostd/internal/instances"
	hoststatus "github.com/toolhostd/toolhostd/internal/status"
)

// Statuses reports the agents listed reports true for (supervised: it has
// a service under the root), sorted by name.
func (s *Supervisor) Statuses(listed func(name string, supervised bool) bool) []hoststatus.Agent {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]hoststatus.Agent, 0, len(s.agents))
	for _, name := range slices.Sorted(maps.Keys(s.agents)) {
		r := s.agents[name]
		if !listed(name, r.slot.hasSup) {
			continue
		}
		st := hoststatus.Agent{
			Name:      name,
			Component: r.cfg.Component,
			Toolings:  slices.Clone(r.cfg.Toolings),
			State:     r.st.state.String(),
			Restarts:  r.st.restarts,
			Traps:     r.st.traps,
			LastError: r.st.lastErr,
			Since:     r.st.since,
		}
		if st.Toolings == nil {
			st.Toolings = []string{}
		}
		if r.run.inst != nil {
			st.Inbox = r.run.inst.Inbox().Pending()
		}
		st.Instances = instancesOf(r)
		out = append(out, st)
	}
	return out
}

// instancesOf is r's live instances for ps (s.mu held).
func instancesOf(r *record) []hoststatus.Instance {
	switch {
	case r.run.pool != nil:
		var out []hoststatus.Instance
		for _, st := range r.run.pool.List() {
			out = append(out, hoststatus.Instance{Session: st.Session, State: st.State, Since: st.Since,
				Messages: st.Handled, LastActivity: st.LastActivity})
		}
		return out
	case r.run.inst != nil:
		mb := r.run.inst.Mailbox()
		return []hoststatus.Instance{{State: r.st.state.String(), Since: r.st.since, Messages: mb.Handled(), LastActivity: mb.LastActivity()}}
	}
	return nil
}

// State is name's state (false: no such agent).
func (s *Supervisor) State(name string) (State, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.agents[name]; r != nil {
		return r.st.state, true
	}
	return 0, false
}

// Sessions lists a per-session agent's instances by session and state
// (nil for other agents and while its service does not run).
func (s *Supervisor) Sessions(name string) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.agents[name]
	if r == nil || r.run.pool == nil {
		return nil
	}
	out := map[string]string{}
	for _, st := range r.run.pool.List() {
		out[st.Session] = st.State
	}
	return out
}

// Endpoint is where a message to an agent can go now, as Lookup saw it.
type Endpoint struct {
	// Config is the agent's config entry.
	Config *config.Agent
	// Instance is its running instance (State Running), if any.
	Instance *host.Agent
	// Pool is a per-session agent's pool while its service runs.
	Pool *instances.Pool
	// State and LastError are its state and last failure.
	State     State
	LastError string
	// Serving reports a service that will (re)start an instance: a
	// message may wait for it. Before Run put the agents under the root
	// (the daemon is starting), an agent without a service yet is about
	// to get one.
	Serving bool
	// Changed is closed at the agent's next state change.
	Changed <-chan struct{}
}

// Lookup is where a message to name goes now (false: no such agent). An
// idle on-message agent is woken: its instance starts, its start a span
// under ctx's (the message's).
func (s *Supervisor) Lookup(ctx context.Context, name string) (Endpoint, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.agents[name]
	if r == nil {
		return Endpoint{}, false
	}
	e := Endpoint{Config: r.cfg, Instance: r.run.inst, Pool: r.run.pool, State: r.st.state, LastError: r.st.lastErr,
		Serving: (r.slot.hasSup && !r.slot.final) || (s.root == nil && !s.isStarted()), Changed: r.st.changed}
	if r.st.state == Idle {
		select {
		case r.run.wake <- trace.SpanContextFromContext(ctx):
		default:
		}
	}
	return e, true
}

// Instance is name's running instance (nil when none runs).
func (s *Supervisor) Instance(name string) *host.Agent {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.agents[name]; r != nil {
		return r.run.inst
	}
	return nil
}

// InstanceConfig is the host.AgentConfig an instance of name's current
// service would start with (false: no such agent, or no service).
func (s *Supervisor) InstanceConfig(name string, env map[string]string, session string) (host.AgentConfig, bool) {
	s.mu.Lock()
	r := s.agents[name]
	var svc *service
	if r != nil {
		svc = r.slot.svc
	}
	s.mu.Unlock()
	if svc == nil {
		return host.AgentConfig{}, false
	}
	return svc.instanceConfig(env, session), true
}
