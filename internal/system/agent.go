package system

import (
	"time"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/contract"
	"github.com/toolhostd/toolhostd/internal/host"
	"github.com/toolhostd/toolhostd/internal/kv"
	"github.com/toolhostd/toolhostd/internal/policy"
	"github.com/toolhostd/toolhostd/internal/provider"
)

// Agent is what one instance of an agent gets beyond its [agent.X] entry:
// the input of AgentConfig, which serve's supervisor and run both use.
type Agent struct {
	// Name is the agent's name (its WASI argv[0], its buckets' owner).
	Name string
	// Config is its [agent.X] entry; nil: a component the config does not
	// name (toolhostd run of a file), which gets the defaults.
	Config *config.Agent
	// Session is a per-session instance's session ("" for the others): its
	// open("session") is that session's own bucket.
	Session string
	// Env is the guest's environment.
	Env map[string]string
	// Policy narrows what it may do on its toolings; nil: no narrowing.
	Policy *policy.Agent
	// Grants, if set, are the toolings it gets instead of Config's
	// toolings list (run's --grant); nil without Config: every tooling.
	Grants func(tooling string) bool
	// Providers, if set, is its provider access instead of Config's
	// providers under their grants (run's --provider).
	Providers *contract.ProviderAccess
	// Limit, if set, is p under the agent's grant g (serve keeps one
	// provider.Limited per agent and provider across runs); nil: a new
	// System.Limit at each get.
	Limit func(name string, p provider.Provider, g *config.ProviderGrant) (provider.Provider, error)
	// Messaging is how it sends messages; the zero value: it cannot.
	Messaging contract.Messaging
	// RunLimits, if set, replace the entry's limits (memory, fuel, run
	// timeout), inbox capacity, stop grace and log rate: toolhostd run
	// takes Config's lists and grants only, and its flags say the rest.
	RunLimits *RunLimits
}

// RunLimits are the limits of an instance that run starts.
type RunLimits struct {
	Timeout, StopGrace time.Duration
}

// AgentConfig is the host.AgentConfig of one instance of a: its toolings,
// providers, policy and limits as its config entry says, the engine's fuel
// limit where the engine meters fuel, its key-value buckets in the
// system's store, and the system's metrics' hooks. Serve and run both
// build their instances' config here; a caller narrows what its flags say
// (run's --timeout and --grace) on the value returned.
func (s *System) AgentConfig(a Agent) host.AgentConfig {
	c := host.AgentConfig{
		Name:      a.Name,
		Grants:    a.Grants,
		Policy:    a.Policy,
		Env:       a.Env,
		Messaging: a.Messaging,
		Limits: host.AgentLimits{
			StopGrace: config.DefaultStopGrace,
			LogRate:   config.DefaultLogRate,
			LogBurst:  config.DefaultLogBurst,
		},
	}
	if ac := a.Config; ac != nil {
		if c.Grants == nil {
			c.Grants = toolingSet(ac.Toolings)
		}
		c.Providers = s.ProviderAccess(a.Name, ac, a.Limit)
	}
	if l := a.RunLimits; l != nil {
		c.Limits.RunTimeout, c.Limits.StopGrace = l.Timeout, l.StopGrace
	} else if ac := a.Config; ac != nil {
		c.Limits.InboxCapacity = ac.InboxCapacity
		c.Limits.MemoryLimit = uint64(ac.Limits.Memory)
		if s.MetersFuel() {
			c.Limits.Fuel = ac.Limits.Fuel
		}
		c.Limits.RunTimeout = ac.Limits.RunTimeout.Duration
		c.Limits.StopGrace = ac.StopGrace.Duration
		c.Limits.LogRate, c.Limits.LogBurst = ac.Limits.LogRate, ac.Limits.LogBurst
	}
	if a.Providers != nil {
		c.Providers = *a.Providers
	}
	if svc := s.KV; svc != nil {
		var pol kv.Policy
		if a.Config != nil {
			pol = kv.PolicyOf(a.Config)
		}
		name, session := a.Name, a.Session
		c.OpenBucket = func(identifier string) (*kv.Bucket, error) { return svc.Open(name, session, pol, identifier) }
	}
	if m := s.opts.Metrics; m != nil {
		name := a.Name
		c.OnStarted = func(d time.Duration) { m.AgentInstantiated(name, d) }
		c.Limits.OnLogDropped = func() { m.AgentLogDropped(name) }
	}
	return c
}

// MetersFuel reports whether the system's engine meters fuel (fuel
// metering is an engine setting: a reload cannot turn it on).
func (s *System) MetersFuel() bool {
	if f := s.opts.Fuel; f != nil {
		return *f
	}
	return needsFuel(s.Config)
}

// toolingSet grants the named toolings.
func toolingSet(names []string) func(string) bool {
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	return func(n string) bool { return set[n] }
}
