package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/config"
)

func writeConfigFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConfigValidate(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv(config.EnvConfig, "")
	good := writeConfigFile(t, dir, "good.toml", "version = 1\n[tooling.a]\ncommand = \"x\"\n[tooling.b]\nurl = \"http://h/mcp\"\n[agent.w]\ncomponent = \"w.wasm\"\ntoolings = [\"a\"]\n")
	bad := writeConfigFile(t, dir, "bad.toml", "version = 2\n\n[tooling.fs]\ncomand = \"node\"\n[agent.w]\ntoolings = [\"nope\"]\n")
	syntax := writeConfigFile(t, dir, "syntax.toml", "version = 1\n[tooling.fs\n")
	writeConfigFile(t, dir, "w.wasm", "\x00asm") // good.toml's component: validate checks it exists
	gone := writeConfigFile(t, dir, "gone.toml", "version = 1\n[agent.w]\ncomponent = \"w.wasm\"\n[agent.g]\ncomponent = \"gone.wasm\"\n")
	wantBad := []string{
		bad + ":1:1: version: unsupported version 2 (this toolhostd reads version 1)",
		bad + ":3:1: tooling.fs: set command (for a stdio server) or url (for an http or sse server)",
		bad + `:4:1: tooling.fs.comand: unknown key; did you mean "command"?`,
		bad + ":5:1: agent.w.component: missing (the agent's WebAssembly component)",
		bad + `:6:13: agent.w.toolings[0]: no tooling named "nope" (defined: fs)`,
	}

	for _, tc := range []struct {
		name       string
		args       []string
		env        string
		code       int
		stdout     string
		stderrHas  []string
		stderrLine int // number of lines on stderr, -1: don't check
	}{
		{name: "valid via --config", args: []string{"--config", good, "config", "validate"}, code: 0,
			stdout: "ok: " + good + ": 2 toolings, 1 agent\n", stderrLine: 0},
		{name: "valid via argument", args: []string{"config", "validate", good}, code: 0,
			stdout: "ok: " + good + ": 2 toolings, 1 agent\n", stderrLine: 0},
		{name: "valid via env", args: []string{"config", "validate"}, env: good, code: 0,
			stdout: "ok: " + good + ": 2 toolings, 1 agent\n", stderrLine: 0},
		{name: "every error, one per line", args: []string{"config", "validate", bad}, code: 64,
			stderrHas: append(wantBad, "toolhostd: "+bad+": 5 errors"), stderrLine: 6},
		{name: "a missing component file", args: []string{"config", "validate", gone}, code: 64,
			stderrHas:  []string{gone + ":5:1: agent.g.component: component file " + filepath.Join(dir, "gone.wasm") + " does not exist", "1 error"},
			stderrLine: 2},
		{name: "a missing component file, not checked", args: []string{"config", "validate", "--no-files", gone}, code: 0,
			stdout: "ok: " + gone + ": 0 toolings, 2 agents\n", stderrLine: 0},
		{name: "syntax error", args: []string{"--config", syntax, "config", "validate"}, code: 64,
			stderrHas: []string{syntax + ":2:12: expected ']' to close table name", "1 error"}, stderrLine: 2},
		{name: "no config anywhere", args: []string{"config", "validate"}, code: 64,
			stderrHas: []string{"no config file", "toolhostd.toml"}, stderrLine: 1},
		{name: "missing file", args: []string{"config", "validate", filepath.Join(dir, "nope.toml")}, code: 64,
			stderrHas: []string{"nope.toml (from --config) does not exist"}, stderrLine: 1},
		{name: "too many args", args: []string{"config", "validate", "a", "b"}, code: 64, stderrLine: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(config.EnvConfig, tc.env)
			code, stdout, stderr := runCLI(t, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout, stderr)
			}
			if tc.stdout != "" || tc.code != 0 {
				if stdout != tc.stdout {
					t.Errorf("stdout = %q, want %q", stdout, tc.stdout)
				}
			}
			for _, s := range tc.stderrHas {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, stderr)
				}
			}
			if tc.stderrLine >= 0 {
				if n := strings.Count(stderr, "\n"); n != tc.stderrLine {
					t.Errorf("stderr has %d lines, want %d:\n%s", n, tc.stderrLine, stderr)
				}
			}
		})
	}
	// The lines come in document order.
	_, _, stderr := runCLI(t, "config", "validate", bad)
	if got := strings.Split(strings.TrimSpace(stderr), "\n"); strings.Join(got[:len(wantBad)], "\n") != strings.Join(wantBad, "\n") {
		t.Errorf("stderr:\n%s\nwant first lines:\n%s", stderr, strings.Join(wantBad, "\n"))
	}
}

