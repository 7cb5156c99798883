package agentbuild

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

// TestPinsMatchPackageJSON: the npm packages build installs are at the
// versions the repository's package.json pins (the ones make agents and the
// tests build with).
func TestPinsMatchPackageJSON(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct {
		Dependencies    map[string]string `json:"dependencies"`
		DevDependencies map[string]string `json:"devDependencies"`
	}
	if err := json.Unmarshal(data, &pkg); err != nil {
		t.Fatal(err)
	}
	for _, p := range Pins {
		v, ok := pkg.DevDependencies[p.Name]
		if !ok {
			v, ok = pkg.Dependencies[p.Name]
		}
		if !ok {
			t.Errorf("%s is pinned here (%s) but not in package.json", p.Name, p.Version)
		} else if v != p.Version {
			t.Errorf("%s: pinned %s here, %s in package.json", p.Name, p.Version, v)
		}
	}
}

// TestSDKZipIsSDK: the embedded module zip is sdk/go as it is now, and the
// hash of its version is the one sdkgo.sums recorded for it.
func TestSDKZipIsSDK(t *testing.T) {
	var buf bytes.Buffer
	if err := zip.CreateFromDir(&buf, module.Version{Path: SDKModule, Version: SDKVersion}, filepath.Join("..", "..", "sdk", "go")); err != nil {
		t.Fatal(err)
	}
	want, err := hashZip(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	got, err := hashZip(sdkZip)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("sdkgo.zip (%s) is not sdk/go (%s): bump SDKVersion in sdk.go and run go generate ./internal/agentbuild", got, want)
	}
	sums, err := os.ReadFile("sdkgo.sums")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(sums), SDKVersion+" "+got+"\n") {
		t.Errorf("sdkgo.sums does not record %s %s: run go generate ./internal/agentbuild", SDKVersion, got)
	}
	lines, err := SDKSums()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(lines, SDKModule+" "+SDKVersion+" "+got+"\n"+SDKModule+" "+SDKVersion+"/go.mod h1:") {
		t.Errorf("SDKSums:\n%s", lines)
	}
}

// TestGoProxyLayout: the file proxy has what the go command asks a proxy
// for: list, .info, .mod and .zip under the escaped module path.
func TestGoProxyLayout(t *testing.T) {
	dir := t.TempDir()
	if err := writeGoProxy(dir); err != nil {
		t.Fatal(err)
	}
	v := filepath.Join(dir, "github.com", "toolhostd", "toolhostd", "sdk", "go", "@v")
	for name, want := range map[string]string{
		"list":               SDKVersion + "\n",
		SDKVersion + ".info": `{"Version":"` + SDKVersion + `"}` + "\n",
		SDKVersion + ".mod":  "module " + SDKModule + "\n",
	} {
		data, err := os.ReadFile(filepath.Join(v, name))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(data), want) {
			t.Errorf("%s = %q, want it to start %q", name, data, want)
		}
	}
	if data, err := os.ReadFile(filepath.Join(v, SDKVersion+".zip")); err != nil || !bytes.Equal(data, sdkZip) {
		t.Errorf("%s.zip is not the embedded zip (%v)", SDKVersion, err)
	}
	// A second write changes nothing and leaves no temporary file.
	if err := writeGoProxy(dir); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(v)
	if len(entries) != 4 {
		t.Errorf("%d files in %s, want 4", len(entries), v)
	}
}

