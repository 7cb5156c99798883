package daemon

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/metrics"

	"github.com/toolhostd/toolhostd/internal/testenv"
)

// TestIntensityLimit crash-loops an agent fast enough to trip its
// sub-supervisor's intensity limit: that agent is paused, its spinning
// sibling is not touched.
func TestIntensityLimit(t *testing.T) {
	dir := t.TempDir()
	r := serve(t, writeConfig(t, dir, header(t)+fmt.Sprintf(`
[agent.crasher]
component = %q
restart_backoff = { initial = "1ms", max = "300ms" }

[agent.spinner]
component = %q
stop_grace = "50ms"
`, wat(t, "trap"), wat(t, "spin"))))
	spinner := r.waitAgent(t, "spinner", "running", isRunning)
	testenv.Eventually(t, 30*time.Second, "the crasher's supervisor to back off", func() bool {
		for _, e := range r.logs.FilterMessage("supervisor event").All() {
			if ev, _ := e.ContextMap()["event"].(string); strings.Contains(ev, "agent/crasher: Entering the backoff state") {
				return true
			}
		}
		return false
	})
	r.waitAgent(t, "crasher", "restarted after the pause", func(a control.AgentStatus) bool { return a.Restarts >= 7 })
	if got := r.agent(t, "spinner"); got.State != "running" || got.Restarts != 0 || !got.Since.Equal(spinner.Since) {
		t.Errorf("the sibling was touched: %+v", got)
	}
	for _, e := range r.logs.FilterMessage("supervisor event").All() {
		if ev, _ := e.ContextMap()["event"].(string); strings.Contains(ev, "agent/spinner") || strings.Contains(ev, "toolhostd: Entering") {
			t.Errorf("supervisor event beyond the crasher: %s", ev)
		}
	}
}

// TestCrashLoopingTooling serves a tooling whose server exits at once
// beside a working one: the broken one reconnects with backoff, the working
// one and the agents are not held up; Ready stays false.
func TestCrashLoopingTooling(t *testing.T) {
	dir := t.TempDir()
	r := serve(t, writeConfig(t, dir, header(t)+goTooling("gosrv", filepath.Join(dir, "gosrv.pid"), "")+fmt.Sprintf(`
[tooling.broken]
command = "false"
restart = { initial_backoff = "10ms", max_backoff = "50ms" }

[agent.caller]
component = %q
toolings = ["gosrv", "broken"]
input = %q
restart = "always"
restart_backoff = { initial = "10ms", max = "50ms" }
`, testenv.Agent(t, "test-agents", "probe"), probeInput(t,
		map[string]any{"op": "get", "name": "gosrv", "as": "g"},
		map[string]any{"op": "call-tool-blocking", "h": "g", "tool": "echo", "args": map[string]any{"text": "fine"}},
	))))
	testenv.Eventually(t, 60*time.Second, "the broken tooling's restarts", func() bool { return r.tooling(t, "broken").Restarts >= 3 })
	if ts := r.tooling(t, "broken"); ts.ConnectedOnce || ts.State != "connecting" || ts.LastError == "" {
		t.Errorf("broken: %+v", ts)
	}
	testenv.Eventually(t, 60*time.Second, "gosrv connected", func() bool { return r.tooling(t, "gosrv").State == "connected" })
	r.waitAgent(t, "caller", "3 runs", func(a control.AgentStatus) bool { return a.Restarts >= 3 })
	out, _ := r.output("caller")
	var steps []struct{ OK json.RawMessage }
	var res struct{ Name, Value string }
	err := json.Unmarshal([]byte(out), &steps)
	if err == nil && len(steps) == 2 {
		err = json.Unmarshal(steps[1].OK, &res)
	}
	if err != nil || res.Name != "echo" || !strings.Contains(res.Value, `"text":"fine"`) {
		t.Errorf("the caller's call through gosrv: %q (%v)", out, err)
	}
	if r.d.Ready() {
		t.Error("Ready with a tooling that never connected")
	}
}

