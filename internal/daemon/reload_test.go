package daemon

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

func isRunning(a control.AgentStatus) bool { return a.State == "running" }

// TestReload adds, removes and changes agents and toolings at runtime:
// only what changed restarts; unchanged agents keep their instance and
// unchanged toolings their session (and server process). A config with
// errors, and one adding the first fuel limit, are refused and the running
// config stays.
func TestReload(t *testing.T) {
	dir := t.TempDir()
	pidA, pidB := filepath.Join(dir, "a.pid"), filepath.Join(dir, "b.pid")
	spin := wat(t, "spin")
	agent := func(name, input string, toolings ...string) string {
		q := make([]string, len(toolings))
		for i, x := range toolings {
			q[i] = fmt.Sprintf("%q", x)
		}
		return fmt.Sprintf("[agent.%s]\ncomponent = %q\ninput = %q\ntoolings = [%s]\nstop_grace = \"100ms\"\n\n", name, spin, input, strings.Join(q, ", "))
	}
	v1 := header(t) + goTooling("a", pidA, "") + goTooling("b", pidB, "") +
		agent("keep", "same", "a") + agent("change", "v1", "b") + agent("gone", "x")
	path := writeConfig(t, dir, v1)
	r := serve(t, path)
	testenv.Eventually(t, 60*time.Second, "toolings connected", r.d.Ready)
	keep := r.waitAgent(t, "keep", "running", isRunning)
	change := r.waitAgent(t, "change", "running", isRunning)
	r.waitAgent(t, "gone", "running", isRunning)
	firstA, firstB := readPID(t, pidA), readPID(t, pidB)

	// v2: change's input changes, gone goes, fresh comes; tooling b's call
	// timeout changes (a new session, a new server), tooling c is added.
	pidC := filepath.Join(dir, "c.pid")
	v2 := header(t) + goTooling("a", pidA, "") + goTooling("b", pidB, `call_timeout = "7s"`) + goTooling("c", pidC, "") +
		agent("keep", "same", "a") + agent("change", "v2", "b") + agent("fresh", "y", "c")
	writeConfig(t, dir, v2)
	if err := r.d.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := r.agent(t, "keep"); got.State != "running" || got.Restarts != 0 || !got.Since.Equal(keep.Since) {
		t.Errorf("the unchanged agent was touched: %+v, was %+v", got, keep)
	}
	if r.hasAgent("gone") {
		t.Error("the removed agent is still reported")
	}
	r.waitAgent(t, "fresh", "running", isRunning)
	got := r.waitAgent(t, "change", "running", isRunning)
	if !got.Since.After(change.Since) {
		t.Errorf("the changed agent was not restarted: %+v, was %+v", got, change)
	}
	var names []string
	for _, ts := range r.d.Toolings() {
		names = append(names, ts.Name)
	}
	if !slices.Equal(names, []string{"a", "b", "c"}) {
		t.Errorf("toolings after reload: %v", names)
	}
	testenv.Eventually(t, 60*time.Second, "the new toolings connected", r.d.Ready)
	if ts := r.tooling(t, "a"); ts.Restarts != 0 || readPID(t, pidA) != firstA || !alive(firstA) {
		t.Errorf("the unchanged tooling's session was touched: %+v", ts)
	}
	testenv.Eventually(t, 30*time.Second, "tooling b's old server gone", func() bool { return !alive(firstB) })
	if p := readPID(t, pidB); p == firstB || !alive(p) {
		t.Errorf("tooling b has pid %d (was %d)", p, firstB)
	}
	readPID(t, pidC)

	// A config with errors is refused; nothing changes.
	before := r.d.Agents()
	writeConfig(t, dir, v2+"\n[agent.broken]\ncomponent = 42\n")
	err := r.d.Reload()
	var cerrs config.Errors
	if !errors.As(err, &cerrs) || !strings.Contains(err.Error(), "agent.broken.component") {
		t.Fatalf("reload of a bad config: %v", err)
	}
	// The first fuel limit is refused too.
	writeConfig(t, dir, v2+fmt.Sprintf("[agent.fueled]\ncomponent = %q\nlimits = { fuel = 1000 }\n", spin))
	if err := r.d.Reload(); !errors.Is(err, ErrNeedsFuel) {
		t.Fatalf("reload adding a fuel limit: %v", err)
	}
	// So are more agents than the running host.max_threads leaves threads
	// for: a higher max_threads in the new file applies only at restart.
	// (vm.max_map_count as this test sees it is high enough for them.)
	mapCount := filepath.Join(dir, "max_map_count")
	if err := os.WriteFile(mapCount, []byte("1000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	maxMapCountFile, mapCount = mapCount, maxMapCountFile
	defer func() { maxMapCountFile = mapCount }()
	var many strings.Builder
	for i := range config.DefaultMaxThreads - threadReserve {
		many.WriteString(agent(fmt.Sprintf("m%d", i), "x"))
	}
	writeConfig(t, dir, strings.Replace(v2, "[host]\n", "[host]\nmax_threads = 20000\n", 1)+many.String())
	if err := r.d.Reload(); !errors.Is(err, ErrTooManyAgents) || !strings.Contains(err.Error(), "more than host.max_threads = 10000") {
		t.Fatalf("reload to %d agents: %v", config.DefaultMaxThreads-threadReserve+3, err)
	}
	after := r.d.Agents()
	if len(after) != len(before) {
		t.Fatalf("agents after refused reloads: %+v", after)
	}
	for i := range after {
		if after[i].Name != before[i].Name || !after[i].Since.Equal(before[i].Since) || after[i].State != "running" {
			t.Errorf("refused reload touched %+v (was %+v)", after[i], before[i])
		}
	}

	// v3: tooling c and its agent go; its server process goes with it.
	firstC := readPID(t, pidC)
	writeConfig(t, dir, header(t)+goTooling("a", pidA, "")+goTooling("b", pidB, `call_timeout = "7s"`)+
		agent("keep", "same", "a")+agent("change", "v2", "b"))
	if err := r.d.Reload(); err != nil {
		t.Fatal(err)
	}
	if r.hasAgent("fresh") {
		t.Error("fresh is still reported")
	}
	testenv.Eventually(t, 30*time.Second, "tooling c's server gone", func() bool { return !alive(firstC) })
	if got := r.agent(t, "keep"); got.Restarts != 0 || !got.Since.Equal(keep.Since) {
		t.Errorf("the unchanged agent was touched: %+v", got)
	}
	r.stop(t)
	if left := children(t); len(left) > 0 {
		t.Errorf("server processes left behind: %v", left)
	}
}

func TestDiff(t *testing.T) {
	parse := func(s string) *config.Config {
		c, err := config.Parse("", []byte("version = 1\n"+s))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	old := parse(`
[tooling.x]
command = "x"
[tooling.y]
command = "y"
[agent.a]
component = "/a.wasm"
[agent.b]
component = "/b.wasm"
[agent.c]
component = "/c.wasm"
`)
	cur := parse(`
[host]
log_level = "debug"
[tooling.x]
command = "x"
[tooling.z]
command = "z"
[agent.a]
component = "/a.wasm"
[agent.b]
component = "/b.wasm"
env = { K = "v" }
[agent.d]
component = "/d.wasm"
`)
	p := diff(old, cur)
	check := func(what string, got []string, want ...string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", what, got, want)
		}
	}
	check("added toolings", p.addTooling, "z")
	check("removed toolings", p.removeTooling, "y")
	check("changed toolings", p.changeTooling)
	check("added agents", p.addAgent, "d")
	check("removed agents", p.removeAgent, "c")
	check("changed agents", p.changeAgent, "b")
	if !p.hostChanged || p.empty() {
		t.Errorf("plan %+v", p)
	}
	if q := diff(old, old); !q.empty() || q.hostChanged {
		t.Errorf("a config against itself: %+v", q)
	}
}

// TestDiffRestartsAgentsOfChangedToolings: an agent whose own config is the
// same but which is granted a tooling that changes restarts with it; one
// granted only unchanged toolings does not.
func TestDiffRestartsAgentsOfChangedToolings(t *testing.T) {
	parse := func(s string) *config.Config {
		c, err := config.Parse("", []byte("version = 1\n"+s))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	agents := `
[agent.uses-x]
component = "/a.wasm"
toolings = ["x"]
[agent.uses-y]
component = "/b.wasm"
toolings = ["y"]
[agent.uses-none]
component = "/c.wasm"
`
	old := parse("[tooling.x]\ncommand = \"x\"\n[tooling.y]\ncommand = \"y\"\n" + agents)
	cur := parse("[tooling.x]\ncommand = \"x\"\nargs = [\"--new\"]\n[tooling.y]\ncommand = \"y\"\n" + agents)
	p := diff(old, cur)
	if !slices.Equal(p.changeTooling, []string{"x"}) || !slices.Equal(p.changeAgent, []string{"uses-x"}) {
		t.Errorf("plan %+v: want tooling x and agent uses-x changed", p)
	}
}
