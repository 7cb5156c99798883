package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/toolhostd/toolhostd/internal/agentbuild"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

// seedToolchain makes the repository's node_modules the build toolchain of
// the test's cache (XDG_CACHE_HOME, set by TestMain) when its versions are
// the pins, so that the tests do not npm install; the install itself is
// tested in internal/agentbuild and, up to its missing npm, here.
func seedToolchain(t *testing.T) {
	t.Helper()
	nm := filepath.Join(testenv.Root(t), "node_modules")
	if err := agentbuild.CheckNodeModules(nm, agentbuild.Pins); err != nil {
		t.Fatalf("the repository's node_modules is not the pinned toolchain (run make deps): %v", err)
	}
	root, err := agentbuild.CacheRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range agentbuild.ToolchainNames {
		dir := agentbuild.ToolchainDir(root, name)
		if agentbuild.CheckNodeModules(filepath.Join(dir, "node_modules"), agentbuild.ToolchainPins(name)) == nil {
			continue
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(nm, filepath.Join(dir, "node_modules")); err != nil {
			t.Fatal(err)
		}
	}
}

// newBuildRun: toolhostd new NAME --lang LANG in a temporary directory
// outside the repository, toolhostd build NAME, and toolhostd run of the
// component it wrote.
func newBuildRun(t *testing.T, lang string, buildArgs ...string) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("TOOLHOSTD_CONFIG", "")
	code, out, errs := runCLI(t, "new", "my-agent", "--lang", lang)
	if code != 0 {
		t.Fatalf("new: exit %d\n%s", code, errs)
	}
	if !strings.Contains(out, "created my-agent ("+lang+"): ") || !strings.Contains(out, "toolhostd build .") {
		t.Errorf("new's stdout:\n%s", out)
	}
	// The config it wrote is valid and grants the agent the tooling (its
	// component is not built yet: validate says so without --no-files).
	if code, out, errs := runCLI(t, "config", "validate", "--no-files", filepath.Join("my-agent", "toolhostd.toml")); code != 0 || !strings.Contains(out, "1 tooling, 1 agent") {
		t.Errorf("config validate: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := runCLI(t, "config", "validate", filepath.Join("my-agent", "toolhostd.toml")); code != 64 || !strings.Contains(errs, "agent.my-agent.component: component file") {
		t.Errorf("config validate before the build: exit %d, want 64 naming the missing component\n%s", code, errs)
	}

	code, out, errs = runCLI(t, append([]string{"build", "my-agent"}, buildArgs...)...)
	if code != 0 {
		t.Fatalf("build: exit %d\n%s%s", code, out, errs)
	}
	wasm := filepath.Join("my-agent", "my-agent.wasm")
	if !regexp.MustCompile(`^` + regexp.QuoteMeta(wasm) + `: [0-9.]+ MB, [a-z-]+, [0-9.]+m?s\n$`).MatchString(out) {
		t.Errorf("build's stdout: %q", out)
	}
	t.Logf("build: %s", strings.TrimSpace(out))
	if code, out, errs := runCLI(t, "config", "validate", filepath.Join("my-agent", "toolhostd.toml")); code != 0 {
		t.Errorf("config validate after the build: exit %d\n%s%s", code, out, errs)
	}

	code, out, errs = runCLI(t, "--config", everythingConfig(t), "run", wasm, "--input", "hi from a new project")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{
		"everything (mcp): ", " tools: echo,",
		`everything.echo({"message":"hi from a new project"}) -> Echo: hi from a new project`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("run's stdout lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errs, "my-agent: everything has ") {
		t.Errorf("run's stderr lacks the agent's log line:\n%s", errs)
	}
	// Without the tooling the agent's err says so (exit 1).
	code, out, errs = runCLI(t, "run", wasm)
	if code != 1 || out != "" || !strings.Contains(errs, "everything: ") {
		t.Errorf("run without a config: exit %d, stdout %q\n%s", code, out, errs)
	}
}

func TestNewJSBuildRun(t *testing.T) {
	seedToolchain(t)
	newBuildRun(t, "js")
	// The agent imports sdk/js's toolhost.js, written next to it with the
	// declarations editors complete from.
	for _, f := range []string{"toolhost.js", "toolhost.d.ts", "types/agent.d.ts", "types/interfaces/toolhost-agent-tooling.d.ts"} {
		if _, err := os.Stat(filepath.Join("my-agent", f)); err != nil {
			t.Errorf("the project lacks %s: %v", f, err)
		}
	}
	if src, err := os.ReadFile(filepath.Join("my-agent", "agent.js")); err != nil || !strings.Contains(string(src), "from './toolhost.js'") {
		t.Errorf("agent.js does not import ./toolhost.js (%v)", err)
	}
}

func TestNewGoBuildRun(t *testing.T) {
	seedToolchain(t)
	// A module cache of the test's own: the SDK version the build serves
	// does not reach the user's (-modcacherw: t.TempDir can remove it).
	t.Setenv("GOMODCACHE", t.TempDir())
	t.Setenv("GOFLAGS", "-modcacherw")
	// The user's build cache: TestMain's XDG_CACHE_HOME would make the
	// go command compile the standard library for wasip1 again.
	goenv := exec.Command("go", "env", "GOCACHE")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "XDG_CACHE_HOME=") && !strings.HasPrefix(kv, "GOCACHE=") {
			goenv.Env = append(goenv.Env, kv)
		}
	}
	if out, err := goenv.Output(); err == nil && strings.TrimSpace(string(out)) != "" {
		t.Setenv("GOCACHE", strings.TrimSpace(string(out)))
	}
	newBuildRun(t, "go")
	// The go.mod requires the SDK by its module path, with no replace.
	mod, err := os.ReadFile(filepath.Join("my-agent", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mod), "require "+agentbuild.SDKModule+" "+agentbuild.SDKVersion+"\n") || strings.Contains(string(mod), "replace") {
		t.Errorf("go.mod:\n%s", mod)
	}
	// The README's GOPROXY line for editors names the module proxy the
	// build wrote (under XDG_CACHE_HOME, which TestMain sets).
	root, err := agentbuild.CacheRoot()
	if err != nil {
		t.Fatal(err)
	}
	proxy := filepath.Join(root, "goproxy")
	readme, err := os.ReadFile(filepath.Join("my-agent", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "export GOPROXY=file://"+proxy+",") {
		t.Errorf("README.md does not point GOPROXY at %s:\n%s", proxy, readme)
	}
	if _, err := os.Stat(filepath.Join(proxy, "github.com", "toolhostd", "toolhostd", "sdk", "go", "@v", agentbuild.SDKVersion+".zip")); err != nil {
		t.Errorf("the build's module proxy: %v", err)
	}
}

// TestNewRefuses: new writes into a new or empty directory only, and
// needs a language it knows and an agent name.
func TestNewRefuses(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.Mkdir("taken", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("taken", "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("file", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"new", "taken", "--lang", "js"}, "taken exists and is not empty"},
		{[]string{"new", "file", "--lang", "go"}, "file exists and is not a directory"},
		{[]string{"new", "x"}, "--lang is required: js or go"},
		{[]string{"new", "x", "--lang", "rust"}, `language "rust": want js or go`},
		{[]string{"new", "bad name", "--lang", "js"}, `invalid agent name "bad name"`},
		{[]string{"new", "--lang", "js"}, "accepts 1 arg"},
	} {
		code, out, errs := runCLI(t, tc.args...)
		if code != exitUsage || out != "" || !strings.Contains(errs, tc.err) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 64 and %q", tc.args, code, out, errs, tc.err)
		}
	}
	if data, err := os.ReadFile(filepath.Join("taken", "notes.txt")); err != nil || string(data) != "mine" {
		t.Errorf("taken/notes.txt: %q, %v", data, err)
	}
	for _, p := range []string{"x", "bad name", filepath.Join("taken", "agent.js")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was written", p)
		}
	}
	// An empty directory is fine, the current one too (the agent is named
	// after it).
	if err := os.Mkdir("empty", 0o755); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := runCLI(t, "new", "empty", "--lang", "js"); code != 0 {
		t.Errorf("new into an empty directory: exit %d\n%s", code, errs)
	}
	if err := os.Mkdir("here", 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir("here")
	code, out, errs := runCLI(t, "new", ".", "--lang", "go")
	if code != 0 || strings.Contains(out, "cd ") || !strings.Contains(out, "run here.wasm") {
		t.Errorf("new .: exit %d\n%s%s", code, out, errs)
	}
	if data, err := os.ReadFile("go.mod"); err != nil || !strings.HasPrefix(string(data), "module here\n") {
		t.Errorf("go.mod: %q, %v", data, err)
	}
}

// TestBuildErrors: a path that is not an agent's source is a usage error
// that says what build takes; a source that does not build exits 1 with
// the toolchain's message; without node on PATH the build says what it
// needs, and without npm that it cannot install the toolchain.
func TestBuildErrors(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for name, data := range map[string]string{
		"notes.txt":   "",
		"empty/x.txt": "",
		"bad.js":      "export function run( {",
		"good.js":     "export function run(input) { return input; }",
	} {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"build", "nope"}, "nope: no such file or directory (give a JS file, or a directory with an agent.js or a Go main package)"},
		{[]string{"build", "notes.txt"}, "notes.txt: not a JS file (.js, .mjs) or a directory"},
		{[]string{"build", "empty"}, "empty: a directory with no .go files and no agent.js"},
		{[]string{"build", "good.js", "--toolchain", "v8"}, `toolchain "v8": a JS agent is built with qjs or spidermonkey`},
		{[]string{"build"}, "accepts 1 arg"},
	} {
		code, out, errs := runCLI(t, tc.args...)
		if code != exitUsage || out != "" || !strings.Contains(errs, tc.err) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 64 and %q", tc.args, code, out, errs, tc.err)
		}
	}

	t.Run("no node", func(t *testing.T) {
		t.Setenv("XDG_CACHE_HOME", t.TempDir()) // no toolchain installed
		t.Setenv("PATH", t.TempDir())
		code, _, errs := runCLI(t, "build", "good.js")
		if code != exitFailure || !strings.Contains(errs, "node is not on PATH: toolhostd build runs the npm tools") {
			t.Errorf("exit %d\n%s", code, errs)
		}
	})
	t.Run("no npm", func(t *testing.T) {
		t.Setenv("XDG_CACHE_HOME", t.TempDir())
		bin := t.TempDir()
		node := filepath.Join(testenv.Root(t), "node_modules", "node", "bin", "node")
		if err := os.Symlink(node, filepath.Join(bin, "node")); err != nil {
			t.Fatal(err)
		}
		t.Setenv("PATH", bin)
		code, _, errs := runCLI(t, "build", "good.js")
		if code != exitFailure || !strings.Contains(errs, "npm is not on PATH") {
			t.Errorf("exit %d\n%s", code, errs)
		}
		if _, err := os.Stat("good.wasm"); err == nil {
			t.Error("good.wasm was written")
		}
	})
	t.Run("syntax error and -o", func(t *testing.T) {
		seedToolchain(t)
		code, out, errs := runCLI(t, "build", "bad.js", "-o", filepath.Join("out", "bad.wasm"))
		if code != exitFailure || out != "" || !strings.Contains(errs, "componentize-qjs bad.js: exit status") {
			t.Errorf("exit %d, stdout %q\n%s", code, out, errs)
		}
		if entries, _ := os.ReadDir("out"); len(entries) != 0 {
			t.Errorf("a failed build left %v", entries)
		}
		t.Logf("%s", errs)
		// -o a directory: the component goes into it.
		if err := os.Mkdir("outdir", 0o755); err != nil {
			t.Fatal(err)
		}
		code, out, errs = runCLI(t, "build", "good.js", "-o", "outdir")
		if code != 0 || !strings.HasPrefix(out, filepath.Join("outdir", "good.wasm")+": ") {
			t.Errorf("build -o outdir: exit %d, stdout %q\n%s", code, out, errs)
		}
	})
}

