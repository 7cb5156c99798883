package agentbuild

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/toolhostd/toolhostd/scripts"
)

// A Pin is an npm package at an exact version.
type Pin struct{ Name, Version string }

// Pins are the npm packages toolhostd build runs, at the versions the
// repository's package.json pins (a test checks they are equal).
var Pins = []Pin{
	{"@bytecodealliance/componentize-js", "0.23.0"},
	{"@bytecodealliance/jco", "1.35.0"},
	{"@bytecodealliance/preview2-shim", "0.25.0"},
	{"componentize-qjs", "0.4.5"},
}

// Toolchain names: each is installed on its first use, into a directory of
// its own, so that building JS with QuickJS does not download SpiderMonkey.
const (
	ToolchainQJS          = "qjs"          // componentize-qjs
	ToolchainSpiderMonkey = "spidermonkey" // componentize-js
	ToolchainGo           = "go"           // jco (and its preview2-shim) for componentize-go.mjs
)

// ToolchainNames are every toolchain's name.
var ToolchainNames = []string{ToolchainQJS, ToolchainSpiderMonkey, ToolchainGo}

var toolchainPackages = map[string][]string{
	ToolchainQJS:          {"componentize-qjs"},
	ToolchainSpiderMonkey: {"@bytecodealliance/componentize-js"},
	ToolchainGo:           {"@bytecodealliance/jco", "@bytecodealliance/preview2-shim"},
}

// ToolchainPins are the pins of toolchain name's npm packages.
func ToolchainPins(name string) []Pin {
	var pins []Pin
	for _, pkg := range toolchainPackages[name] {
		for _, p := range Pins {
			if p.Name == pkg {
				pins = append(pins, p)
			}
		}
	}
	return pins
}

// CacheRoot is where toolhostd build keeps its toolchains and its Go module
// proxy: os.UserCacheDir()/toolhostd ($XDG_CACHE_HOME/toolhostd).
func CacheRoot() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for the build toolchains: %w", err)
	}
	return filepath.Join(d, "toolhostd"), nil
}

// ToolchainDir is the directory under root that holds toolchain name's
// npm packages: toolchain-NAME-HASH, HASH standing for its pins, so that a
// toolhostd with other pins installs beside it. Its node_modules is what
// npm installed.
func ToolchainDir(root, name string) string {
	h := sha256.New()
	for _, p := range ToolchainPins(name) {
		fmt.Fprintf(h, "%s@%s\n", p.Name, p.Version)
	}
	return filepath.Join(root, "toolchain-"+name+"-"+hex.EncodeToString(h.Sum(nil))[:12])
}

// CheckNodeModules reports whether dir (a node_modules) holds every one of
// pins at its version, and says which one does not.
func CheckNodeModules(dir string, pins []Pin) error {
	for _, p := range pins {
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p.Name), "package.json"))
		if err != nil {
			return fmt.Errorf("%s is not installed in %s", p.Name, dir)
		}
		var pkg struct{ Version string }
		if err := json.Unmarshal(data, &pkg); err != nil {
			return fmt.Errorf("%s in %s: package.json: %w", p.Name, dir, err)
		}
		if pkg.Version != p.Version {
			return fmt.Errorf("%s in %s is %s, want %s", p.Name, dir, pkg.Version, p.Version)
		}
	}
	return nil
}

// toolchain is an installed toolchain directory and the node that runs it.
type toolchain struct {
	dir  string
	node string
}

// lookPath finds a program the build needs, or says what it is for.
func lookPath(name, what string) (string, error) {
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%s is not on PATH: %s", name, what)
	}
	return p, nil
}

const nodeNeeded = "toolhostd build runs the npm tools componentize-qjs, componentize-js and jco with Node.js (18 or later, with npm: https://nodejs.org)"

