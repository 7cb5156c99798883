package daemon

import (
	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/contract"
	"github.com/toolhostd/toolhostd/internal/host"
	"github.com/toolhostd/toolhostd/internal/policy"
	"github.com/toolhostd/toolhostd/internal/supervisor"
	"github.com/toolhostd/toolhostd/internal/system"
)

// instanceConfig is the host.AgentConfig of one instance the supervisor
// starts, as system builds every command's: with the agent's policy and
// Limited providers, the router to send through, and the stop grace
// capped in a cluster.
func (d *Daemon) instanceConfig(in supervisor.Instance) host.AgentConfig {
	c := d.sys.AgentConfig(system.Agent{
		Name: in.Agent, Config: in.Config, Session: in.Session, Env: in.Env, Policy: in.Policy,
		Limit: in.Limit, Messaging: d.messaging(in.Config),
	})
	c.StopGrace = d.stopGrace(c.StopGrace)
	return c
}

// messaging is how an instance of the agent a sends messages.
func (d *Daemon) messaging(a *config.Agent) contract.Messaging {
	globs := make([]policy.Pattern, len(a.SendsTo))
	for i, g := range a.SendsTo {
		globs[i] = policy.Compile(g)
	}
	return contract.Messaging{
		Router: d.router,
		SendsTo: func(to string) bool {
			for _, g := range globs {
				if g.Match(to) {
					return true
				}
			}
			return false
		},
		AuditContent: a.AuditArguments,
	}
}
