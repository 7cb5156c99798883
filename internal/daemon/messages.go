package daemon

// Messages to the daemon's agents (issue 32): the router, delivering
// through the dispatcher (package dispatch) to the supervisor's agents,
// the peers and, in a cluster, the other hosts.

import (
	"context"

	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/message"
)

// Messages is the daemon's message router: the control API, the CLI and
// the protocol endpoints send through it.
func (d *Daemon) Messages() *message.Router { return d.g.Router }

// settleMessages waits, at most half the lease TTL, until the cluster's
// idempotency ledger recorded the outcome of every message that ended
// here: an agent stopped for a hand-over or a leave has its messages'
// outcomes recorded before another host takes it.
func (d *Daemon) settleMessages() {
	if d.cluster == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), d.g.Cluster.Config.LeaseTTL.Duration/2)
	defer cancel()
	if err := d.g.Router.Settle(ctx); err != nil {
		d.log.Warn("idempotency keys not recorded before the hand over", zap.Error(err))
	}
}