func TestConfigValidateNeverResolvesSecrets(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TH_SECRET", "sk-live-secret")
	p := writeConfigFile(t, dir, "s.toml", "version = 1\n[tooling.r]\nurl = \"https://h/mcp\"\nheaders = { A = \"${env:TH_SECRET}\", B = \"${env:TH_UNSET_X}\" }\ncomand = 1\n")
	code, stdout, stderr := runCLI(t, "config", "validate", p)
	if code != 64 || strings.Contains(stdout+stderr, "sk-live-secret") || strings.Contains(stderr, "TH_UNSET_X") {
		t.Errorf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
}

func TestConfigDefault(t *testing.T) {
	code, stdout, stderr := runCLI(t, "config", "default")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if stdout != config.Default() {
		t.Errorf("config default printed something else than config.Default()")
	}
	// What it prints is a valid config that `config validate` accepts; its
	// agent's component is one the user builds next, so files are not checked.
	p := writeConfigFile(t, t.TempDir(), "toolhostd.toml", stdout)
	code, out, errb := runCLI(t, "config", "validate", "--no-files", p)
	if code != 0 || out != "ok: "+p+": 1 tooling, 1 agent\n" {
		t.Errorf("validate of the default: exit %d\n%s%s", code, out, errb)
	}
	if code, _, _ := runCLI(t, "config", "default", "extra"); code != 64 {
		t.Errorf("config default extra: exit %d, want 64", code)
	}
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(config.EnvConfig, "")
	p := writeConfigFile(t, dir, "c.toml", "version = 1\n[host]\nlog_level = \"debug\"\n")
	c, err := loadConfig(&globalOptions{configPath: p})
	if err != nil || c.Host.LogLevel != "debug" || c.Path != p {
		t.Fatalf("loadConfig = %+v, %v", c, err)
	}
	for _, path := range []string{filepath.Join(dir, "missing.toml"), writeConfigFile(t, dir, "bad.toml", "version = 3\n")} {
		_, err := loadConfig(&globalOptions{configPath: path})
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != exitUsage {
			t.Errorf("loadConfig(%s) = %v, want an exitUsage error", path, err)
		}
	}
}

func TestNewLogger(t *testing.T) {
	var buf bytes.Buffer
	log, err := newLogger(config.Host{LogLevel: "warn", LogFormat: "json"}, &buf)
	if err != nil {
		t.Fatal(err)
	}
	log.Named("config").Info("hidden")
	log.Named("config").Warn("shown", zap.String("tooling", "fs"))
	_ = log.Sync()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("got %d lines: %q", len(lines), buf.String())
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatalf("not JSON: %q", lines[0])
	}
	if rec["msg"] != "shown" || rec["level"] != "warn" || rec["logger"] != "config" || rec["tooling"] != "fs" {
		t.Errorf("record = %v", rec)
	}

	buf.Reset()
	log, err = newLogger(config.Host{}, &buf) // defaults: info, console
	if err != nil {
		t.Fatal(err)
	}
	log.Debug("hidden")
	log.Info("hello", zap.String("agent", "w"))
	_ = log.Sync()
	if s := buf.String(); strings.Contains(s, "hidden") || !strings.Contains(s, "INFO") || !strings.Contains(s, "hello") || !strings.Contains(s, `"agent": "w"`) || strings.HasPrefix(s, "{") {
		t.Errorf("console output = %q", s)
	}

	for _, h := range []config.Host{{LogLevel: "loud"}, {LogFormat: "xml"}} {
		if _, err := newLogger(h, &buf); err == nil {
			t.Errorf("newLogger(%+v) succeeded", h)
		}
	}
}
