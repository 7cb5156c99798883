// Package dispatch delivers messages to the host's agents: it is the
// message router's Agents. A message goes to its agent's running instance
// (or its per-session pool), waits for an instance that is starting or
// restarting, wakes an on-message agent, goes to a peer named like a local
// agent, and in a cluster to the host that holds the agent or session
// (forwarded over the control API by package forward), following moves.
package dispatch

import (
	"context"
	"errors"
	"time"

	"github.com/toolhostd/toolhostd/internal/cluster"
	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/forward"
	"github.com/toolhostd/toolhostd/internal/message"
	"github.com/toolhostd/toolhostd/internal/peer"
	"github.com/toolhostd/toolhostd/internal/supervisor"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

// DefaultWait bounds how long a message waits for its agent's instance to
// be running (starting, restarting after a backoff, an on-message start)
// or, in a cluster, for a host to hold it, before it is refused as
// unavailable.
const DefaultWait = 30 * time.Second

// Options are what a Dispatcher delivers through.
type Options struct {
	// Agents are the host's agents.
	Agents *supervisor.Supervisor
	// Peer is the remote agent of that name ([peer.*]), if any.
	Peer func(name string) (*peer.Peer, bool)
	// Node is this host's cluster node; nil: a single host.
	Node *cluster.Node
	// Forwarder forwards to the other hosts; nil: no forwarding (no
	// shared control token).
	Forwarder *forward.Forwarder
	// Wait bounds a delivery's wait; 0: DefaultWait.
	Wait time.Duration
}

// Dispatcher is the message router's Agents for one host.
type Dispatcher struct {
	agents *supervisor.Supervisor
	peer   func(string) (*peer.Peer, bool)
	node   *cluster.Node
	fwd    *forward.Forwarder
	wait   time.Duration
}

var _ message.Agents = (*Dispatcher)(nil)

// New is the dispatcher of o.
func New(o Options) *Dispatcher {
	if o.Wait <= 0 {
		o.Wait = DefaultWait
	}
	if o.Peer == nil {
		o.Peer = func(string) (*peer.Peer, bool) { return nil, false }
	}
	return &Dispatcher{agents: o.Agents, peer: o.Peer, node: o.Node, fwd: o.Forwarder, wait: o.Wait}
}

// Target is the agent's messaging config (for an agent another host of the
// cluster runs too: Deliver forwards the message there).
func (d *Dispatcher) Target(agent string) (message.Target, error) {
	a := d.agents.Agent(agent)
	if a == nil {
		if p, ok := d.peer(agent); ok {
			return p.Target(), nil
		}
		return message.Target{}, message.Refuse(message.ErrUnknownAgent, tooling.CodeNotFound, "no agent %q", agent)
	}
	return message.Target{Accepts: a.Accepts, MaxMessageBytes: int(a.MaxMessageBytes), AuditContent: a.AuditArguments,
		Durable: a.Durable, SessionsOnly: a.Instances == config.InstancesPerSession && d.node != nil}, nil
}

// Deliver hands m to the instance of its agent (and session), or in a
// cluster to the host that runs it (cluster.go).
func (d *Dispatcher) Deliver(ctx context.Context, m *message.Message) error {
	ctx, cancel := context.WithTimeout(ctx, d.wait)
	defer cancel()
	for {
		a := d.agents.Agent(m.Agent())
		if a == nil {
			if p, ok := d.peer(m.Agent()); ok {
				return p.Deliver(ctx, m)
			}
			return message.Refuse(message.ErrUnknownAgent, tooling.CodeNotFound, "no agent %q", m.Agent())
		}
		if d.node != nil {
			if owner, here, claiming := d.locate(a, m); !here {
				if here, err := d.deliverRemote(ctx, m, owner, claiming); !here {
					return err
				}
				continue
			}
		}
		e, ok := d.agents.Lookup(ctx, m.Agent())
		if !ok {
			continue // removed meanwhile: the lookup above says so
		}
		var err error
		switch {
		case e.Pool != nil:
			if err = e.Pool.Deliver(ctx, m); !d.moved(ctx, err) {
				return err
			}
			continue // another host took the session first: follow it
		case e.Instance != nil && e.State == supervisor.Running:
			if !e.Instance.Receives() {
				return message.Refuse(message.ErrUnsupported, tooling.CodeUnsupported,
					"agent %q cannot receive messages: its component was built against toolhost:agent before 0.3.0", m.Agent())
			}
			if err = e.Instance.Mailbox().Put(m); !errors.Is(err, message.ErrUnavailable) {
				return err // delivered, or refused (busy)
			}
			// The instance is ending: wait for the next one.
		case !e.Serving && e.State == supervisor.Failed && e.LastError != "":
			return message.Refuse(message.ErrUnavailable, tooling.CodeUnavailable, "agent %q is failed: %s", m.Agent(), e.LastError)
		case !e.Serving:
			return message.Refuse(message.ErrUnavailable, tooling.CodeUnavailable, "agent %q is %s", m.Agent(), e.State)
		}
		select {
		case <-e.Changed:
		case <-ctx.Done():
			return message.Refuse(message.ErrUnavailable, tooling.CodeUnavailable,
				"agent %q is not running (%s) and did not start within %v", m.Agent(), e.State, d.wait)
		}
	}
}

// moved reports (after waiting for the cluster's view to change) whether
// a local delivery that found m's session taken by another host should be
// routed again; false for any other outcome, and for a forwarded message
// (its forwarding host follows the move).
func (d *Dispatcher) moved(ctx context.Context, err error) bool {
	if d.node == nil || !errors.Is(err, cluster.ErrSessionHeld) {
		return false
	}
	if _, forwarded := control.ForwardedBy(ctx); forwarded {
		return false
	}
	return d.node.Wait(ctx.Done())
}
