package daemon

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/control"

	"github.com/toolhostd/toolhostd/internal/testenv"
)

func probeInput(t testing.TB, steps ...map[string]any) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"steps": steps})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestServe runs toolings and agents of every kind together: a JS agent
// that calls server-everything and exits, a probe whose in-flight call dies
// with its server process, a probe waiting on a long call at shutdown, a
// trapping agent restarted by its policy and a spinning sibling that is
// never disturbed; then the shutdown, bounded by the grace, leaves no
// server process behind.
func TestServe(t *testing.T) {
	dir := t.TempDir()
	pidfile := filepath.Join(dir, "gosrv.pid")
	cfg := header(t) + goTooling("gosrv", pidfile, "") + fmt.Sprintf(`
[tooling.everything]
command = "node"
args = [%q, "stdio"]
connect_timeout = "30s"

[agent.hello]
component = %q
toolings = ["everything"]
input = %q
restart = "never"

[agent.caller]
component = %q
toolings = ["gosrv"]
input = %q
restart = "never"

[agent.waiter]
component = %q
toolings = ["everything"]
input = %q
restart = "never"
stop_grace = "5s"

[agent.crasher]
component = %q
restart = "on-failure"
restart_backoff = { initial = "20ms", max = "100ms" }

[agent.spinner]
component = %q
restart = "never"
stop_grace = "200ms"
env = { MODE = "test" }
`,
		everythingEntry(t),
		testenv.Agent(t, "agents", "hello"),
		`{"toolings":["everything","gosrv"],"call":{"tooling":"everything","tool":"echo","arguments":{"message":"hi from serve"}}}`,
		testenv.Agent(t, "test-agents", "probe"),
		probeInput(t,
			map[string]any{"op": "get", "name": "everything"},
			map[string]any{"op": "get", "name": "gosrv", "as": "g"},
			map[string]any{"op": "call-tool", "h": "g", "tool": "slow", "args": map[string]any{"tag": "doomed"}, "as": "slow"},
			map[string]any{"op": "recv-until", "id": "slow", "timeout": 60000},
		),
		testenv.Agent(t, "test-agents", "probe"),
		probeInput(t,
			map[string]any{"op": "get", "name": "everything", "as": "e"},
			map[string]any{"op": "call-tool", "h": "e", "tool": "trigger-long-running-operation", "args": map[string]any{"duration": 120, "steps": 2}, "as": "long"},
			map[string]any{"op": "recv-until", "id": "long"},
		),
		wat(t, "trap"),
		wat(t, "spin"),
	)
	r := serve(t, writeConfig(t, dir, cfg), Options{Metrics: true})
	m := r.d.Metrics()

	testenv.Eventually(t, 60*time.Second, "every tooling connected (Ready)", r.d.Ready)
	for _, name := range []string{"gosrv", "everything"} {
		ts := r.tooling(t, name)
		if ts.State != "connected" || !ts.ConnectedOnce || ts.Kind != "mcp" || ts.Transport != "stdio" || ts.ServerName == "" {
			t.Errorf("tooling %s: %+v", name, ts)
		}
	}
	testenv.Eventually(t, 10*time.Second, "the tool counts", func() bool {
		return r.tooling(t, "gosrv").Tools == 2 && r.tooling(t, "everything").Tools > 5
	})

	// The JS agent ran against server-everything; gosrv was not granted.
	hello := r.waitAgent(t, "hello", "exited", func(a control.AgentStatus) bool { return a.State == "exited" })
	if hello.LastError != "" || hello.Restarts != 0 || hello.Component != testenv.Agent(t, "agents", "hello") {
		t.Errorf("hello: %+v", hello)
	}
	out, _ := r.output("hello")
	if !strings.Contains(out, "everything.echo") || !strings.Contains(out, "hi from serve") || !strings.Contains(out, "gosrv: denied") {
		t.Errorf("hello's output: %q", out)
	}

	// The spinner runs and stays undisturbed by its crashing sibling.
	spinner := r.waitAgent(t, "spinner", "running", func(a control.AgentStatus) bool { return a.State == "running" })
	crasher := r.waitAgent(t, "crasher", "restarted 3 times", func(a control.AgentStatus) bool { return a.Restarts >= 3 })
	if crasher.Traps < 3 || !strings.Contains(crasher.LastError, "unreachable") {
		t.Errorf("crasher: %+v", crasher)
	}
	if got := r.agent(t, "spinner"); got.State != "running" || got.Restarts != 0 || !got.Since.Equal(spinner.Since) {
		t.Errorf("spinner was disturbed: %+v, was %+v", got, spinner)
	}

	// SIGKILL the go-sdk server while the caller's call is in flight.
	r.waitAgent(t, "caller", "running", func(a control.AgentStatus) bool { return a.State == "running" })
	testenv.Eventually(t, 30*time.Second, "the caller's call in flight", func() bool { return r.tooling(t, "gosrv").InFlight > 0 })
	first := readPID(t, pidfile)
	kill(t, first)
	testenv.Eventually(t, 30*time.Second, "gosrv restarted", func() bool {
		ts := r.tooling(t, "gosrv")
		return ts.Restarts >= 1 && ts.State == "connected"
	})
	if second := readPID(t, pidfile); second == first {
		t.Errorf("gosrv still has pid %d", second)
	}
	// The restart shows in the metrics too.
	if v, _ := metricValue(t, m, "toolhostd_tooling_session_restarts_total", map[string]string{"tooling": "gosrv"}); v < 1 {
		t.Errorf("toolhostd_tooling_session_restarts_total{tooling=gosrv} = %v, want ≥ 1", v)
	}
	if v, _ := metricValue(t, m, "toolhostd_tooling_connected", map[string]string{"tooling": "gosrv"}); v != 1 {
		t.Errorf("toolhostd_tooling_connected{tooling=gosrv} = %v, want 1", v)
	}
	caller := r.waitAgent(t, "caller", "exited", func(a control.AgentStatus) bool { return a.State == "exited" })
	if caller.LastError != "" {
		t.Errorf("caller: %+v", caller)
	}
	out, _ = r.output("caller")
	var steps []struct {
		OK  json.RawMessage `json:"ok"`
		Err *struct{ Code string }
	}
	if err := json.Unmarshal([]byte(out), &steps); err != nil || len(steps) != 4 {
		t.Fatalf("caller's output %q: %v", out, err)
	}
	if steps[0].Err == nil || steps[0].Err.Code != "denied" {
		t.Errorf("get of an ungranted tooling: %s", out)
	}
	var until struct {
		Got struct {
			ID, Tag string
			Val     struct{ Code string }
		}
	}
	if err := json.Unmarshal(steps[3].OK, &until); err != nil || until.Got.ID != "slow" || until.Got.Tag != "error" || until.Got.Val.Code != "unavailable" {
		t.Errorf("the in-flight call's envelope: %s", steps[3].OK)
	}
	if got := r.agent(t, "spinner"); got.Restarts != 0 || !got.Since.Equal(spinner.Since) {
		t.Errorf("spinner was disturbed by the tooling restart: %+v", got)
	}

	// Shut down with the waiter's call in flight and the spinner spinning.
	r.waitAgent(t, "waiter", "running", func(a control.AgentStatus) bool { return a.State == "running" })
	testenv.Eventually(t, 30*time.Second, "the waiter's call in flight", func() bool { return r.tooling(t, "everything").InFlight > 0 })
	took := r.stop(t)
	// The waiter returns on its shutdown envelope, the spinner is
	// interrupted after 200ms; what bounds the shutdown is the 5s grace
	// plus closing the sessions (a second each way for a stdio server).
	if took > 20*time.Second {
		t.Errorf("the shutdown took %v", took)
	}
	if out, _ := r.output("waiter"); !strings.Contains(out, `"tag":"shutdown"`) {
		t.Errorf("the waiter did not see its shutdown envelope: %q", out)
	}
	for _, a := range r.d.Agents() {
		if a.State == "running" || a.State == "stopping" || a.State == "starting" {
			t.Errorf("after shutdown: %+v", a)
		}
	}
	if alive(readPID(t, pidfile)) {
		t.Error("the go-sdk server outlived the daemon")
	}
	if left := children(t); len(left) > 0 {
		t.Errorf("server processes left behind: %v", left)
	}
	if err := r.d.StartAgent("spinner"); err == nil {
		t.Error("StartAgent after Serve returned succeeded")
	}
}
