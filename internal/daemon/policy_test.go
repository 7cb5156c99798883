package daemon

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/control"
)

// TestRestartPolicies runs one agent per policy and outcome in one daemon
// and checks what each policy made of it.
func TestRestartPolicies(t *testing.T) {
	type tc struct {
		name, component, restart, extra string
		// want: a final state with its counters, or restarting (restarts
		// climbing)
		restarting bool
		state      string
		traps      int
		lastErr    string
	}
	cases := []tc{
		{name: "ok-never", component: "ok", restart: "never", state: "exited"},
		{name: "ok-on-failure", component: "ok", restart: "on-failure", state: "exited"},
		{name: "ok-always", component: "ok", restart: "always", restarting: true},
		{name: "err-never", component: "err", restart: "never", state: "failed", lastErr: "agent says no"},
		{name: "err-on-failure", component: "err", restart: "on-failure", restarting: true, lastErr: "agent says no"},
		{name: "err-always", component: "err", restart: "always", restarting: true, lastErr: "agent says no"},
		{name: "trap-never", component: "trap", restart: "never", state: "failed", traps: 1, lastErr: "unreachable"},
		{name: "trap-on-failure", component: "trap", restart: "on-failure", restarting: true, lastErr: "unreachable"},
		{name: "timeout-never", component: "spin", restart: "never", extra: `limits = { run_timeout = "50ms" }`, state: "failed", traps: 1, lastErr: "run timeout"},
		// Bad config: not retried, whatever the policy.
		{name: "missing", component: "", restart: "always", state: "failed", lastErr: "no such file"},
		{name: "norun", component: "norun", restart: "always", state: "failed", lastErr: "no export `run"},
	}
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString(header(t))
	for _, c := range cases {
		comp := filepath.Join(dir, "missing.wasm")
		if c.component != "" {
			comp = wat(t, c.component)
		}
		fmt.Fprintf(&b, "[agent.%s]\ncomponent = %q\nrestart = %q\nrestart_backoff = { initial = \"10ms\", max = \"40ms\" }\n%s\n\n", c.name, comp, c.restart, c.extra)
	}
	r := serve(t, writeConfig(t, dir, b.String()))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got control.AgentStatus
			if c.restarting {
				got = r.waitAgent(t, c.name, "3 restarts", func(a control.AgentStatus) bool { return a.Restarts >= 3 })
				if c.component == "trap" && got.Traps < 3 {
					t.Errorf("traps %d after %d restarts", got.Traps, got.Restarts)
				}
			} else {
				got = r.waitAgent(t, c.name, c.state, func(a control.AgentStatus) bool { return a.State == c.state })
				if got.Restarts != 0 || got.Traps != c.traps {
					t.Errorf("%+v: want restarts 0, traps %d", got, c.traps)
				}
			}
			if !strings.Contains(got.LastError, c.lastErr) || (c.lastErr == "" && got.LastError != "") {
				t.Errorf("last error %q, want one containing %q", got.LastError, c.lastErr)
			}
		})
	}
	// The final states stay final: nothing is retried behind our back. The
	// window is the check (no event announces a retry that does not come):
	// over seven restart backoffs of at most 40ms.
	time.Sleep(300 * time.Millisecond)
	for _, c := range cases {
		if got := r.agent(t, c.name); !c.restarting && (got.State != c.state || got.Restarts != 0) {
			t.Errorf("%s later: %+v", c.name, got)
		}
	}
}

// TestAgentOperations drives StartAgent, StopAgent and RestartAgent.
func TestAgentOperations(t *testing.T) {
	dir := t.TempDir()
	path := writeConfig(t, dir, header(t)+fmt.Sprintf(`
[agent.spinner]
component = %q
stop_grace = "100ms"

[agent.once]
component = %q
restart = "never"
`, wat(t, "spin"), wat(t, "ok")))
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	idle, err := New(path, cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := idle.StartAgent("spinner"); !errors.Is(err, ErrNotServing) {
		t.Errorf("StartAgent before Serve: %v", err)
	}
	if err := idle.Reload(); !errors.Is(err, ErrNotServing) {
		t.Errorf("Reload before Serve: %v", err)
	}
	if err := idle.Close(); err != nil {
		t.Fatal(err)
	}

	r := serve(t, path)
	first := r.waitAgent(t, "spinner", "running", isRunning)
	for _, op := range []func(string) error{r.d.StartAgent, r.d.StopAgent, r.d.RestartAgent} {
		if err := op("nobody"); !errors.Is(err, control.ErrUnknownAgent) {
			t.Errorf("operation on an unknown agent: %v", err)
		}
	}
	if err := r.d.StartAgent("spinner"); err != nil {
		t.Fatal(err)
	}
	if got := r.agent(t, "spinner"); !got.Since.Equal(first.Since) || got.Restarts != 0 {
		t.Errorf("StartAgent of a running agent touched it: %+v", got)
	}
	if err := r.d.StopAgent("spinner"); err != nil {
		t.Fatal(err)
	}
	if got := r.agent(t, "spinner"); got.State != "stopped" {
		t.Errorf("after StopAgent: %+v", got)
	}
	if err := r.d.StartAgent("spinner"); err != nil {
		t.Fatal(err)
	}
	second := r.waitAgent(t, "spinner", "running again", isRunning)
	if second.Restarts != 1 || !second.Since.After(first.Since) {
		t.Errorf("after StartAgent: %+v", second)
	}
	if err := r.d.RestartAgent("spinner"); err != nil {
		t.Fatal(err)
	}
	third := r.waitAgent(t, "spinner", "running after a restart", isRunning)
	if third.Restarts != 2 || !third.Since.After(second.Since) {
		t.Errorf("after RestartAgent: %+v", third)
	}

	r.waitAgent(t, "once", "exited", func(a control.AgentStatus) bool { return a.State == "exited" })
	if err := r.d.StartAgent("once"); err != nil {
		t.Fatal(err)
	}
	r.waitAgent(t, "once", "ran again", func(a control.AgentStatus) bool { return a.State == "exited" && a.Restarts == 1 })
}
