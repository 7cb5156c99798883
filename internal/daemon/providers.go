package daemon

import (
	"slices"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/metrics"
	"github.com/toolhostd/toolhostd/internal/provider"
	"github.com/toolhostd/toolhostd/internal/pump"
)

// openProviders opens every [provider.*] of cfg (no request is made) and
// serves them to the agents through the hub; with some, the token budgets
// kept in the state directory.
func (d *Daemon) openProviders(cfg *config.Config) error {
	reg, err := provider.OpenAll(cfg, d.baseLog)
	if err != nil {
		return err
	}
	d.providers = reg
	d.hub.SetProviders(reg.Get)
	if len(cfg.Provider) > 0 {
		if d.budgets, err = provider.OpenBudgets(provider.BudgetsDir(cfg.StateDir())); err != nil {
			_ = reg.Close()
			return err
		}
	}
	return nil
}

// limited is the agent's provider name under its grant on it: one
// provider.Limited per agent and provider, kept across the agent's runs
// (its running requests and rate bucket; the token counters are the
// budgets'), its grant updated to the current one.
func (d *Daemon) limited(r *agentRec, name string, p provider.Provider, g *config.ProviderGrant) (provider.Provider, error) {
	r.limMu.Lock()
	defer r.limMu.Unlock()
	if l := r.limited[name]; l != nil {
		l.Update(g)
		return l, nil
	}
	l, err := provider.NewLimited(p, r.name, g, provider.LimitOptions{Budgets: d.budgets, Recorder: d.recorder()})
	if err != nil {
		return nil, err
	}
	if r.limited == nil {
		r.limited = map[string]*provider.Limited{}
	}
	r.limited[name] = l
	return l, nil
}

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

// providerAccess is the agent's access to providers: those of its
// providers list, each under its grant ([agent.A.grants.P]: models,
// limits, budgets), each request audited with its text where the grant has
// audit_arguments.
func (s *agentService) providerAccess() pump.ProviderAccess {
	names, grants := s.cfg.Providers, s.cfg.ProviderGrants
	return pump.ProviderAccess{
		Granted: func(name string) bool { return slices.Contains(names, name) },
		Wrap: func(name string, p provider.Provider) (provider.Provider, error) {
			return s.d.limited(s.r, name, p, grants[name])
		},
		AuditMessages: func(name string) bool {
			g := grants[name]
			return g != nil && g.AuditArguments
		},
	}
}
