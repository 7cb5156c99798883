// Package wit holds the WIT this toolhostd serves, for the tools that build
// agents against it (toolhostd build): the files of this directory are the
// contract; this package only embeds them.
package wit

import (
	"bytes"
	"embed"
	"io/fs"
	"os"
	"path/filepath"
)

// Agent is wit/agent.wit: the package toolhost:agent@0.3.0 and its world
// agent.
//
//go:embed agent.wit
var Agent []byte

// Package is the name and version agent.wit declares
// ("toolhost:agent@0.3.0"): the world toolhostd build builds against.
func Package() string {
	for line := range bytes.Lines(Agent) {
		if name, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("package ")); ok {
			return string(bytes.TrimSuffix(name, []byte(";")))
		}
	}
	return ""
}

// deps are the packages agent.wit imports (wasi:keyvalue), one directory
// each, as wit-parser expects beside the main package.
//
//go:embed deps
var deps embed.FS

// WriteDir writes agent.wit and its deps/ directory into dir, which then
// is a WIT directory that a build tool resolves whole (or whose agent.wit
// scripts/componentize-go.mjs reads with the deps beside it).
func WriteDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "agent.wit"), Agent, 0o644); err != nil {
		return err
	}
	return fs.WalkDir(deps, "deps", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		to := filepath.Join(dir, filepath.FromSlash(p))
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		b, err := deps.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o644)
	})
}
