package system

import (
	"context"
	"slices"

	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/audit"
	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/contract"
	"github.com/toolhostd/toolhostd/internal/provider"
	"github.com/toolhostd/toolhostd/internal/sampling"
	"github.com/toolhostd/toolhostd/internal/tooling"
	"github.com/toolhostd/toolhostd/internal/tooling/mcpclient"
)

// openAudit opens [host] audit_log, if set, and points the metrics at it.
func (s *System) openAudit() error {
	if s.Config.Host.AuditLog == "" {
		return nil
	}
	l, err := audit.Open(s.Config.Host.AuditLog, 0)
	if err != nil {
		return err
	}
	s.Audit = l
	if m := s.opts.Metrics; m != nil {
		m.AuditLog(l.Written, l.Dropped)
	}
	return nil
}

// RunAudit runs the audit writer until ctx ends; the returned channel is
// closed when it has written everything and closed the file (at once
// without an audit log).
func (s *System) RunAudit(ctx context.Context) <-chan struct{} {
	done := make(chan struct{})
	if s.Audit == nil {
		close(done)
		return done
	}
	go func() { defer close(done); s.Audit.Run(ctx) }()
	return done
}

// openProviders opens every [provider.*] (no request is made) and, with
// some, the token budgets kept in the state directory.
func (s *System) openProviders() error {
	cfg := s.Config
	if names := s.opts.Providers; names != nil {
		only := *cfg
		only.Provider = make(map[string]*config.Provider, len(names))
		for _, n := range names {
			if p := cfg.Provider[n]; p != nil {
				only.Provider[n] = p
			}
		}
		cfg = &only
	}
	reg, err := provider.OpenAll(cfg, s.log)
	if err != nil {
		return err
	}
	s.Providers = reg
	if len(cfg.Provider) > 0 && !s.opts.NoHost {
		if s.stores.budgets, err = provider.OpenBudgets(provider.BudgetsDir(s.Config.StateDir())); err != nil {
			return err
		}
	}
	return nil
}

// MakeToolings builds a tooling per config entry (not connected yet),
// each instrumented when the system has metrics, with its sampling
// answered through its provider. Reload makes the toolings it adds here.
func (s *System) MakeToolings(cfgs map[string]*config.Tooling) (map[string]tooling.Tooling, error) {
	opts := s.opts.ToolingOptions
	opts.SamplerFor = s.samplerFor
	reg, err := mcpclient.NewRegistry(cfgs, s.log, opts)
	if err != nil {
		return nil, err
	}
	out := make(map[string]tooling.Tooling, len(cfgs))
	for _, name := range reg.Names() {
		t, _ := reg.Get(name)
		if m := s.opts.Metrics; m != nil {
			t = m.Instrument(t)
		}
		out[name] = t
	}
	return out, nil
}

// samplerFor is the sampler of a tooling whose sampling table names a
// provider: its server's sampling/createMessage requests go to that
// provider's model (package sampling), each logged, audited and counted
// under the agent name "tooling:<name>". A provider the system did not
// open (one a reload added) leaves sampling unoffered until a restart.
func (s *System) samplerFor(cfg *config.Tooling) mcpclient.Sampler {
	p, ok := s.Providers.Get(cfg.Sampling.Provider)
	if !ok {
		s.log.Warn("sampling not offered: its provider is not open until toolhostd restarts",
			zap.String("tooling", cfg.Name), zap.String("provider", cfg.Sampling.Provider))
		return nil
	}
	opts := sampling.Options{Log: s.log, Audit: s.Audit}
	if m := s.opts.Metrics; m != nil {
		opts.Observer = m.ObserveChat
	}
	return sampling.New(p, cfg.Name, *cfg.Sampling, opts).CreateMessage
}

// Limit is p under agent's grant g on it ([agent.A.grants.P]: models,
// limits, token budgets kept in the system's budgets).
func (s *System) Limit(agent string, p provider.Provider, g *config.ProviderGrant) (*provider.Limited, error) {
	return provider.NewLimited(p, agent, g, provider.LimitOptions{Budgets: s.stores.budgets, Recorder: s.Recorder()})
}

// ProviderAccess is an agent's access to providers under its config: those
// of its providers list, each wrapped by wrap (the daemon keeps one
// Limited per agent and provider across runs; nil: a new Limit each get),
// each request audited with its text where the grant has audit_arguments.
func (s *System) ProviderAccess(name string, cfg *config.Agent,
	wrap func(name string, p provider.Provider, g *config.ProviderGrant) (provider.Provider, error)) contract.ProviderAccess {
	names, grants := cfg.Providers, cfg.ProviderGrants
	if wrap == nil {
		wrap = func(pname string, p provider.Provider, g *config.ProviderGrant) (provider.Provider, error) {
			return s.Limit(name, p, g)
		}
	}
	return contract.ProviderAccess{
		Granted: func(n string) bool { return slices.Contains(names, n) },
		Wrap: func(n string, p provider.Provider) (provider.Provider, error) {
			return wrap(n, p, grants[n])
		},
		AuditMessages: func(n string) bool {
			g := grants[n]
			return g != nil && g.AuditArguments
		},
	}
}
