// Package testenv is the test suites' one kit. It finds what `make test`
// prepares before running them: the repository root, the agents `make
// agents` builds into build/ (JS with componentize-js and
// componentize-qjs, Go), and the npm MCP servers `make deps` installs; a
// missing piece is an error naming the make target to run (tests fail on
// it, they never skip). It is also the one way to wait (Eventually, Poll,
// Recv) and holds the fixtures several suites share: Serve, MCPServer (the
// one in-process MCP server the suites configure and extend), an
// in-process MCP server's dialer and echo tool, a scripted provider. Only
// tests import this package.
package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// RepoRoot is the directory of go.mod above the test's package directory.
// It is found once, when the test binary starts (before any test can
// t.Chdir away from that directory), and the answer never changes.
func RepoRoot() (string, error) { return repoRoot, repoRootErr }

var repoRoot, repoRootErr = findRepoRoot()

func findRepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the test directory")
		}
		dir = parent
	}
}

// AgentPath is build/<dir>/<name>.wasm under root. The directories `make
// agents` fills: "agents" (examples/agents, componentize-js),
// "agents-qjs" (the same with componentize-qjs), "agents-go"
// (examples/agents-go), and for the tests "test-agents",
// "test-agents-qjs" (internal/host/testdata/agents) and "test-agents-go"
// (internal/host/testdata/agents-go).
func AgentPath(root, dir, name string) (string, error) {
	p := filepath.Join(root, "build", dir, name+".wasm")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s is missing (%v): run `make agents` (make test does)", p, err)
	}
	return p, nil
}

// NPMServerPath is the entry point of @modelcontextprotocol/<pkg> under
// root's node_modules; node must be on PATH to run it.
func NPMServerPath(root, pkg string) (string, error) {
	p := filepath.Join(root, "node_modules", "@modelcontextprotocol", pkg, "dist", "index.js")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s is missing (%v): run `make deps` (make test does)", p, err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		return "", fmt.Errorf("node is not on PATH: %w", err)
	}
	return p, nil
}

// Root is RepoRoot, failing t on error.
func Root(t testing.TB) string {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// Agent is AgentPath under the repository root, failing t on error.
func Agent(t testing.TB, dir, name string) string {
	t.Helper()
	p, err := AgentPath(Root(t), dir, name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// NPMServer is NPMServerPath under the repository root, failing t on error.
func NPMServer(t testing.TB, pkg string) string {
	t.Helper()
	p, err := NPMServerPath(Root(t), pkg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
