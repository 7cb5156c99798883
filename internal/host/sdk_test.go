package host

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGoSDK runs the Go guest SDK's own tests (sdk/go is a module of its
// own, outside this module's ./...), natively and for GOOS=wasip1
// GOARCH=wasm under node (sdk/go/wasip1-exec.mjs), and vets it and the Go
// agents for that target, so that the host's test run covers them.
func TestGoSDK(t *testing.T) {
	s := env(t)
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not on PATH: %v", err)
	}
	run := func(dir string, wasip1 bool, args ...string) {
		t.Helper()
		cmd := exec.Command(gobin, args...)
		cmd.Dir = filepath.Join(s.root, dir)
		cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
		if wasip1 {
			cmd.Env = append(cmd.Env, "GOOS=wasip1", "GOARCH=wasm")
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("%s: go %s: %v\n%s", dir, strings.Join(args, " "), err, out)
		}
	}
	run("sdk/go", false, "test", "-count=1", "./...")
	// And on its real target, 32-bit wasm, under node's WASI.
	run("sdk/go", true, "test", "-count=1", "-exec", "node "+filepath.Join(s.root, "sdk/go/wasip1-exec.mjs"), "./...")
	run("sdk/go", false, "vet", "./...")
	for _, dir := range []string{"sdk/go", "examples/agents-go", "internal/host/testdata/agents-go"} {
		run(dir, true, "vet", "./...")
	}
}
