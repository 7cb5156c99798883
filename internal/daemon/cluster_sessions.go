package daemon

// Per-session agents in a cluster (issue 33): such an agent's service (its
// program and instances.Pool) runs on every host, and each session's
// instance on one: the holder of the session's key, or while there is
// none the session's placed host (rendezvous over (agent, session)),
// which claims the key before it starts the instance and releases it once
// the instance ended. A one-off message (no session) runs where it
// arrives. A fence halts these instances like the others.

import (
	"github.com/toolhostd/toolhostd/internal/config"
)

// perSession reports an agent whose instances are per session.
func isPerSession(a *config.Agent) bool { return a.Instances == config.InstancesPerSession }

// placedAgents are cfg's agents the cluster places whole (not the
// per-session ones, which run everywhere).
func placedAgents(cfg *config.Config) []string {
	var out []string
	for _, name := range sortedKeys(cfg.Agent) {
		if !isPerSession(cfg.Agent[name]) {
			out = append(out, name)
		}
	}
	return out
}

// onEveryHost are those of names (sorted) that every cluster host runs:
// the per-session agents.
func (d *Daemon) onEveryHost(names []string) []string {
	var out []string
	for _, name := range names {
		if isPerSession(d.g.Agents.Agent(name)) {
			out = append(out, name)
		}
	}
	return out
}

// lazyAgents are cfg's agents placed whole that start on their first
// message: their placed host claims them only then.
func lazyAgents(cfg *config.Config) []string {
	var out []string
	for _, name := range placedAgents(cfg) {
		if cfg.Agent[name].Start == config.StartOnMessage {
			out = append(out, name)
		}
	}
	return out
}
