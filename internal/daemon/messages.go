package daemon

// Messages to the daemon's agents (issue 32): the router, delivering
// through the dispatcher (package dispatch) to the supervisor's agents,
// the peers and, in a cluster, the other hosts.

import (
	"context"

	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/dispatch"
	"github.com/toolhostd/toolhostd/internal/idem"
	"github.com/toolhostd/toolhostd/internal/message"
	"github.com/toolhostd/toolhostd/internal/metrics"
)

// Messages is the daemon's message router: the control API, the CLI and
// the protocol endpoints send through it.
func (d *Daemon) Messages() *message.Router { return d.router }

// newRouter is the daemon's router, delivering to its agents.
func (d *Daemon) newRouter(cfg *config.Config) *message.Router {
	o := message.Options{Retention: cfg.Host.MessageRetention.Duration, Audit: d.sys.Audit, Log: d.opts.Log}
	if t := d.sys.Tracing; t.On() {
		o.Tracer, o.CaptureContent = t.Provider(), t.CaptureContent()
	}
	if m := d.metrics; m != nil {
		o.Observe = func(r message.Record) {
			m.ObserveMessage(metrics.Message{Agent: r.Agent, Sender: r.Sender, Outcome: r.Outcome, Duration: r.Duration,
				FirstDelta: r.FirstDelta, HasFirstDelta: r.HasFirstDelta, Refused: r.Refused})
		}
	}
	if c := d.cluster; c != nil { // idempotency keys across the hosts
		c.ledger = idem.New(idem.Options{Client: c.cli, Prefix: c.cfg.Prefix, Host: c.cfg.Name,
			TTL: o.Retention, Timeout: c.ttl / 2, Log: d.opts.Log})
		o.Ledger = c.ledger
	}
	do := dispatch.Options{Agents: d.sup, Peer: d.peer}
	if c := d.cluster; c != nil {
		do.Node, do.Forwarder = c.node, c.fwd
	}
	return message.NewRouter(dispatch.New(do), o)
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
