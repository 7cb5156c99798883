package daemon

import (
	"slices"

	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/contract"
	"github.com/toolhostd/toolhostd/internal/metrics"
	"github.com/toolhostd/toolhostd/internal/provider"
	"github.com/toolhostd/toolhostd/internal/provider/sampling"
	"github.com/toolhostd/toolhostd/internal/tooling/mcpclient"
)

// openProviders opens every [provider.*] of cfg (no request is made) and,
// with some, the token budgets kept in the state directory. It runs before
// the toolings are made: a tooling's sampling is answered by one
// (samplerFor). serveProviders hands them to the agents.
func (d *Daemon) openProviders(cfg *config.Config) error {
	reg, err := provider.OpenAll(cfg, d.baseLog)
	if err != nil {
		return err
	}
	d.providers = reg
	if len(cfg.Provider) > 0 {
		if d.budgets, err = provider.OpenBudgets(provider.BudgetsDir(cfg.StateDir())); err != nil {
			_ = reg.Close()
			d.providers = nil
			return err
		}
	}
	return nil
}

// agentOptions are what every agent's contract.Agent is made with: the
// providers, the audit log and, with metrics, the chat observer.
func (d *Daemon) agentOptions() []contract.Option {
	opts := []contract.Option{contract.WithProviders(d.providers.Get), contract.WithAudit(d.audit)}
	if m := d.opts.metrics; m != nil {
		opts = append(opts, contract.WithChatObserver(func(r contract.ChatRecord) {
			m.ObserveChat(metrics.Chat{
				Agent: r.Agent, Provider: r.Provider, Model: r.Model, Outcome: r.Outcome,
				Duration: r.Duration, FirstToken: r.FirstToken, HasFirstToken: r.HasFirstToken,
				InputTokens: r.Usage.InputTokens, OutputTokens: r.Usage.OutputTokens,
			})
		}))
	}
	return opts
}

// samplerFor is the sampler of a tooling whose sampling table names a
// provider: its server's sampling/createMessage requests go to that
// provider's model (package sampling), each logged, audited and counted
// under the agent name "tooling:<name>". A provider the running daemon did
// not open (one a reload added) leaves sampling unoffered until a restart.
func (d *Daemon) samplerFor(cfg *config.Tooling) mcpclient.Sampler {
	p, ok := d.providers.Get(cfg.Sampling.Provider)
	if !ok {
		d.log.Warn("sampling not offered: its provider is not open until toolhostd restarts",
			zap.String("tooling", cfg.Name), zap.String("provider", cfg.Sampling.Provider))
		return nil
	}
	opts := []sampling.Option{sampling.WithLog(d.log), sampling.WithAudit(d.audit)}
	if m := d.opts.metrics; m != nil {
		opts = append(opts, sampling.WithObserver(m.ObserveChat))
	}
	return sampling.New(p, cfg.Name, *cfg.Sampling, opts...).CreateMessage
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

// providerAccess is the agent's access to providers: those of its
// providers list, each under its grant ([agent.A.grants.P]: models,
// limits, budgets), each request audited with its text where the grant has
// audit_arguments.
func (s *agentService) providerAccess() contract.ProviderAccess {
	names, grants := s.cfg.Providers, s.cfg.ProviderGrants
	return contract.ProviderAccess{
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
