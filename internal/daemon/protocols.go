package daemon

// The protocol endpoints (issue 35) are package endpoints': the daemon
// serves them with its agents, applies a reload's exposure and stops them
// first at its shutdown.

import "github.com/toolhostd/toolhostd/internal/peer"

// stopEndpoints stops the protocol endpoints (idempotent; a daemon whose
// New failed has none).
func (d *Daemon) stopEndpoints() {
	if d.endpoints != nil {
		d.endpoints.Close()
	}
}

// peer is the [peer.<name>] of that name, if configured (the dispatcher
// asks it once New made the endpoints).
func (d *Daemon) peer(name string) (*peer.Peer, bool) {
	if d.endpoints == nil {
		return nil, false
	}
	return d.endpoints.Peer(name)
}

// ProtocolAddrs are the bound addresses of the protocol endpoints (for
// tests with port 0).
func (d *Daemon) ProtocolAddrs() []string { return d.endpoints.Addrs() }
