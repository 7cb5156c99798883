package daemon

// Per-session agents in a cluster (issue 33): such an agent's service (its
// program and instances.Pool) runs on every host, and each session's
// instance on one: the holder of the session's key, or while there is
// none the session's placed host (rendezvous over (agent, session)),
// which claims the key before it starts the instance and releases it once
// the instance ended. A one-off message (no session) runs where it
// arrives. A fence halts these instances like the others.

import (
	"context"
	"errors"

	"github.com/toolhostd/toolhostd/internal/cluster"
	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/host"
	"github.com/toolhostd/toolhostd/internal/message"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

// perSession reports an agent whose instances are per session.
func isPerSession(a *config.Agent) bool { return a.Instances == config.InstancesPerSession }

// placedAgents are cfg's agents the cluster places whole (not the
// per-session ones, which run everywhere).
func placedAgents(cfg *config.Config) []string {
	var out []string
	for _, name := range sortedKeys(cfg.Agent) {
		if !isPerSession(cfg.Agent[name]) {
			out = append(out, name)
		}
	}
	return out
}

// onEveryHost are those of names (sorted) that every cluster host runs:
// the per-session agents (d.mu held).
func (d *Daemon) onEveryHost(names []string) []string {
	var out []string
	for _, name := range names {
		if isPerSession(d.agents[name].cfg) {
			out = append(out, name)
		}
	}
	return out
}

// lazyAgents are cfg's agents placed whole that start on their first
// message: their placed host claims them only then.
func lazyAgents(cfg *config.Config) []string {
	var out []string
	for _, name := range placedAgents(cfg) {
		if cfg.Agent[name].Start == config.StartOnMessage {
			out = append(out, name)
		}
	}
	return out
}

// locate is where m goes: here (its agent is held here or, for a
// per-session agent, its session is or belongs here while nobody holds
// it), or the member that holds (or is placed to take) its agent or
// session; "" and false while nobody does (an agent starting here is
// not held yet: its messages wait). claiming: nobody holds its
// on-message agent and this host, where it belongs, was asked to claim it
// (m waits for that). d.mu held.
func (ra routerAgents) locate(a *config.Agent, m *message.Message) (owner string, here, claiming bool) {
	node := ra.d.cluster.node
	if !isPerSession(a) {
		if node.Owns(m.Agent()) {
			return "", true, false
		}
		owner, held := node.Owner(m.Agent())
		switch {
		case held && owner == node.Self(): // held since Owns answered
			return "", true, false
		case held:
			return owner, false, false
		case a.Start != config.StartOnMessage:
			return "", false, false // moving: its next host claims it
		}
		placed := node.Place(m.Agent())
		if placed == node.Self() {
			node.Want(m.Agent()) // its first message: claim it
			return "", false, true
		}
		return placed, false, false
	}
	if m.Session() == "" {
		return "", true, false // a one-off instance runs where it arrives
	}
	owner, held := node.SessionOwner(m.Agent(), m.Session())
	if !held {
		owner = node.PlaceSession(m.Agent(), m.Session())
	}
	if owner == node.Self() {
		return "", true, false
	}
	return owner, false, false
}

// moved reports (after waiting for the cluster's view to change) whether
// a local delivery that found m's session taken by another host should be
// routed again; false for any other outcome, and for a forwarded message
// (its forwarding host follows the move).
func (ra routerAgents) moved(ctx context.Context, err error) bool {
	if ra.d.cluster == nil || !errors.Is(err, cluster.ErrSessionHeld) {
		return false
	}
	if _, forwarded := control.ForwardedBy(ctx); forwarded {
		return false
	}
	return ra.d.cluster.node.Wait(ctx.Done())
}

// startSessionInstance claims session's key in a cluster and starts its
// instance, unless the host is halted. The check, the start and the
// record Halt uses happen under d.mu.
func (s *agentService) startSessionInstance(prog *host.Program, cfg host.AgentConfig, session string) (*host.Agent, error) {
	d := s.d
	claimed := false
	if d.cluster != nil && session != "" {
		if err := d.cluster.node.ClaimSession(context.Background(), s.r.name, session); err != nil {
			ref := message.Refuse(message.ErrUnavailable, tooling.CodeUnavailable, "session %q of agent %q cannot start on host %s: %v",
				session, s.r.name, d.cluster.node.Self(), err)
			if errors.Is(err, cluster.ErrSessionHeld) {
				return nil, heldError{ref}
			}
			return nil, ref
		}
		claimed = true
	}
	d.mu.Lock()
	if d.halted {
		d.mu.Unlock()
		if claimed {
			d.cluster.node.ReleaseSession(s.r.name, session)
		}
		return nil, message.Refuse(message.ErrUnavailable, tooling.CodeUnavailable, "the cluster host is fenced")
	}
	inst := d.host.Start(prog, cfg, s.cfg.Input)
	if d.cluster != nil {
		d.cluster.insts[inst] = true
	}
	d.mu.Unlock()
	return inst, nil
}

// heldError is the refusal of a session another host holds: a local
// delivery routes it again (moved), a forwarded one is answered 421.
type heldError struct{ err error }

func (e heldError) Error() string { return e.err.Error() }
func (e heldError) Unwrap() []error {
	return []error{e.err, cluster.ErrSessionHeld, control.ErrMisdirected}
}

// sessionInstanceEnded forgets an ended per-session instance and, in a
// cluster, releases its session's key.
func (s *agentService) sessionInstanceEnded(inst *host.Agent, session string) {
	d := s.d
	if d.cluster == nil {
		return
	}
	d.mu.Lock()
	delete(d.cluster.insts, inst)
	d.mu.Unlock()
	if session != "" {
		d.cluster.node.ReleaseSession(s.r.name, session)
	}
}
