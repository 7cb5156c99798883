package daemon

// Messages to the daemon's agents (issue 32): the daemon is the message
// router's Agents (which agent takes which sender, which instance gets a
// message, starting it if need be), a per-session agent's service runs
// its instances.Pool, and an on-message agent waits for its first message
// and stops when idle.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/contract"
	"github.com/toolhostd/toolhostd/internal/host"
	"github.com/toolhostd/toolhostd/internal/idem"
	"github.com/toolhostd/toolhostd/internal/instances"
	"github.com/toolhostd/toolhostd/internal/message"
	"github.com/toolhostd/toolhostd/internal/metrics"
	"github.com/toolhostd/toolhostd/internal/policy"
	hoststatus "github.com/toolhostd/toolhostd/internal/status"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

// deliverWait bounds how long a message waits for its agent's instance to
// be running (starting, restarting after a backoff, an on-message start)
// before it is refused as unavailable.
const deliverWait = 30 * time.Second

// Messages is the daemon's message router: the control API, the CLI and
// the protocol endpoints send through it.
func (d *Daemon) Messages() *message.Router { return d.router }

// newRouter is the daemon's router, delivering to its agents.
func (d *Daemon) newRouter(cfg *config.Config) *message.Router {
	o := message.Options{Retention: cfg.Host.MessageRetention.Duration, Audit: d.audit, Log: d.baseLog}
	if m := d.metrics; m != nil {
		o.Observe = func(r message.Record) {
			m.ObserveMessage(metrics.Message{Agent: r.Agent, Sender: r.Sender, Outcome: r.Outcome, Duration: r.Duration,
				FirstDelta: r.FirstDelta, HasFirstDelta: r.HasFirstDelta, Refused: r.Refused})
		}
	}
	if c := d.cluster; c != nil { // idempotency keys across the hosts
		c.ledger = idem.New(idem.Options{Client: c.cli, Prefix: c.cfg.Prefix, Host: c.cfg.Name,
			TTL: o.Retention, Timeout: c.ttl / 2, Log: d.baseLog})
		o.Ledger = c.ledger
	}
	return message.NewRouter(routerAgents{d}, o)
}

// settleMessages waits, at most half the lease TTL, until the cluster's
// idempotency ledger recorded the outcome of every message that ended
// here: an agent stopped for a hand-over or a leave has its messages'
// outcomes recorded before another host takes it.
func (d *Daemon) settleMessages() {
	if d.cluster == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), d.cluster.ttl/2)
	defer cancel()
	if err := d.router.Settle(ctx); err != nil {
		d.log.Warn("idempotency keys not recorded before the hand over", zap.Error(err))
	}
}

// routerAgents is the daemon as the router's message.Agents.
type routerAgents struct{ d *Daemon }

// Target is the agent's messaging config (for an agent another host of the
// cluster runs too: Deliver forwards the message there).
func (ra routerAgents) Target(agent string) (message.Target, error) {
	d := ra.d
	d.mu.Lock()
	defer d.mu.Unlock()
	r := d.agents[agent]
	if r == nil {
		if p, ok := d.peer(agent); ok {
			return p.Target(), nil
		}
		return message.Target{}, message.Refuse(message.ErrUnknownAgent, tooling.CodeNotFound, "no agent %q", agent)
	}
	return message.Target{Accepts: r.cfg.Accepts, MaxMessageBytes: int(r.cfg.MaxMessageBytes), AuditContent: r.cfg.AuditArguments}, nil
}

// Deliver hands m to the instance of its agent (and session), or in a
// cluster to the host that runs it (cluster_messages.go).
func (ra routerAgents) Deliver(ctx context.Context, m *message.Message) error {
	d := ra.d
	ctx, cancel := context.WithTimeout(ctx, deliverWait)
	defer cancel()
	for {
		d.mu.Lock()
		r := d.agents[m.Agent()]
		if r == nil {
			d.mu.Unlock()
			if p, ok := d.peer(m.Agent()); ok {
				return p.Deliver(ctx, m)
			}
			return message.Refuse(message.ErrUnknownAgent, tooling.CodeNotFound, "no agent %q", m.Agent())
		}
		if d.cluster != nil {
			if owner, here, claiming := ra.locate(r.cfg, m); !here {
				d.mu.Unlock()
				if here, err := ra.deliverRemote(ctx, m, owner, claiming); !here {
					return err
				}
				continue
			}
		}
		inst, pool, state, changed, lastErr := r.inst, r.pool, r.state, r.changed, r.lastErr
		// Before Serve put the agents under its root (the daemon is
		// starting), an agent without a service yet is about to get one:
		// its message waits for it like one for an agent that is starting.
		serving := (r.hasSup && !r.final) || (d.root == nil && !d.isStarted())
		if state == stateIdle {
			select {
			case r.wake <- struct{}{}:
			default:
			}
		}
		d.mu.Unlock()
		var err error
		switch {
		case pool != nil:
			if err = pool.Deliver(ctx, m); !ra.moved(ctx, err) {
				return err
			}
			continue // another host took the session first: follow it
		case inst != nil && state == stateRunning:
			if !inst.Receives() {
				return message.Refuse(message.ErrUnsupported, tooling.CodeUnsupported,
					"agent %q cannot receive messages: its component was built against toolhost:agent before 0.3.0", m.Agent())
			}
			if err = inst.Mailbox().Put(m); !errors.Is(err, message.ErrUnavailable) {
				return err // delivered, or refused (busy)
			}
			// The instance is ending: wait for the next one.
		case !serving && state == stateFailed && lastErr != "":
			return message.Refuse(message.ErrUnavailable, tooling.CodeUnavailable, "agent %q is failed: %s", m.Agent(), lastErr)
		case !serving:
			return message.Refuse(message.ErrUnavailable, tooling.CodeUnavailable, "agent %q is %s", m.Agent(), state)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return message.Refuse(message.ErrUnavailable, tooling.CodeUnavailable,
				"agent %q is not running (%s) and did not start within %v", m.Agent(), state, deliverWait)
		}
	}
}

