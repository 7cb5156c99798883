package agentbuild

import (
	"archive/zip"
	"bytes"
	_ "embed"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"
)

//go:generate go run gen_sdk.go

// SDKModule is the Go SDK's module path, which `toolhostd new --lang go`
// projects require.
const SDKModule = "github.com/toolhostd/toolhostd/sdk/go"

// SDKVersion is the version of the embedded SDK: the module is not
// published, so toolhostd build serves it from a file GOPROXY. A version is
// immutable once a module cache holds it: gen_sdk.go refuses to record
// different content under a version sdkgo.sums already lists, so a change to
// sdk/go goes with a new version here. It follows the WIT package the SDK
// implements (toolhost:agent@0.3.0; v0.3.1 adds the key-value store).
const SDKVersion = "v0.3.1"

// sdkZip is sdk/go as the module zip of SDKModule@SDKVersion
// (golang.org/x/mod/zip's layout), made by gen_sdk.go.
//
//go:embed sdkgo.zip
var sdkZip []byte

// SDKSums are the go.sum lines of the embedded SDK (its zip and its go.mod).
func SDKSums() (string, error) {
	zh, err := hashZip(sdkZip)
	if err != nil {
		return "", err
	}
	mod, err := sdkGoMod()
	if err != nil {
		return "", err
	}
	mh, err := hashGoMod(mod)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s %s %s\n%s %s/go.mod %s\n", SDKModule, SDKVersion, zh, SDKModule, SDKVersion, mh), nil
}

// hashZip is the h1: hash of a module zip, as go.sum records it.
func hashZip(data []byte) (string, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return "", err
	}
	var names []string
	files := map[string]*zip.File{}
	for _, f := range zr.File {
		names = append(names, f.Name)
		files[f.Name] = f
	}
	return dirhash.Hash1(names, func(name string) (io.ReadCloser, error) { return files[name].Open() })
}

// hashGoMod is the h1: hash of a go.mod file, as go.sum's "/go.mod" line
// records it.
func hashGoMod(mod []byte) (string, error) {
	return dirhash.Hash1([]string{"go.mod"}, func(string) (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(mod)), nil
	})
}

func sdkGoMod() ([]byte, error) {
	zr, err := zip.NewReader(bytes.NewReader(sdkZip), int64(len(sdkZip)))
	if err != nil {
		return nil, err
	}
	f, err := zr.Open(SDKModule + "@" + SDKVersion + "/go.mod")
	if err != nil {
		return nil, fmt.Errorf("the embedded go sdk: %w", err)
	}
	defer f.Close()
	return io.ReadAll(f)
}

// writeGoProxy writes the embedded SDK into dir as a module proxy
// (GOPROXY=file://DIR): MODULE/@v/list, VERSION.info, .mod and .zip. Files
// are replaced by rename, so concurrent builds see whole files.
func writeGoProxy(dir string) error {
	esc, err := module.EscapePath(SDKModule)
	if err != nil {
		return err
	}
	ver, err := module.EscapeVersion(SDKVersion)
	if err != nil {
		return err
	}
	mod, err := sdkGoMod()
	if err != nil {
		return err
	}
	v := filepath.Join(dir, filepath.FromSlash(esc), "@v")
	if err := os.MkdirAll(v, 0o755); err != nil {
		return err
	}
	for name, data := range map[string][]byte{
		"list":        []byte(SDKVersion + "\n"),
		ver + ".info": fmt.Appendf(nil, "{\"Version\":%q}\n", SDKVersion),
		ver + ".mod":  mod,
		ver + ".zip":  sdkZip,
	} {
		if err := writeFileIfChanged(filepath.Join(v, name), data); err != nil {
			return err
		}
	}
	return nil
}

// writeFileIfChanged writes data to path through a temporary file and a
// rename unless path already holds it.
func writeFileIfChanged(path string, data []byte) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // no-op after the rename
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// goListValue appends item to a comma-separated go env list value.
func goListValue(list, item string) string {
	if strings.TrimSpace(list) == "" {
		return item
	}
	return list + "," + item
}
