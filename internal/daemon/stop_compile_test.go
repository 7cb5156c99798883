package daemon

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/testenv"
)

// TestStopDuringFirstCompile: serve on a cold compile cache, stopped while
// its agents (12 MB componentize-js components, seconds each) are still
// compiling, returns within the agents' stop grace instead of waiting for
// the compiles; the engine is released once they end, with no Program
// left alive.
func TestStopDuringFirstCompile(t *testing.T) {
	dir := t.TempDir()
	const grace = 2 * time.Second
	cfg := fmt.Sprintf("version = 1\n[host]\ncache_dir = %q\nlog_level = \"debug\"\nstate_dir = %q\n", filepath.Join(dir, "cache"), filepath.Join(dir, "state"))
	for _, name := range []string{"hello", "watch", "fanout"} {
		cfg += fmt.Sprintf("\n[agent.%s]\ncomponent = %q\nstop_grace = %q\n", name, testenv.Agent(t, "agents", name), grace)
	}
	r := serve(t, writeConfig(t, dir, cfg))
	testenv.Eventually(t, 30*time.Second, "a compile to begin", func() bool {
		return r.logs.FilterMessageSnippet("compiling ").Len() > 0
	})
	// Stopped at once: the compile just logged is under way (it is counted
	// before its "compiling" line) and takes seconds.
	if r.logs.FilterMessageSnippet("compiled ").Len() == 3 {
		t.Fatal("every agent compiled before the stop: too fast a machine for this test")
	}
	if took := r.stop(t); took > grace {
		t.Fatalf("Serve returned %v after its context ended, want within the stop grace of %v", took, grace)
	}
	if r.logs.FilterMessageSnippet("still compiling").Len() != 1 {
		t.Error("the host was not closed under a compile (the test did not stop serve during one)")
	}
	for _, a := range r.d.Agents() {
		if a.State != stateStopped {
			t.Errorf("agent %s: %s after the stop, want %s", a.Name, a.State, stateStopped)
		}
		if a.LastError != "" {
			t.Errorf("agent %s: last_error %q after a stop during its compile", a.Name, a.LastError)
		}
	}
	if n := r.logs.FilterMessageSnippet("cannot run").Len(); n > 0 {
		t.Errorf("%d agents reported they cannot run after a stop during their compile", n)
	}
	select {
	case <-r.d.g.Host.Released():
	case <-time.After(180 * time.Second):
		t.Fatal("the engine was not released within 180s of the stop (the compiles did not end?)")
	}
	if n := r.d.g.Host.Live(); n != 0 {
		t.Errorf("%d programs alive after the abandoned compiles ended, want 0", n)
	}
}
