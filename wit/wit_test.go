package wit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteDir: the directory written holds agent.wit and every package
// it imports, so a build tool resolves the world from it alone.
func TestWriteDir(t *testing.T) {
	dir := t.TempDir()
	if err := WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	agent, err := os.ReadFile(filepath.Join(dir, "agent.wit"))
	if err != nil || string(agent) != string(Agent) {
		t.Fatalf("agent.wit: %v", err)
	}
	for _, f := range []string{"world.wit", "store.wit", "atomic.wit", "batch.wit"} {
		b, err := os.ReadFile(filepath.Join(dir, "deps", "keyvalue", f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "world.wit" && !strings.Contains(string(b), "package wasi:keyvalue@0.2.0-draft2;") {
			t.Errorf("deps/keyvalue/world.wit declares no wasi:keyvalue@0.2.0-draft2")
		}
	}
	// The world imports the store's three interfaces, which the deps
	// written beside it declare.
	for _, iface := range []string{"store", "atomics", "batch"} {
		if imp := "import wasi:keyvalue/" + iface + "@0.2.0-draft2;"; !strings.Contains(string(agent), imp) {
			t.Errorf("world agent lacks %q", imp)
		}
	}
}
