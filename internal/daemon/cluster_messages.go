package daemon

// Messages in a cluster (issue 33): a message for an agent another host
// holds is forwarded to that host (internal/forward), whichever host the
// sender reached; one for an agent that is moving (no host holds it, or
// its host went) waits for the next owner up to deliverWait, then fails
// unavailable. A forwarded message is delivered only here: if this host
// does not hold the agent it answers misdirected (421) at once, and the
// forwarding host, which does the waiting, follows the move.

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/forward"
	"github.com/toolhostd/toolhostd/internal/message"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

// setupForwarding makes the cluster's forwarder and works out this host's
// advertised control API (o.Address), warning when the hosts cannot reach
// each other.
func (d *Daemon) setupForwarding(cfg *config.Config) (address string, fwd *forward.Forwarder, err error) {
	c := cfg.Cluster
	address, err = c.AdvertiseURL(cfg.Host.ControlListen)
	if err != nil {
		return "", nil, fmt.Errorf("cluster: %w", err)
	}
	log := d.log.Named("cluster")
	if address == "" {
		log.Warn("this host publishes no control API address: messages the other hosts receive for its agents fail unavailable; "+
			"set [cluster] advertise, or [host] control_listen to an address the other hosts can reach",
			zap.String("control_listen", cfg.Host.ControlListen))
	}
	token, err := config.Expand(cfg.Host.ControlToken)
	if err != nil {
		return "", nil, fmt.Errorf("cluster: control_token: %w", err)
	}
	if token == "" {
		log.Warn("no [host] control_token: this host cannot forward messages for agents the other hosts run (they fail unavailable); " +
			"the hosts of a cluster authenticate to each other with the shared control_token")
		return address, nil, nil
	}
	return address, forward.New(forward.Options{Self: c.Name, Token: token, Log: d.baseLog}), nil
}

// deliverRemote delivers m while this host does not hold its agent: to
// its owner, or after waiting for one; owner and claiming are where the
// caller's locate put it. here is true when this host came to hold the
// agent meanwhile (deliver locally then).
func (ra routerAgents) deliverRemote(ctx context.Context, m *message.Message, owner string, claiming bool) (here bool, err error) {
	d, c := ra.d, ra.d.cluster
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
				"agent %q does not run on host %s: %s", agent, c.node.Self(), where))
		case owner == "":
			why = "no host holds it (it is moving)"
		case c.fwd == nil:
			return false, message.Refuse(message.ErrUnavailable, tooling.CodeUnavailable,
				"agent %q runs on host %s and this host cannot forward to it: set the shared [host] control_token", agent, owner)
		default:
			url := c.node.Address(owner)
			if url == "" {
				why = "its host " + owner + " publishes no control API address ([cluster] advertise)"
				break
			}
			err := c.fwd.Deliver(ctx, m, forward.Owner{Name: owner, URL: url, Gone: c.node.Gone(owner)})
			if !errors.Is(err, forward.ErrMoved) {
				return false, err
			}
			why = tooling.AsError(err).Message
		}
		if !c.node.Wait(ctx.Done()) {
			return false, message.Refuse(message.ErrUnavailable, tooling.CodeUnavailable,
				"agent %q is not reachable in the cluster within %v: %s", agent, deliverWait, why)
		}
		d.mu.Lock()
		r := d.agents[agent]
		here = r == nil // removed meanwhile: the local path says so
		if r != nil {
			owner, here, claiming = ra.locate(r.cfg, m)
		}
		d.mu.Unlock()
		if here {
			return true, nil
		}
	}
}
