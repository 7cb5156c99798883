package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhostd/toolhostd/internal/testenv"
)

// cacheEntries lists the compile cache's entries in dir.
func cacheEntries(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*.cwasm"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestCompileThenRunHitsCache: compile fills the cache run uses, under the
// key run looks up: run then loads the agent from it without compiling.
func TestCompileThenRunHitsCache(t *testing.T) {
	t.Setenv("TOOLHOSTD_CONFIG", "")
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	cfg := writeConfigFile(t, dir, "c.toml", "version = 1\n[host]\nlog_level = \"debug\"\ncache_dir = \""+cache+"\"\n")
	qjs := testenv.Agent(t, "agents-qjs", "hello")
	echo := testdata("echo.wat")

	code, out, errs := runCLI(t, "--config", cfg, "compile", echo, qjs)
	if code != 0 {
		t.Fatalf("compile: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	for _, want := range []string{echo + ": compiled in ", qjs + ": compiled in ", "compile cache: " + cache + "\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("compile's stdout lacks %q:\n%s", want, out)
		}
	}
	if n := len(cacheEntries(t, cache)); n != 2 {
		t.Fatalf("%d cache entries after compiling 2 agents, want 2", n)
	}

	code, out, errs = runCLI(t, "--config", cfg, "compile", echo, qjs)
	if code != 0 {
		t.Fatalf("second compile: exit %d\n%s", code, errs)
	}
	for _, want := range []string{echo + ": already in the cache\n", qjs + ": already in the cache\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("second compile's stdout lacks %q:\n%s", want, out)
		}
	}

	code, out, errs = runCLI(t, "--config", cfg, "run", echo, "--input", "from the cache")
	if code != 0 || out != "from the cache\n" {
		t.Fatalf("run: exit %d, stdout %q\n%s", code, out, errs)
	}
	if !strings.Contains(errs, `"cached": true`) || strings.Contains(errs, "compiling ") {
		t.Errorf("run did not load the agent from the cache compile filled:\n%s", errs)
	}
	if n := len(cacheEntries(t, cache)); n != 2 {
		t.Errorf("%d cache entries after run, want the 2 compile wrote", n)
	}
}

// TestCompileKeysAsServe: with a config whose agent sets limits.fuel,
// serve's engine meters fuel, and so does compile's by default: its entry
// is another than run's (no fuel), which --fuel=false compiles.
func TestCompileKeysAsServe(t *testing.T) {
	t.Setenv("TOOLHOSTD_CONFIG", "")
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	echo := testdata("echo.wat")
	plain := writeConfigFile(t, dir, "plain.toml", "version = 1\n[host]\ncache_dir = \""+cache+"\"\n")
	fuel := writeConfigFile(t, dir, "fuel.toml", "version = 1\n[host]\ncache_dir = \""+cache+"\"\n[agent.echo]\ncomponent = \""+echo+"\"\nlimits = { fuel = 1000000 }\n")

	steps := []struct {
		args []string
		want string
		n    int
	}{
		{[]string{"--config", plain, "compile", echo}, "compiled in", 1},
		{[]string{"--config", fuel, "compile", echo}, "compiled in", 2},
		{[]string{"--config", fuel, "compile", "--fuel=false", echo}, "already in the cache", 2},
		{[]string{"--config", plain, "compile", "--fuel", echo}, "already in the cache", 2},
	}
	for _, s := range steps {
		code, out, errs := runCLI(t, s.args...)
		if code != 0 || !strings.Contains(out, echo+": "+s.want) {
			t.Fatalf("%v: exit %d, stdout %q, want %q\n%s", s.args, code, out, s.want, errs)
		}
		if n := len(cacheEntries(t, cache)); n != s.n {
			t.Fatalf("%v: %d cache entries, want %d", s.args, n, s.n)
		}
	}
}

func TestCompileFailures(t *testing.T) {
	t.Setenv("TOOLHOSTD_CONFIG", "")
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	cfg := writeConfigFile(t, dir, "c.toml", "version = 1\n[host]\ncache_dir = \""+cache+"\"\n")
	code, out, errs := runCLI(t, "--config", cfg, "compile", testdata("norun.wat"), testdata("echo.wat"), testdata("nope.wasm"))
	if code != 2 {
		t.Fatalf("exit %d, want 2\nstdout: %s\nstderr: %s", code, out, errs)
	}
	for _, want := range []string{"norun.wat: ", "no export `run", "nope.wasm: "} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	if !strings.Contains(out, testdata("echo.wat")+": compiled in") {
		t.Errorf("the good agent after a bad one was not compiled:\n%s", out)
	}
	if code, _, errs := runCLI(t, "--config", cfg, "compile"); code != 64 || !strings.Contains(errs, "requires at least 1 arg") {
		t.Errorf("no agent: exit %d, want 64\n%s", code, errs)
	}
	if _, err := os.Stat(filepath.Join(cache)); err != nil {
		t.Errorf("the cache directory: %v", err)
	}
}
