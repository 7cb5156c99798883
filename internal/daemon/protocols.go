package daemon

// The protocol endpoints (issue 35) are package endpoints': the daemon
// serves them with its agents, applies a reload's exposure and stops them
// first at its shutdown.

// ProtocolAddrs are the bound addresses of the protocol endpoints (for
// tests with port 0).
func (d *Daemon) ProtocolAddrs() []string { return d.g.Endpoints.Addrs() }
