package daemon

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

// TestProgressCounted: the progress notifications server-everything sends
// about an agent's call show in /v1/toolings and in
// toolhostd_tooling_progress_notifications_total.
func TestProgressCounted(t *testing.T) {
	dir := t.TempDir()
	cfg := header(t) + fmt.Sprintf(`
[tooling.everything]
command = "node"
args = [%q, "stdio"]
connect_timeout = "30s"

[agent.long]
component = %q
toolings = ["everything"]
input = %q
restart = "never"
`, everythingEntry(t), testenv.Agent(t, "test-agents", "probe"),
		probeInput(t,
			map[string]any{"op": "get", "name": "everything", "as": "e"},
			map[string]any{"op": "call-tool", "h": "e", "tool": "trigger-long-running-operation", "args": map[string]any{"duration": 0.4, "steps": 2}, "as": "long"},
			map[string]any{"op": "recv-until", "id": "long"},
		))
	r := serve(t, writeConfig(t, filepath.Clean(dir), cfg), Options{Metrics: true})
	m := r.d.Metrics()
	r.waitAgent(t, "long", "exited", func(a control.AgentStatus) bool { return a.State == "exited" })
	// Both notifications precede the result; the second may be handled
	// just after it.
	testenv.Eventually(t, 10*time.Second, "two progress notifications counted", func() bool {
		return r.tooling(t, "everything").Progress == 2
	})
	if v, _ := metricValue(t, m, "toolhostd_tooling_progress_notifications_total", map[string]string{"tooling": "everything"}); v != 2 {
		t.Errorf("toolhostd_tooling_progress_notifications_total{tooling=everything} = %v, want 2", v)
	}
}