// TestFuel runs a fuel-limited spinner beside an unlimited agent on the
// metering engine.
func TestFuel(t *testing.T) {
	dir := t.TempDir()
	r := serve(t, writeConfig(t, dir, header(t)+fmt.Sprintf(`
[agent.fueled]
component = %q
restart = "never"
limits = { fuel = 100000 }

[agent.free]
component = %q
restart = "never"
`, wat(t, "spin"), wat(t, "ok"))))
	got := r.waitAgent(t, "fueled", "failed", func(a control.AgentStatus) bool { return a.State == "failed" })
	if got.Traps != 1 || !strings.Contains(got.LastError, "fuel") {
		t.Errorf("fueled: %+v", got)
	}
	if got := r.waitAgent(t, "free", "exited", func(a control.AgentStatus) bool { return a.State == "exited" }); got.LastError != "" {
		t.Errorf("free: %+v", got)
	}
}

// TestMetrics serves with metrics: tool calls through an instrumented
// tooling and agent traps are counted, and a reload that removes an agent
// drops its series.
func TestMetrics(t *testing.T) {
	dir := t.TempDir()
	tool := goTooling("gosrv", filepath.Join(dir, "gosrv.pid"), "")
	caller := fmt.Sprintf(`
[agent.caller]
component = %q
toolings = ["gosrv"]
input = %q
restart = "never"
`, testenv.Agent(t, "test-agents", "probe"), probeInput(t,
		map[string]any{"op": "get", "name": "gosrv", "as": "g"},
		map[string]any{"op": "call-tool-blocking", "h": "g", "tool": "echo", "args": map[string]any{"text": "counted"}},
	))
	crasher := fmt.Sprintf("[agent.crasher]\ncomponent = %q\nrestart_backoff = { initial = \"10ms\", max = \"50ms\" }\n", wat(t, "trap"))
	path := writeConfig(t, dir, header(t)+tool+caller+crasher)
	r := serve(t, path, Options{Metrics: true})
	m := r.d.Metrics()
	r.waitAgent(t, "caller", "exited", func(a control.AgentStatus) bool { return a.State == "exited" })
	r.waitAgent(t, "crasher", "2 traps", func(a control.AgentStatus) bool { return a.Traps >= 2 })

	value := func(name string, labels map[string]string) (float64, bool) {
		t.Helper()
		return metricValue(t, m, name, labels)
	}
	if v, _ := value("toolhostd_tooling_calls_total", map[string]string{"tooling": "gosrv", "tool": "echo", "outcome": "ok"}); v != 1 {
		t.Errorf("gosrv echo calls: %v, want 1", v)
	}
	if v, _ := value("toolhostd_agent_traps_total", map[string]string{"agent": "crasher"}); v < 2 {
		t.Errorf("crasher traps: %v, want at least 2", v)
	}
	if v, _ := value("toolhostd_agent_instantiate_duration_seconds", map[string]string{"agent": "caller"}); v != 1 {
		t.Errorf("caller instantiations observed: %v, want 1", v)
	}

	writeConfig(t, dir, header(t)+tool+caller)
	if err := r.d.Reload(); err != nil {
		t.Fatal(err)
	}
	if v, ok := value("toolhostd_agent_traps_total", map[string]string{"agent": "crasher"}); ok {
		t.Errorf("the removed agent's traps series is still there (%v)", v)
	}
}

func hasLabel(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue() == value
		}
	}
	return false
}

// metricValue is the value of the first series of the family name whose
// labels include labels: a counter's or gauge's value, a histogram's count.
func metricValue(t *testing.T, m *metrics.Metrics, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	metric:
		for _, mt := range f.GetMetric() {
			for k, v := range labels {
				if !hasLabel(mt, k, v) {
					continue metric
				}
			}
			if c := mt.GetCounter(); c != nil {
				return c.GetValue(), true
			}
			if h := mt.GetHistogram(); h != nil {
				return float64(h.GetSampleCount()), true
			}
			return mt.GetGauge().GetValue(), true
		}
	}
	return 0, false
}
