package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// ConformancePaths returns the Node 22 binary of the npm package `node` and
// the entry point of @modelcontextprotocol/conformance under root's
// node_modules (the suite needs Node 22; the machine's node may be older).
func ConformancePaths(root string) (node, suite string, err error) {
	node = filepath.Join(root, "node_modules", "node", "bin", "node")
	suite = filepath.Join(root, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	for _, p := range []string{node, suite} {
		if _, err := os.Stat(p); err != nil {
			return "", "", fmt.Errorf("%s is missing (%v): run `make deps` (make test does)", p, err)
		}
	}
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		return "", "", fmt.Errorf("%s --version: %w", node, err)
	}
	if v := strings.TrimSpace(string(out)); !strings.HasPrefix(v, "v22.") {
		return "", "", fmt.Errorf("%s is %s, want v22.x (package.json pins it)", node, v)
	}
	return node, suite, nil
}

// Conformance is ConformancePaths under the repository root, failing t on
// error.
func Conformance(t testing.TB) (node, suite string) {
	t.Helper()
	node, suite, err := ConformancePaths(Root(t))
	if err != nil {
		t.Fatal(err)
	}
	return node, suite
}
