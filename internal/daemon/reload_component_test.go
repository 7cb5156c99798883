package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/control"
)

// TestReloadNoticesChangedComponent: a reload restarts an agent whose
// config is the same but whose component file has a new content, and
// leaves it alone when the file was only rewritten with the same bytes.
func TestReloadNoticesChangedComponent(t *testing.T) {
	dir := t.TempDir()
	spin, err := os.ReadFile(wat(t, "spin"))
	if err != nil {
		t.Fatal(err)
	}
	comp := filepath.Join(dir, "agent.wat")
	if err := os.WriteFile(comp, spin, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := header(t) + fmt.Sprintf("[agent.a]\ncomponent = %q\nstop_grace = \"100ms\"\n\n[agent.b]\ncomponent = %q\nstop_grace = \"100ms\"\n", comp, wat(t, "spin"))
	path := writeConfig(t, dir, cfg)
	r := serve(t, path)
	first := r.waitAgent(t, "a", "running", isRunning)
	other := r.waitAgent(t, "b", "running", isRunning)

	// The same bytes written again (a new modification time): no restart.
	if err := os.WriteFile(comp, spin, 0o644); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(comp, later, later); err != nil {
		t.Fatal(err)
	}
	if err := r.d.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := r.agent(t, "a"); !got.Since.Equal(first.Since) {
		t.Fatalf("an agent whose component was rewritten unchanged restarted: %+v, was %+v", got, first)
	}

	// New content: a restart on the new version; the other agent stays.
	if err := os.WriteFile(comp, append([]byte(";; version 2\n"), spin...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := r.d.Reload(); err != nil {
		t.Fatal(err)
	}
	got := r.waitAgent(t, "a", "restarted", func(a control.AgentStatus) bool { return isRunning(a) && a.Since.After(first.Since) })
	if got.State != "running" {
		t.Fatalf("agent a after the reload: %+v", got)
	}
	if b := r.agent(t, "b"); !b.Since.Equal(other.Since) {
		t.Errorf("the agent of the unchanged file restarted: %+v, was %+v", b, other)
	}
}
