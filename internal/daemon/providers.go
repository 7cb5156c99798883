package daemon

import (
	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/contract"
	"github.com/toolhostd/toolhostd/internal/provider"
)

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
	l, err := d.sys.Limit(r.name, p, g)
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
// limits, budgets) through the agent's Limited, each request audited with
// its text where the grant has audit_arguments.
func (s *agentService) providerAccess() contract.ProviderAccess {
	return s.d.sys.ProviderAccess(s.r.name, s.cfg, func(name string, p provider.Provider, g *config.ProviderGrant) (provider.Provider, error) {
		return s.d.limited(s.r, name, p, g)
	})
}
