package daemon

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

// TestFailureOutputBounded: a stack overflow (a backtrace of thousands of
// frames) is logged once, collapsed, and its last_error is small; a run
// that returns a 1 MiB err is logged and kept capped at
// control.MaxLastError.
func TestFailureOutputBounded(t *testing.T) {
	dir := t.TempDir()
	r := serve(t, writeConfig(t, dir, header(t)+fmt.Sprintf(`[agent.overflow]
component = %q
restart = "never"

[agent.bigerr]
component = %q
restart = "never"
`, wat(t, "overflow"), wat(t, "bigerr"))))
	for _, name := range []string{"overflow", "bigerr"} {
		a := r.waitAgent(t, name, "failed", func(a control.AgentStatus) bool { return a.State == stateFailed })
		if len(a.LastError) > control.MaxLastError {
			t.Errorf("%s: last_error of %d bytes", name, len(a.LastError))
		}
	}
	if a := r.agent(t, "overflow"); !strings.Contains(a.LastError, "call stack exhausted") || !strings.Contains(a.LastError, " more frames of ") {
		t.Errorf("overflow: last_error %q", a.LastError)
	}
	if a := r.agent(t, "bigerr"); !strings.HasPrefix(a.LastError, "xxxx") || !strings.HasSuffix(a.LastError, " more bytes)") {
		t.Errorf("bigerr: last_error %q…", a.LastError[:min(len(a.LastError), 40)])
	}
	// The daemon logs the outcome just after recording it.
	testenv.Eventually(t, 10*time.Second, "both failures logged", func() bool {
		return r.logs.FilterMessage("agent run failed").Len() == 2
	})
	backtraces, bytes := 0, map[string]int{}
	for _, e := range r.logs.All() {
		text := e.Message + fmt.Sprint(e.ContextMap())
		backtraces += strings.Count(text, "guest backtrace:")
		for _, name := range []string{"overflow", "bigerr"} {
			if strings.Contains(text, name) {
				bytes[name] += len(text)
			}
		}
	}
	if backtraces != 1 {
		t.Errorf("the backtrace was logged %d times, want once", backtraces)
	}
	for name, n := range bytes {
		t.Logf("%s: %d bytes of log", name, n)
		if n > 3*control.MaxLastError {
			t.Errorf("%s: %d bytes of log for one failure", name, n)
		}
	}
}

// TestLogRateFromConfig: limits.log_rate and log_burst reach the agent;
// the lines dropped are counted in the metrics.
func TestLogRateFromConfig(t *testing.T) {
	dir := t.TempDir()
	r := serve(t, writeConfig(t, dir, header(t)+fmt.Sprintf(`[agent.flood]
component = %q
input = "xxxxx"
restart = "never"
limits = { log_rate = 10, log_burst = 20 }
`, wat(t, "flood"))), Options{Metrics: true})
	m := r.d.Metrics()
	r.waitAgent(t, "flood", "exited", func(a control.AgentStatus) bool { return a.State == stateExited })
	written := r.logs.FilterMessage("flood").Len()
	dropped, _ := metricValue(t, m, "toolhostd_agent_log_lines_dropped_total", map[string]string{"agent": "flood"})
	if written < 20 || written > 40 || int(dropped) != 5000-written {
		t.Errorf("%d lines written, %v dropped, of 5000", written, dropped)
	}
}
