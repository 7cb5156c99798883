package host

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDocGoAgent builds the complete agent of docs/agents-go.md ("Writing
// an agent in Go") the way that page says (its own module requiring
// sdk/go, go build for wasip1, scripts/componentize-go.mjs) and runs it: a
// Go agent written against the documented API compiles and works.
func TestDocGoAgent(t *testing.T) {
	s := env(t)
	doc, err := os.ReadFile(filepath.Join(s.root, "docs", "agents-go.md"))
	if err != nil {
		t.Fatal(err)
	}
	section, ok := strings.CutPrefix(string(doc), "# Writing an agent in Go\n")
	_, code, ok2 := strings.Cut(section, "```go\n")
	code, _, ok3 := strings.Cut(code, "```\n")
	if !ok || !ok2 || !ok3 {
		t.Fatal(`docs/agents-go.md does not start with "# Writing an agent in Go" or has no go code block`)
	}
	component := buildDocGoAgent(t, s, "echo", code)
	p, err := s.host.LoadFile(component)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	out, err := waitAgent(t, s.host.Start(p, AgentConfig{Name: "readme-echo"}, "hi"), 60*time.Second)
	if err != nil || out != "Echo: hi" {
		t.Fatalf("docs/agents-go.md's agent said %q, %v; want \"Echo: hi\"", out, err)
	}
	denied := s.host.Start(p, AgentConfig{Name: "readme-echo", Grants: func(string) bool { return false }}, "hi")
	if _, err := waitAgent(t, denied, 60*time.Second); err == nil || err.Error() != "this agent needs the everything tooling" {
		t.Errorf("without the grant: %v", err)
	}
}

// buildDocGoAgent builds code, the main.go of a Go agent from the docs, as
// agents-go.md says (its own module requiring sdk/go, go build for
// wasip1, scripts/componentize-go.mjs against wit/agent.wit) and returns
// the component's path.
func buildDocGoAgent(t *testing.T, s *suite, name, code string) string {
	t.Helper()
	dir := t.TempDir()
	mod := "module example.com/" + name + "\n\ngo 1.26.0\n\nrequire github.com/toolhostd/toolhostd/sdk/go v0.0.0\n\nreplace github.com/toolhostd/toolhostd/sdk/go => " + filepath.Join(s.root, "sdk", "go") + "\n"
	for file, text := range map[string]string{"go.mod": mod, "main.go": code} {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	core, component := filepath.Join(dir, name+".core.wasm"), filepath.Join(dir, name+".wasm")
	run := func(wd string, env []string, name string, args ...string) {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = wd
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
	}
	run(dir, []string{"GOOS=wasip1", "GOARCH=wasm", "GOFLAGS=-buildvcs=false"}, "go", "build", "-buildmode=c-shared", "-o", core, ".")
	run(s.root, nil, "node", "scripts/componentize-go.mjs", "--wit", "wit/agent.wit", "--world", "agent", core, component)
	return component
}
