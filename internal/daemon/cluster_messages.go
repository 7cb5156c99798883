package daemon

// Messages in a cluster (issue 33): the forwarder the dispatcher sends a
// message for an agent another host holds through (package dispatch).

import (
	"fmt"

	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/forward"
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
	return address, forward.New(forward.Options{Self: c.Name, Token: token, Log: d.opts.Log}), nil
}
