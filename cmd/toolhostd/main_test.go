package main

import (
	"os"
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
	// And a state directory (serve's key-value store, a bbolt file one
	// process holds) for configs that set no state_dir, never the user's.
	os.Setenv("XDG_STATE_HOME", cache+"/state")
	os.Unsetenv("STATE_DIRECTORY")
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
