package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "present.wasm"), []byte("\x00asm"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "dir.wasm"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		toml string
		want []string // each error's text, in order; none: ok
	}{
		{name: "present", toml: "[agent.a]\ncomponent = \"present.wasm\"\n"},
		{name: "no agents", toml: ""},
		{name: "missing and a directory", toml: "[agent.b]\ncomponent = \"dir.wasm\"\n\n[agent.a]\ncomponent = \"missing.wasm\"\n",
			want: []string{
				"toolhostd.toml:3:1: agent.b.component: component " + filepath.Join(dir, "dir.wasm") + " is not a file",
				"toolhostd.toml:6:1: agent.a.component: component file " + filepath.Join(dir, "missing.wasm") + " does not exist",
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, "toolhostd.toml")
			if err := os.WriteFile(path, []byte("version = 1\n"+c.toml), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := Load(path)
			if err != nil {
				t.Fatalf("the config does not parse: %v", err)
			}
			err = cfg.CheckFiles()
			if len(c.want) == 0 {
				if err != nil {
					t.Fatalf("CheckFiles: %v", err)
				}
				return
			}
			errs, ok := err.(Errors)
			if !ok || len(errs) != len(c.want) {
				t.Fatalf("CheckFiles: %v, want %d errors", err, len(c.want))
			}
			for i, w := range c.want {
				if got := strings.TrimPrefix(errs[i].Error(), dir+string(filepath.Separator)); !strings.HasPrefix(got, w) {
					t.Errorf("error %d:\n got %s\nwant %s...", i, got, w)
				}
			}
		})
	}
}
