package daemon

import (
	"github.com/toolhostd/toolhostd/internal/control"
)

// Agents reports every configured agent, sorted by name (in a cluster,
// those this host holds or still runs), a durable one with what its
// oplogs hold (oplog.go).
func (d *Daemon) Agents() []control.AgentStatus { return d.withOplogs(d.g.Agents.Statuses(d.listed)) }

// Configured reports whether name is an agent of the config, also one
// that another cluster host runs (Agents lists only this host's).
func (d *Daemon) Configured(name string) bool { return d.g.Agents.Configured(name) }

// Toolings reports every configured tooling, sorted by name.
func (d *Daemon) Toolings() []control.ToolingStatus { return d.tools.statuses() }

// isStarted reports whether the first instance of every agent was
// started (or could not be).
func (d *Daemon) isStarted() bool {
	select {
	case <-d.g.Agents.Started():
		return true
	default:
		return false
	}
}

// Ready reports whether the first instance of every agent was started (or
// could not be: its component did not load) and every tooling has
// connected at least once. systemd's READY=1 waits for the same.
func (d *Daemon) Ready() bool {
	if !d.isStarted() || !d.clusterReady() {
		return false
	}
	return d.tools.connectedOnce()
}

// StartAgent starts a stopped, exited or failed agent afresh (backoff
// reset); an agent that runs or waits to be restarted is left alone.
func (d *Daemon) StartAgent(name string) error {
	d.opMu.Lock()
	defer d.opMu.Unlock()
	if err := d.g.Agents.Check(name); err != nil {
		return err
	}
	if err := d.checkOwner(name); err != nil {
		return err
	}
	_, err := d.g.Agents.Start(name, "agent started by request")
	return err
}

// StopAgent stops the agent (shutdown envelope, stop grace, interrupt) and
// waits for it; it stays stopped until started again or the config changes.
func (d *Daemon) StopAgent(name string) error {
	d.opMu.Lock()
	defer d.opMu.Unlock()
	return d.g.Agents.Stop(name)
}

// RestartAgent stops the agent as StopAgent does and starts it again at
// once; the restart counts in its restarts.
func (d *Daemon) RestartAgent(name string) error {
	d.opMu.Lock()
	defer d.opMu.Unlock()
	if err := d.g.Agents.Check(name); err != nil {
		return err
	}
	if err := d.checkOwner(name); err != nil {
		return err
	}
	return d.g.Agents.Restart(name)
}

// ControlServer is the control API over this daemon as its config's
// [host] says (control_socket, control_listen, control_token), built with
// the graph (system.ServeGraph.Control). The caller serves it (Serve
// announces READY only once it listens: Options.ReadyGate).
func (d *Daemon) ControlServer() *control.Server { return d.g.Control }
