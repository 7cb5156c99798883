package daemon

import (
	"github.com/toolhostd/toolhostd/internal/metrics"
	"github.com/toolhostd/toolhostd/internal/pump"
)

// observeChats points the hub's model-request reports at the metrics.
func (d *Daemon) observeChats() {
	m := d.opts.metrics
	if m == nil {
		return
	}
	d.hub.SetChatObserver(func(r pump.ChatRecord) {
		m.ObserveChat(metrics.Chat{
			Agent: r.Agent, Provider: r.Provider, Model: r.Model, Outcome: r.Outcome,
			Duration: r.Duration, FirstToken: r.FirstToken, HasFirstToken: r.HasFirstToken,
			InputTokens: r.Usage.InputTokens, OutputTokens: r.Usage.OutputTokens,
		})
	})
}

// providerAccess is the agent's access to providers: until the config
// names the providers an agent may use, it may use none.
func (s *agentService) providerAccess() pump.ProviderAccess {
	return pump.ProviderAccess{Granted: func(string) bool { return false }}
}
