package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/testenv"
)

func TestSplitGrant(t *testing.T) {
	for _, c := range []struct {
		in    string
		name  string
		tools []string
		err   bool
	}{
		{in: "fs", name: "fs"},
		{in: "fs=read_*,list_*", name: "fs", tools: []string{"read_*", "list_*"}},
		{in: "fs= read_file ", name: "fs", tools: []string{"read_file"}},
		{in: "fs=", err: true},
		{in: "fs=a,,b", err: true},
	} {
		name, tools, err := splitGrant(c.in)
		if (err != nil) != c.err || name != c.name || !slices.Equal(tools, c.tools) {
			t.Errorf("splitGrant(%q) = %q, %q, %v", c.in, name, tools, err)
		}
	}
}

// auditLines parses the audit log at path.
func auditLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for l := range strings.Lines(string(b)) {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("audit line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

func grantsConfig(t *testing.T, dir, extraHost, rest string) string {
	t.Helper()
	root := testenv.Root(t)
	return writeConfigFile(t, dir, "toolhostd.toml", fmt.Sprintf(`version = 1
[host]
cache_dir = %q
%s

[tooling.everything]
command = "node"
args = [%q, "stdio"]
connect_timeout = "30s"
%s`, filepath.Join(root, "build", "test-cache"), extraHost, testenv.NPMServer(t, "server-everything"), rest))
}

// TestRunGrantTools: `run --grant everything=echo` lets the probe see and
// call only echo; the denied call is in the audit log. A malformed --grant
// is a usage error.
func TestRunGrantTools(t *testing.T) {
	dir := t.TempDir()
	auditPath := filepath.Join(dir, "audit.jsonl")
	cfg := grantsConfig(t, dir, fmt.Sprintf("audit_log = %q", auditPath), "")
	steps, _ := json.Marshal(map[string]any{"steps": []map[string]any{
		{"op": "get", "name": "everything", "as": "e"},
		{"op": "list-tools", "h": "e"},
		{"op": "call-tool-blocking", "h": "e", "tool": "get-sum", "args": map[string]any{"a": 1, "b": 2}},
		{"op": "call-tool-blocking", "h": "e", "tool": "echo", "args": map[string]any{"message": "granted"}},
	}})
	if code, _, errs := runCLI(t, "--config", cfg, "run", testdata("echo.wat"), "--grant", "everything="); code != 64 || !strings.Contains(errs, `--grant "everything=": an empty pattern after =`) {
		t.Errorf("--grant everything=: exit %d\n%s", code, errs)
	}
	code, out, errs := runCLI(t, "--config", cfg, "run", testenv.Agent(t, "test-agents", "probe"),
		"--grant", "everything=echo", "--input", string(steps))
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	var res []struct {
		OK  json.RawMessage
		Err *struct{ Code, Message string }
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res) != 4 {
		t.Fatalf("output %q: %v", out, err)
	}
	var tools []struct{ Name string }
	if err := json.Unmarshal(res[1].OK, &tools); err != nil || len(tools) != 1 || tools[0].Name != "echo" {
		t.Errorf("list-tools under --grant everything=echo: %s", res[1].OK)
	}
	if e := res[2].Err; e == nil || e.Code != "denied" || !strings.Contains(e.Message, `"get-sum"`) || !strings.Contains(e.Message, "grants.everything.tools") {
		t.Errorf("get-sum: %+v", res[2])
	}
	if res[3].Err != nil || !strings.Contains(string(res[3].OK), "granted") {
		t.Errorf("echo: %+v", res[3])
	}
	lines := auditLines(t, auditPath)
	if len(lines) != 2 || lines[0]["tool"] != "get-sum" || lines[0]["outcome"] != "denied" || lines[1]["tool"] != "echo" || lines[1]["outcome"] != "ok" {
		t.Errorf("audit lines %v", lines)
	}
	if st, err := os.Stat(auditPath); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("audit log mode %v (%v), want 0600", st.Mode(), err)
	}
}

// TestServeAuditRotation: after logrotate moves the audit log, SIGHUP makes
// serve write to a new file at the configured path (the reload it also
// does adds an agent whose calls land there).
func TestServeAuditRotation(t *testing.T) {
	noConfig(t)
	dir := t.TempDir()
	auditPath := filepath.Join(dir, "audit.jsonl")
	probe := testenv.Agent(t, "test-agents", "probe")
	agent := func(name string) string {
		steps, _ := json.Marshal(map[string]any{"steps": []map[string]any{
			{"op": "get", "name": "everything", "as": "e"},
			{"op": "call-tool-blocking", "h": "e", "tool": "echo", "args": map[string]any{"message": name}},
		}})
		return fmt.Sprintf("\n[agent.%s]\ncomponent = %q\ntoolings = [\"everything\"]\ninput = %q\nrestart = \"never\"\n", name, probe, steps)
	}
	host := fmt.Sprintf("audit_log = %q\ncontrol_socket = %q", auditPath, filepath.Join(dir, "ctl.sock"))
	cfgPath := grantsConfig(t, dir, host, agent("first"))
	srv := startServe(t, cfgPath)
	cmd, stderr := srv.cmd, srv.out
	hasAgent := func(path, name string) bool {
		b, err := os.ReadFile(path)
		return err == nil && strings.Contains(string(b), `"agent":"`+name+`"`)
	}
	waitFor(t, 120*time.Second, func() bool { return hasAgent(auditPath, "first") }, stderr)
	rotated := auditPath + ".1"
	if err := os.Rename(auditPath, rotated); err != nil {
		t.Fatal(err)
	}
	grantsConfig(t, dir, host, agent("first")+agent("second"))
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 120*time.Second, func() bool { return hasAgent(auditPath, "second") }, stderr)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := srv.wait(t, 30*time.Second); err != nil {
		t.Fatalf("serve: %v\n%s", err, stderr.String())
	}
	for _, l := range auditLines(t, rotated) {
		if l["agent"] != "first" {
			t.Errorf("rotated file has %v", l)
		}
	}
	cur := auditLines(t, auditPath)
	if len(cur) != 1 || cur[0]["agent"] != "second" || cur[0]["op"] != "call-tool-blocking" || cur[0]["outcome"] != "ok" {
		t.Errorf("reopened file: %v", cur)
	}
	if st, err := os.Stat(auditPath); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("reopened audit log mode %v (%v), want 0600", st.Mode(), err)
	}
}
