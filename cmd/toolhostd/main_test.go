package main

import (
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// envAsMain makes the test binary behave as toolhostd, so that tests can run
// the real command line in a subprocess (for signals and child processes).
const envAsMain = "TOOLHOSTD_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(envAsMain) == "1" {
		os.Exit(execute(os.Args[1:], os.Stdout, os.Stderr))
	}
	// One compile cache for the whole package run: JS agents compile once.
	cache, err := os.MkdirTemp("", "toolhostd-cmd-test-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CACHE_HOME", cache)
	code := func() int {
		defer os.RemoveAll(cache)
		return runWithLeakCheck(m)
	}()
	os.Exit(code)
}

func runWithLeakCheck(m *testing.M) int {
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			os.Stderr.WriteString("goleak: " + err.Error() + "\n")
			return 1
		}
	}
	return code
}

// repoRoot walks up from the package directory to go.mod.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		if filepath.Dir(dir) == dir {
			t.Fatal("go.mod not found")
		}
		dir = filepath.Dir(dir)
	}
}

// builtAgent is the path of an example agent built by `make agents`; the
// test fails, it does not skip, when it is missing.
func builtAgent(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(repoRoot(t), "build", "agents", name+".wasm")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is missing: run `make agents` (make test does)", p)
	}
	return p
}
