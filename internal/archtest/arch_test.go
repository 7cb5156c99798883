package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the ## Floors diagram of docs/architecture.md from its table")

// TestArchitecture checks docs/architecture.md against `go list ./...`.
func TestArchitecture(t *testing.T) {
	root, modPath := moduleRoot(t)
	mod := listModule(t, root, modPath)
	docFile := filepath.Join(root, "docs", "architecture.md")
	text, err := os.ReadFile(docFile)
	if err != nil {
		t.Fatalf("read the doc: %v", err)
	}
	d, err := parseDoc(string(text))
	if err != nil {
		t.Fatalf("docs/architecture.md: %v", err)
	}
	if *update {
		if err := os.WriteFile(docFile, []byte(d.withFloors(floorsBlock(d.rows))), 0o644); err != nil {
			t.Fatalf("rewrite the doc: %v", err)
		}
		if d, err = parseDoc(d.withFloors(floorsBlock(d.rows))); err != nil {
			t.Fatalf("docs/architecture.md after -update: %v", err)
		}
	}
	for _, e := range check(d, mod) {
		t.Errorf("docs/architecture.md: %s", e)
	}
}

// moduleRoot is the directory of the module's go.mod and its module path.
func moduleRoot(t *testing.T) (string, string) {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}} {{.Path}}").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	dir, path, ok := strings.Cut(strings.TrimSpace(string(out)), " ")
	if !ok {
		t.Fatalf("go list -m: unexpected output %q", out)
	}
	return dir, path
}

// listModule runs `go list -json ./...` in the module root, with cgo on so
// that cgo files are listed as such.
func listModule(t *testing.T, root, modPath string) module {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -json ./...: %v: %s", err, stderr.String())
	}
	mod := module{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Dir        string
			GoFiles    []string
			CgoFiles   []string
			Imports    []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list: %v", err)
		}
		rel := inModule(p.ImportPath, modPath)
		if rel == "" {
			continue
		}
		info := &pkgInfo{Dir: p.Dir, GoFiles: append(p.GoFiles, p.CgoFiles...), CgoFiles: p.CgoFiles}
		for _, q := range p.Imports {
			if r := inModule(q, modPath); r != "" {
				info.Imports = append(info.Imports, r)
			}
		}
		mod[rel] = info
	}
	if len(mod) == 0 {
		t.Fatal("go list -json ./... listed no package")
	}
	track(t, mod)
	return mod
}

// track reads each package's directory and stats its files, so that go
// test's cache, which knows nothing of what `go list` read, reruns this
// test when a package's files change.
func track(t *testing.T, mod module) {
	t.Helper()
	for _, info := range mod {
		if _, err := os.ReadDir(info.Dir); err != nil {
			t.Fatalf("read %s: %v", info.Dir, err)
		}
		for _, f := range info.GoFiles {
			if _, err := os.Stat(filepath.Join(info.Dir, f)); err != nil {
				t.Fatalf("stat %s: %v", f, err)
			}
		}
	}
}

// inModule is path's part inside the module, "" for a path outside it.
func inModule(path, modPath string) string {
	rel, ok := strings.CutPrefix(path, modPath+"/")
	if !ok {
		return ""
	}
	return rel
}