// ensureToolchain returns toolchain name under root, installing its pins
// with npm first when it is missing (a progress line goes to progress).
// The install goes to a temporary directory renamed into place, so an
// interrupted one leaves nothing that looks installed.
func ensureToolchain(ctx context.Context, root, name string, progress io.Writer) (*toolchain, error) {
	node, err := lookPath("node", nodeNeeded)
	if err != nil {
		return nil, err
	}
	dir, pins := ToolchainDir(root, name), ToolchainPins(name)
	if CheckNodeModules(filepath.Join(dir, "node_modules"), pins) != nil {
		if err := install(ctx, root, dir, name, pins, progress); err != nil {
			return nil, err
		}
	}
	if name == ToolchainGo {
		if err := writeFileIfChanged(filepath.Join(dir, "componentize-go.mjs"), scripts.ComponentizeGo); err != nil {
			return nil, err
		}
		if err := writeFileIfChanged(filepath.Join(dir, "wit-source.mjs"), scripts.WitSource); err != nil {
			return nil, err
		}
	}
	return &toolchain{dir: dir, node: node}, nil
}

func install(ctx context.Context, root, dir, name string, pins []Pin, progress io.Writer) error {
	npm, err := lookPath("npm", nodeNeeded)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	// An install killed before it could clean up left its temporary
	// directory: remove those over an hour old (not a running install).
	stale, _ := filepath.Glob(filepath.Join(root, filepath.Base(dir)+".tmp-*"))
	for _, d := range stale {
		if fi, err := os.Stat(d); err == nil && time.Since(fi.ModTime()) > time.Hour {
			os.RemoveAll(d)
		}
	}
	tmp, err := os.MkdirTemp(root, filepath.Base(dir)+".tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) // no-op after the rename
	deps := map[string]string{}
	names := make([]string, len(pins))
	for i, p := range pins {
		deps[p.Name] = p.Version
		names[i] = p.Name + "@" + p.Version
	}
	pkg, err := json.MarshalIndent(map[string]any{
		"name": "toolhostd-toolchain", "private": true,
		"description":  "npm packages toolhostd build runs (written by toolhostd)",
		"dependencies": deps,
	}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, "package.json"), append(pkg, '\n'), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(progress, "installing the %s toolchain (once) into %s: npm install %s\n", name, dir, strings.Join(names, " "))
	if err := run(ctx, tmp, nil, npm, "install", "--no-audit", "--no-fund", "--no-update-notifier", "--loglevel=error"); err != nil {
		return fmt.Errorf("npm install of the %s toolchain failed: %w", name, err)
	}
	if err := CheckNodeModules(filepath.Join(tmp, "node_modules"), pins); err != nil {
		return fmt.Errorf("npm install of the %s toolchain: %w", name, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another build installed it meanwhile, or an earlier install was
		// left incomplete: keep a complete one, replace the other.
		if CheckNodeModules(filepath.Join(dir, "node_modules"), pins) == nil {
			return nil
		}
		if rerr := os.RemoveAll(dir); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			return rerr
		}
		return os.Rename(tmp, dir)
	}
	return nil
}

// bin is the path of the JS entry point of package pkg's command name
// (its package.json "bin").
func (tc *toolchain) bin(pkg, name string) (string, error) {
	dir := filepath.Join(tc.dir, "node_modules", filepath.FromSlash(pkg))
	data, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return "", err
	}
	var p struct {
		Bin json.RawMessage `json:"bin"`
	}
	if err := json.Unmarshal(data, &p); err != nil {
		return "", fmt.Errorf("%s: package.json: %w", pkg, err)
	}
	var one string
	var many map[string]string
	switch {
	case json.Unmarshal(p.Bin, &one) == nil && one != "":
	case json.Unmarshal(p.Bin, &many) == nil && many[name] != "":
		one = many[name]
	default:
		return "", fmt.Errorf("%s: package.json has no bin %q", pkg, name)
	}
	return filepath.Join(dir, filepath.FromSlash(one)), nil
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{"…"}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}