// messaging is how an instance of the agent sends messages.
func (s *agentService) messaging() contract.Messaging {
	globs := make([]policy.Pattern, len(s.cfg.SendsTo))
	for i, g := range s.cfg.SendsTo {
		globs[i] = policy.Compile(g)
	}
	return contract.Messaging{
		Router: s.d.router,
		SendsTo: func(to string) bool {
			for _, g := range globs {
				if g.Match(to) {
					return true
				}
			}
			return false
		},
		AuditContent: s.cfg.AuditArguments,
	}
}

// awaitMessage is an on-message agent waiting for its first message:
// false when ctx ended first.
func (s *agentService) awaitMessage(ctx context.Context) bool {
	s.update(func(r *agentRec) { r.setState(stateIdle) })
	s.started() // an agent waiting for messages is up
	select {
	case <-s.r.wake:
		return true
	case <-ctx.Done():
		s.update(func(r *agentRec) { r.setState(stateStopped) })
		return false
	}
}

// idleWatch is closed once an on-message agent's instance has had nothing
// to do for its idle_timeout (nil for other agents); stop ends the watch.
func (s *agentService) idleWatch(inst *host.Agent) (idle <-chan struct{}, stop func()) {
	if s.cfg.Start != config.StartOnMessage {
		return nil, func() {}
	}
	timeout := s.cfg.IdleTimeout.Duration
	ch, done, ended := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		t := time.NewTicker(min(max(timeout/4, 10*time.Millisecond), time.Second))
		defer t.Stop()
		lastBusy := time.Now()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			now := time.Now()
			if inst.Busy() {
				lastBusy = now
				continue
			}
			last := inst.Mailbox().LastActivity()
			if lastBusy.After(last) {
				last = lastBusy
			}
			if now.Sub(last) >= timeout {
				close(ch)
				return
			}
		}
	}()
	return ch, func() { close(done); <-ended }
}

// serveSessions runs a per-session agent: its program loaded, its
// instances made by a pool as messages come, until ctx ends.
func (s *agentService) serveSessions(ctx context.Context) error {
	s.update(func(r *agentRec) { r.setState(stateStarting) })
	prog, err := s.d.host.OpenContext(ctx, s.cfg.Component)
	if err != nil && ctx.Err() != nil {
		s.update(func(r *agentRec) { r.setState(stateStopped) })
		return ctx.Err()
	}
	if err != nil {
		return s.cannotRun(err)
	}
	defer prog.Close()
	if !host.Receives(prog) {
		return s.cannotRun(fmt.Errorf(`instances = "per-session" needs a component that receives messages (built against toolhost:agent@0.3.0); %s is not`, s.cfg.Component))
	}
	env, err := s.cfg.ExpandedEnv()
	if err != nil {
		return s.cannotRun(err)
	}
	pool := instances.New(instances.Options{
		Agent: s.r.name, IdleTimeout: s.cfg.IdleTimeout.Duration, MaxInstances: s.cfg.MaxInstances, Log: s.d.log,
		Start: func(session string) (instances.Instance, error) { return s.startSession(prog, env, session) },
	})
	s.update(func(r *agentRec) {
		r.content = prog.Content()
		r.pool = pool
		r.setState(stateRunning)
	})
	s.started()
	err = pool.Serve(ctx)
	s.update(func(r *agentRec) {
		r.pool = nil
		r.setState(stateStopped)
	})
	return err
}

// startSession starts one instance of a per-session agent.
func (s *agentService) startSession(prog *host.Program, env map[string]string, session string) (instances.Instance, error) {
	d := s.d
	cfg := s.agentConfig(env)
	cfg.OpenBucket = s.openBucket(session)                  // open("session"): this session's own bucket
	inst, err := s.startSessionInstance(prog, cfg, session) // cluster_sessions.go
	if err != nil {
		return nil, err
	}
	if m := d.metrics; m != nil {
		m.InstanceStarted(s.r.name)
	}
	go s.sessionEnded(inst, session)
	return inst, nil
}

// sessionEnded records how a per-session instance ended.
func (s *agentService) sessionEnded(inst *host.Agent, session string) {
	_, err := inst.Wait()
	s.sessionInstanceEnded(inst, session)
	trap := host.IsTrap(err)
	if trap {
		s.d.mu.Lock()
		s.r.traps++
		s.d.mu.Unlock()
		s.log().Warn("instance trapped", zap.String("session", session), zap.String("error", headline(err)))
	}
	if m := s.d.metrics; m != nil {
		if trap {
			m.AgentTrapped(s.r.name)
		}
		m.InstanceEnded(s.r.name, false)
	}
}

// instanceStoppedIdle counts an on-message agent's instance stopped idle.
func (d *Daemon) instanceStoppedIdle(agent string) {
	if m := d.metrics; m != nil {
		m.InstanceEnded(agent, true)
	}
}

// instancesOf is r's live instances for ps (d.mu held).
func instancesOf(r *agentRec) []hoststatus.Instance {
	switch {
	case r.pool != nil:
		var out []hoststatus.Instance
		for _, st := range r.pool.List() {
			out = append(out, hoststatus.Instance{Session: st.Session, State: st.State, Since: st.Since,
				Messages: st.Handled, LastActivity: st.LastActivity})
		}
		return out
	case r.inst != nil:
		mb := r.inst.Mailbox()
		return []hoststatus.Instance{{State: r.state, Since: r.since, Messages: mb.Handled(), LastActivity: mb.LastActivity()}}
	}
	return nil
}
