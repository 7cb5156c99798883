package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Node is the path of node, failing t unless node is on PATH and every
// npm package of pkgs is installed under the repository's node_modules
// (`make deps` installs them from package.json). A script in the
// repository imports them by name: node finds them from its directory up.
func Node(t testing.TB, pkgs ...string) string {
	t.Helper()
	root := Root(t)
	for _, p := range pkgs {
		if _, err := os.Stat(filepath.Join(root, "node_modules", p, "package.json")); err != nil {
			t.Fatalf("npm package %s is missing (%v): run `make deps` (make test does)", p, err)
		}
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not on PATH: %v", err)
	}
	return node
}
