package daemon

import (
	"context"
	"slices"

	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/control"
)

// Tooling session states, as control.ToolingStatus reports them.
const (
	toolingConnecting   = "connecting" // never connected yet
	toolingConnected    = "connected"
	toolingDisconnected = "disconnected" // connected before, reconnecting now
)

// Agents reports every configured agent, sorted by name.
func (d *Daemon) Agents() []control.AgentStatus {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]control.AgentStatus, 0, len(d.agents))
	for _, name := range sortedKeys(d.agents) {
		r := d.agents[name]
		if !d.listed(r) {
			continue
		}
		st := control.AgentStatus{
			Name:      name,
			Component: r.cfg.Component,
			Toolings:  slices.Clone(r.cfg.Toolings),
			State:     r.state,
			Restarts:  r.restarts,
			Traps:     r.traps,
			LastError: r.lastErr,
			Since:     r.since,
		}
		if st.Toolings == nil {
			st.Toolings = []string{}
		}
		if r.inst != nil {
			st.Inbox = r.inst.Inbox().Pending()
		}
		st.Instances = instancesOf(r)
		out = append(out, st)
	}
	return out
}

// Configured reports whether name is an agent of the config, also one
// that another cluster host runs (Agents lists only this host's).
func (d *Daemon) Configured(name string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.agents[name]
	return ok
}

// Toolings reports every configured tooling, sorted by name.
func (d *Daemon) Toolings() []control.ToolingStatus {
	d.sampleToolings(context.Background(), false)
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]control.ToolingStatus, 0, len(d.toolings))
	for _, name := range sortedKeys(d.toolings) {
		r := d.toolings[name]
		ts := control.ToolingStatus{
			Name:          name,
			Kind:          r.t.Kind(),
			Transport:     r.cfg.Transport,
			ConnectedOnce: r.connectedOnce,
			Tools:         r.tools,
			State:         toolingConnecting,
		}
		if s, ok := status(r.t); ok {
			st := s.Status()
			switch {
			case st.Connected:
				ts.State = toolingConnected
			case r.connectedOnce:
				ts.State = toolingDisconnected
			}
			ts.ServerName, ts.ServerVersion = st.ServerName, st.ServerVersion
			ts.InFlight, ts.Restarts, ts.LastError = st.InFlight, st.Restarts, st.LastError
			ts.Progress = st.ProgressNotifications
		}
		out = append(out, ts)
	}
	return out
}

// isStarted reports whether the first instance of every agent was
// started (or could not be).
func (d *Daemon) isStarted() bool {
	select {
	case <-d.started:
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
	d.sampleToolings(context.Background(), false)
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, r := range d.toolings {
		if !r.connectedOnce {
			return false
		}
	}
	return true
}

// agentOp looks name up for an operation (opMu held): ErrNotServing,
// ErrStopping or control.ErrUnknownAgent when it cannot be done.
func (d *Daemon) agentOp(name string) (*agentRec, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case d.stopping:
		return nil, ErrStopping
	case d.root == nil:
		return nil, ErrNotServing
	}
	r := d.agents[name]
	if r == nil {
		return nil, control.ErrUnknownAgent
	}
	return r, nil
}

// StartAgent starts a stopped, exited or failed agent afresh (backoff
// reset); an agent that runs or waits to be restarted is left alone.
func (d *Daemon) StartAgent(name string) error {
	d.opMu.Lock()
	defer d.opMu.Unlock()
	r, err := d.agentOp(name)
	if err != nil {
		return err
	}
	if err := d.checkOwner(name); err != nil {
		return err
	}
	d.mu.Lock()
	if r.hasSup && !r.final {
		d.mu.Unlock()
		return nil
	}
	d.mu.Unlock()
	d.stopRec(r, stateStopped) // an exited or failed agent's empty supervisor
	d.mu.Lock()
	defer d.mu.Unlock()
	r.delay, r.backoff = 0, r.cfg.RestartBackoff.Initial.Duration
	d.startLocked(r, nil)
	d.log.Info("agent started by request", zap.String("agent", name))
	return nil
}

// StopAgent stops the agent (shutdown envelope, stop grace, interrupt) and
// waits for it; it stays stopped until started again or the config changes.
func (d *Daemon) StopAgent(name string) error {
	d.opMu.Lock()
	defer d.opMu.Unlock()
	r, err := d.agentOp(name)
	if err != nil {
		return err
	}
	d.stopRec(r, stateStopped)
	d.mu.Lock()
	r.final = false
	r.setState(stateStopped)
	d.mu.Unlock()
	d.log.Info("agent stopped by request", zap.String("agent", name))
	return nil
}

// RestartAgent stops the agent as StopAgent does and starts it again at
// once; the restart counts in its restarts.
func (d *Daemon) RestartAgent(name string) error {
	d.opMu.Lock()
	defer d.opMu.Unlock()
	r, err := d.agentOp(name)
	if err != nil {
		return err
	}
	if err := d.checkOwner(name); err != nil {
		return err
	}
	d.stopRec(r, stateStopped)
	d.mu.Lock()
	defer d.mu.Unlock()
	r.delay, r.backoff = 0, r.cfg.RestartBackoff.Initial.Duration
	d.startLocked(r, nil)
	d.log.Info("agent restarted by request", zap.String("agent", name))
	return nil
}
