package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/config"
)

// TestReadyAgrees: /readyz (Ready) and systemd's READY=1 mean the same:
// every agent started (or failed to load) and every tooling connected
// once. A tooling that cannot connect yet holds both back, though the
// agents run; a daemon whose agents have not started is not ready, even
// with no tooling at all.
func TestReadyAgrees(t *testing.T) {
	c := notifySocket(t)
	t.Setenv("WATCHDOG_USEC", "")
	dir := t.TempDir()
	flag := filepath.Join(dir, "server may start")
	cfg := header(t) + fmt.Sprintf(`[tooling.late]
command = "/bin/sh"
args = ["-c", 'test -f "$1" && exec "$2"', "sh", %q, %q]
env = { %s = "1" }
connect_timeout = "30s"
restart = { initial_backoff = "20ms", max_backoff = "100ms", healthy_after = "1s" }

[agent.one]
component = %q
stop_grace = "50ms"

[agent.broken]
component = %q
`, flag, os.Args[0], serverEnv, wat(t, "spin"), wat(t, "norun"))
	r := serve(t, writeConfig(t, dir, cfg))
	r.waitAgent(t, "one", "running", isRunning)
	pings := 0
	if msg := nextState(t, c, 500*time.Millisecond, &pings); msg != "" {
		t.Fatalf("with the tooling not connected: %q", msg)
	}
	if r.d.Ready() {
		t.Error("Ready with the tooling not connected")
	}
	if err := os.WriteFile(flag, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if msg := nextState(t, c, 30*time.Second, &pings); msg != "READY=1" {
		t.Fatalf("got %q, want READY=1 once the tooling connected", msg)
	}
	if !r.d.Ready() {
		t.Error("READY=1 sent but not Ready")
	}

	// Not served yet: the agents have not started.
	parsed, err := config.Parse(filepath.Join(dir, "x.toml"), []byte(header(t)+fmt.Sprintf("[agent.one]\ncomponent = %q\n", wat(t, "ok"))))
	if err != nil {
		t.Fatal(err)
	}
	d, err := New("", parsed, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Ready() {
		t.Error("Ready before any agent started")
	}
}