// TestDocWritingAgents: the docs on writing an agent in each language
// (docs/agents-js.md, docs/agents-go.md) start from toolhostd new and
// toolhostd build, with the commands the tests above run.
func TestDocWritingAgents(t *testing.T) {
	for _, d := range []struct{ lang, name, heading string }{
		{"js", "docs/agents-js.md", "# Writing an agent in JavaScript"},
		{"go", "docs/agents-go.md", "# Writing an agent in Go"},
	} {
		lang, name, heading := d.lang, d.name, d.heading
		text, err := os.ReadFile(filepath.Join(testenv.Root(t), name))
		if err != nil {
			t.Fatal(err)
		}
		section, ok := strings.CutPrefix(string(text), heading+"\n")
		section = strings.TrimLeft(section, "\n")
		block, ok2 := strings.CutPrefix(section, "```sh\n")
		block, _, ok3 := strings.Cut(block, "```\n")
		if !ok || !ok2 || !ok3 {
			t.Errorf("%s: %q does not start with a sh block", name, heading)
			continue
		}
		for _, want := range []string{"toolhostd new my-agent --lang " + lang + " ", "cd my-agent\n", "toolhostd build .", "toolhostd --config toolhostd.toml run my-agent.wasm --input hi"} {
			if !strings.Contains(block, want) {
				t.Errorf("%s %q: its first block lacks %q:\n%s", name, heading, want, block)
			}
		}
	}
}
