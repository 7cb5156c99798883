package dispatch

// Messages in a cluster (issue 33): a message for an agent another host
// holds is forwarded to that host (package forward), whichever host the
// sender reached; one for an agent that is moving (no host holds it, or
// its host went) waits for the next owner up to the wait, then fails
// unavailable. A forwarded message is delivered only here: if this host
// does not hold the agent it answers misdirected (421) at once, and the
// forwarding host, which does the waiting, follows the move. A
// per-session agent runs on every host, each session on one: the holder
// of its key, or while there is none its placed host. A durable agent's
// message outlives its owner: the host that takes the agent over resumes
// it under the same id, and the forwarding host's relay follows it there
// (or, when that host is the forwarding one, leaves it to its instance).

import (
	"context"
	"errors"
	"fmt"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/forward"
	"github.com/toolhostd/toolhostd/internal/message"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

// locate is where m goes: here (its agent is held here or, for a
// per-session agent, its session is or belongs here while nobody holds
// it), or the member that holds (or is placed to take) its agent or
// session; "" and false while nobody does (an agent starting here is
// not held yet: its messages wait). claiming: nobody holds its
// on-message agent and this host, where it belongs, was asked to claim it
// (m waits for that).
func (d *Dispatcher) locate(a *config.Agent, m *message.Message) (owner string, here, claiming bool) {
	node := d.node
	if a.Instances != config.InstancesPerSession {
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

// deliverRemote delivers m while this host does not hold its agent: to
// its owner, or after waiting for one; owner and claiming are where the
// caller's locate put it. here is true when this host came to hold the
// agent meanwhile (deliver locally then).
func (d *Dispatcher) deliverRemote(ctx context.Context, m *message.Message, owner string, claiming bool) (here bool, err error) {
	agent := m.Agent()
	_, forwarded := control.ForwardedBy(ctx)
	var why string
	for {
		switch {
		case claiming:
			why = "this host, where it belongs, did not start it"
		case forwarded:
			// The forwarding host waits and follows the move: a host that
			// is stopping or fencing must not hold the request.
			where := "no host holds it now (it is moving)"
			if owner != "" {
				where = "it runs on host " + owner
			}
			return false, fmt.Errorf("%w: %w", control.ErrMisdirected, message.Refuse(message.ErrUnavailable, tooling.CodeUnavailable,
				"agent %q does not run on host %s: %s", agent, d.node.Self(), where))
		case owner == "":
			why = "no host holds it (it is moving)"
		case d.fwd == nil:
			return false, message.Refuse(message.ErrUnavailable, tooling.CodeUnavailable,
				"agent %q runs on host %s and this host cannot forward to it: set the shared [host] control_token", agent, owner)
		default:
			url := d.node.Address(owner)
			if url == "" {
				why = "its host " + owner + " publishes no control API address ([cluster] advertise)"
				break
			}
			err := d.fwd.Deliver(ctx, m, d.owner(m, owner, url))
			if !errors.Is(err, forward.ErrMoved) {
				return false, err
			}
			why = tooling.AsError(err).Message
		}
		if !d.node.Wait(ctx.Done()) {
			return false, message.Refuse(message.ErrUnavailable, tooling.CodeUnavailable,
				"agent %q is not reachable in the cluster within %v: %s", agent, d.wait, why)
		}
		a := d.agents.Agent(agent)
		here = a == nil // removed meanwhile: the local path says so
		if a != nil {
			owner, here, claiming = d.locate(a, m)
		}
		if here {
			return true, nil
		}
	}
}

// owner is the forward.Owner of m's holder (name, at url): for a
// durable agent with Next, which follows m to the next holder of its
// agent (of its session, for a per-session agent).
func (d *Dispatcher) owner(m *message.Message, name, url string) forward.Owner {
	o := forward.Owner{Name: name, URL: url, Gone: d.node.Gone(name)}
	if a := d.agents.Agent(m.Agent()); a != nil && a.Durable {
		perSession := a.Instances == config.InstancesPerSession
		o.Next = func(ctx context.Context) (forward.Owner, bool, error) { return d.nextOwner(ctx, m, perSession) }
	}
	return o
}

// nextOwner is the host that holds m's agent (its session) now (here:
// this one), waiting up to the dispatcher's wait while none does (or its
// control API is not known). A session nobody holds is placed here when
// placement puts it here: this host's resume of the agent's orphaned
// sessions takes it over.
func (d *Dispatcher) nextOwner(ctx context.Context, m *message.Message, perSession bool) (forward.Owner, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, d.wait)
	defer cancel()
	for {
		var owner string
		var held bool
		if perSession {
			owner, held = d.node.SessionOwner(m.Agent(), m.Session())
			if !held && d.node.PlaceSession(m.Agent(), m.Session()) == d.node.Self() {
				owner, held = d.node.Self(), true
			}
		} else {
			owner, held = d.node.Owner(m.Agent())
		}
		switch {
		case held && owner == d.node.Self():
			return forward.Owner{}, true, nil
		case held:
			if url := d.node.Address(owner); url != "" {
				return d.owner(m, owner, url), false, nil
			}
		}
		if !d.node.Wait(ctx.Done()) {
			return forward.Owner{}, false, fmt.Errorf("no host took agent %q over within %v", m.Agent(), d.wait)
		}
	}
}
