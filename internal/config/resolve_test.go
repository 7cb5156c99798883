package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	dir := t.TempDir()
	write := func(p string) string {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("version = 1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	flagFile := write(filepath.Join(dir, "flag.toml"))
	envFile := write(filepath.Join(dir, "env.toml"))
	sysFile := filepath.Join(dir, "etc", "toolhostd.toml")
	work := filepath.Join(dir, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	old := systemPath
	systemPath = sysFile
	t.Cleanup(func() { systemPath = old })
	t.Chdir(work)

	type step struct {
		name                 string
		flag, env            string
		local, system        bool
		want, wantErr, tried string
	}
	for _, tc := range []step{
		{name: "nothing", wantErr: "no config file", tried: "toolhostd.toml, " + sysFile},
		{name: "system", system: true, want: sysFile},
		{name: "local before system", local: true, system: true, want: "toolhostd.toml"},
		{name: "env before local", env: envFile, local: true, system: true, want: envFile},
		{name: "flag before env", flag: flagFile, env: envFile, local: true, want: flagFile},
		{name: "flag missing does not fall back", flag: filepath.Join(dir, "nope.toml"), local: true, wantErr: "nope.toml (from --config) does not exist"},
		{name: "env missing does not fall back", env: filepath.Join(dir, "gone.toml"), local: true, wantErr: "gone.toml (from $TOOLHOSTD_CONFIG) does not exist"},
		{name: "flag is a directory", flag: dir, wantErr: "is a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(filepath.Join(work, "toolhostd.toml"))
			os.Remove(sysFile)
			if tc.local {
				write(filepath.Join(work, "toolhostd.toml"))
			}
			if tc.system {
				write(sysFile)
			}
			t.Setenv(EnvConfig, tc.env)
			got, err := Resolve(tc.flag)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), tc.tried) {
					t.Fatalf("Resolve = %q, %v; want an error with %q and %q", got, err, tc.wantErr, tc.tried)
				}
				if strings.Contains(tc.wantErr, "does not exist") || tc.name == "nothing" {
					if !errors.Is(err, ErrNoConfig) {
						t.Errorf("error %v is not ErrNoConfig", err)
					}
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Resolve = %q, %v; want %q", got, err, tc.want)
			}
			if _, err := Load(got); err != nil {
				t.Errorf("Load(%s): %v", got, err)
			}
		})
	}
}