// binDir is a directory for PATH holding links to the given programs
// (their paths).
func binDir(t *testing.T, progs ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, p := range progs {
		if err := os.Symlink(p, filepath.Join(dir, filepath.Base(p))); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestToolchainInstall: without node or npm on PATH the build says so;
// with an npm the install runs it in a temporary directory with the pins as
// dependencies, checks what it installed and renames it into place.
func TestToolchainInstall(t *testing.T) {
	root := t.TempDir()
	var progress bytes.Buffer
	// Looked up before PATH changes (the test suite needs Node.js anyway).
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal(err)
	}

	t.Setenv("PATH", binDir(t))
	if _, err := ensureToolchain(context.Background(), root, ToolchainGo, &progress); err == nil || !strings.Contains(err.Error(), "node is not on PATH") {
		t.Fatalf("err = %v, want node is not on PATH", err)
	}
	t.Setenv("PATH", binDir(t, node))
	if _, err := ensureToolchain(context.Background(), root, ToolchainGo, &progress); err == nil || !strings.Contains(err.Error(), "npm is not on PATH") {
		t.Fatalf("err = %v, want npm is not on PATH", err)
	}

	// A fake npm: writes each dependency of ./package.json at its version.
	bin := binDir(t, node)
	fake := `#!/bin/sh
[ "$1" = install ] || exit 2
exec node -e '
const fs = require("fs"), path = require("path");
const deps = JSON.parse(fs.readFileSync("package.json", "utf8")).dependencies;
for (const [n, v] of Object.entries(deps)) {
  fs.mkdirSync(path.join("node_modules", n), { recursive: true });
  fs.writeFileSync(path.join("node_modules", n, "package.json"), JSON.stringify({ name: n, version: v }));
}'
`
	if err := os.WriteFile(filepath.Join(bin, "npm"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	tc, err := ensureToolchain(context.Background(), root, ToolchainGo, &progress)
	if err != nil {
		t.Fatal(err)
	}
	if tc.dir != ToolchainDir(root, ToolchainGo) || !strings.HasPrefix(filepath.Base(tc.dir), "toolchain-go-") {
		t.Errorf("dir = %s, want %s", tc.dir, ToolchainDir(root, ToolchainGo))
	}
	if err := CheckNodeModules(filepath.Join(tc.dir, "node_modules"), ToolchainPins(ToolchainGo)); err != nil {
		t.Error(err)
	}
	// Only the toolchain's own packages: no SpiderMonkey for a Go build.
	if installed, _ := os.ReadDir(filepath.Join(tc.dir, "node_modules", "@bytecodealliance")); len(installed) != 2 {
		t.Errorf("installed %v, want jco and preview2-shim", installed)
	}
	if progress.String() != "installing the go toolchain (once) into "+tc.dir+": npm install @bytecodealliance/jco@1.35.0 @bytecodealliance/preview2-shim@0.25.0\n" {
		t.Errorf("progress: %q", progress.String())
	}
	if _, err := os.Stat(filepath.Join(tc.dir, "componentize-go.mjs")); err != nil {
		t.Error(err)
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 1 {
		t.Errorf("%d entries in the cache root, want the toolchain only: %v", len(entries), entries)
	}
	// Installed: no second npm run (one that fails would say so).
	if err := os.WriteFile(filepath.Join(bin, "npm"), []byte("#!/bin/sh\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	progress.Reset()
	if _, err := ensureToolchain(context.Background(), root, ToolchainGo, &progress); err != nil || progress.Len() != 0 {
		t.Errorf("second ensure: %v, progress %q", err, progress.String())
	}
	// A failed npm install names itself and leaves nothing behind, and
	// removes what an install killed over an hour ago left.
	other := t.TempDir()
	stale := filepath.Join(other, filepath.Base(ToolchainDir(other, ToolchainQJS))+".tmp-123")
	if err := os.MkdirAll(filepath.Join(stale, "node_modules"), 0o755); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	if _, err := ensureToolchain(context.Background(), other, ToolchainQJS, &progress); err == nil || !strings.Contains(err.Error(), "npm install of the qjs toolchain failed") {
		t.Errorf("err = %v", err)
	}
	if entries, _ := os.ReadDir(other); len(entries) != 0 {
		t.Errorf("a failed install left %v", entries)
	}
}

// TestToolchainsCoverPins: every pinned package belongs to one toolchain.
func TestToolchainsCoverPins(t *testing.T) {
	seen := map[string]int{}
	for _, name := range ToolchainNames {
		for _, p := range ToolchainPins(name) {
			seen[p.Name]++
		}
	}
	for _, p := range Pins {
		if seen[p.Name] != 1 {
			t.Errorf("%s is in %d toolchains, want 1", p.Name, seen[p.Name])
		}
	}
	if a, b := ToolchainDir("/c", ToolchainQJS), ToolchainDir("/c", ToolchainGo); a == b {
		t.Errorf("one directory for two toolchains: %s", a)
	}
}

func TestResolve(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{
		"a.js": "", "b.txt": "", "js/agent.js": "", "go/main.go": "package main", "empty/README": "",
	} {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(data), 0o644)
	}
	for _, tc := range []struct{ path, lang, file, name, err string }{
		{path: "a.js", lang: "js", file: "a.js", name: "a"},
		{path: "js", lang: "js", file: "js/agent.js", name: "js"},
		{path: "go", lang: "go", file: "go", name: "go"},
		{path: "b.txt", err: "not a JS file"},
		{path: "go/main.go", err: "give the Go main package's directory"},
		{path: "empty", err: "no .go files and no agent.js"},
		{path: "nope", err: "no such file or directory"},
	} {
		src, err := resolve(filepath.Join(dir, tc.path))
		if tc.err != "" {
			if _, ok := err.(*InputError); !ok || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err = %v, want an InputError with %q", tc.path, err, tc.err)
			}
			continue
		}
		if err != nil || src.lang != tc.lang || src.path != filepath.Join(dir, tc.file) || src.name != tc.name {
			t.Errorf("%s: %+v, %v", tc.path, src, err)
		}
	}
}
