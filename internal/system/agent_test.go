package system_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/contract"
	"github.com/toolhostd/toolhostd/internal/system"
)

// TestAgentConfig: serve's and run's instances get their host.AgentConfig
// from one constructor: the entry's lists, grants and limits for serve,
// its lists and grants with the flags' limits for run, defaults for a
// component the config does not name.
func TestAgentConfig(t *testing.T) {
	sys, _, _ := newSystem(t, fmt.Sprintf(`
[agent.a]
component = %q
providers = ["gpt"]
inbox_capacity = 7
stop_grace = "2s"
limits = { memory = "64MiB", fuel = 1000, run_timeout = "5s", log_rate = 3, log_burst = 4 }
`, "a.wasm"))
	a := sys.Config.Agent["a"]
	own := contract.ProviderAccess{Granted: func(string) bool { return false }}
	for _, c := range []struct {
		name  string
		agent system.Agent
		check func(t *testing.T, got hostConfig)
	}{
		{name: "serve: the entry", agent: system.Agent{Name: "a", Config: a}, check: func(t *testing.T, got hostConfig) {
			want := hostConfig{Inbox: 7, Memory: 64 << 20, Fuel: 1000, RunTimeout: 5 * time.Second, StopGrace: 2 * time.Second,
				LogRate: 3, LogBurst: 4, GrantsAll: false, GrantsGPT: true}
			if got != want {
				t.Errorf("got %+v\nwant %+v", got, want)
			}
		}},
		{name: "run: the flags' limits", agent: system.Agent{Name: "a", Config: a,
			RunLimits: &system.RunLimits{Timeout: time.Second, StopGrace: 3 * time.Second}}, check: func(t *testing.T, got hostConfig) {
			want := hostConfig{RunTimeout: time.Second, StopGrace: 3 * time.Second,
				LogRate: config.DefaultLogRate, LogBurst: config.DefaultLogBurst, GrantsGPT: true}
			if got != want {
				t.Errorf("got %+v\nwant %+v", got, want)
			}
		}},
		{name: "run: a file the config does not name", agent: system.Agent{Name: "x"}, check: func(t *testing.T, got hostConfig) {
			want := hostConfig{StopGrace: config.DefaultStopGrace, LogRate: config.DefaultLogRate, LogBurst: config.DefaultLogBurst,
				GrantsAll: true, GrantsGPT: true}
			if got != want {
				t.Errorf("got %+v\nwant %+v", got, want)
			}
		}},
		{name: "run: --provider replaces the list", agent: system.Agent{Name: "a", Config: a, Providers: &own,
			RunLimits: &system.RunLimits{}}, check: func(t *testing.T, got hostConfig) {
			if got.GrantsGPT {
				t.Error("the entry's providers list applied over --provider")
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			hc := sys.AgentConfig(c.agent)
			if hc.Name != c.agent.Name {
				t.Errorf("name %q", hc.Name)
			}
			if hc.OpenBucket != nil {
				t.Error("a system without a store gave the agent buckets")
			}
			got := hostConfig{Inbox: hc.Limits.InboxCapacity, Memory: hc.Limits.MemoryLimit, Fuel: hc.Limits.Fuel, RunTimeout: hc.Limits.RunTimeout,
				StopGrace: hc.Limits.StopGrace, LogRate: hc.Limits.LogRate, LogBurst: hc.Limits.LogBurst,
				GrantsAll: hc.Grants == nil, GrantsGPT: hc.Providers.Granted == nil || hc.Providers.Granted("gpt")}
			c.check(t, got)
		})
	}
}

// hostConfig is the comparable part of a host.AgentConfig.
type hostConfig struct {
	Inbox                 int
	Memory, Fuel          uint64
	RunTimeout, StopGrace time.Duration
	LogRate               float64
	LogBurst              int
	GrantsAll, GrantsGPT  bool
}
