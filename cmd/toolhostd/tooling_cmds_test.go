package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/testenv"
)

// everythingConfig writes a config with server-everything on stdio; the
// test fails (it does not skip) when node_modules is missing.
func everythingConfig(t *testing.T) string {
	t.Helper()
	entry := testenv.NPMServer(t, "server-everything")
	cfg := fmt.Sprintf("version = 1\n\n[tooling.everything]\ncommand = \"node\"\nargs = [%q, \"stdio\"]\nconnect_timeout = \"30s\"\n", entry)
	return writeConfigFile(t, t.TempDir(), "toolhostd.toml", cfg)
}

func TestToolingCommands(t *testing.T) {
	cfg := everythingConfig(t)
	run := func(args ...string) (int, string, string) {
		return runCLI(t, append([]string{"--config", cfg}, args...)...)
	}

	t.Run("tools", func(t *testing.T) {
		code, out, errs := run("tools", "everything")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		if !strings.HasPrefix(out, "NAME") || !strings.Contains(out, "echo") || !strings.Contains(out, "Echoes back the input string") {
			t.Errorf("tools table:\n%s", out)
		}
	})
	t.Run("call --progress", func(t *testing.T) {
		code, out, errs := run("call", "everything", "trigger-long-running-operation", `{"duration":0.6,"steps":3}`, "--progress")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		if !strings.Contains(out, "Long running operation completed") {
			t.Errorf("call output:\n%s", out)
		}
		// The last notification may be handled after the result (go-sdk
		// handles notifications apart from responses); the first two
		// come 200ms before it.
		for _, want := range []string{"progress: trigger-long-running-operation 1/3\n", "progress: trigger-long-running-operation 2/3\n"} {
			if !strings.Contains(errs, want) {
				t.Errorf("stderr lacks %q:\n%s", want, errs)
			}
		}
	})
	t.Run("call without --progress", func(t *testing.T) {
		code, _, errs := run("call", "everything", "trigger-long-running-operation", `{"duration":0.2,"steps":2}`)
		if code != 0 || strings.Contains(errs, "progress:") {
			t.Errorf("exit %d, stderr:\n%s", code, errs)
		}
	})
	t.Run("tools --json", func(t *testing.T) {
		code, out, errs := run("tools", "everything", "--json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		var tools []struct {
			Name        string
			InputSchema map[string]any `json:"inputSchema"`
		}
		if err := json.Unmarshal([]byte(out), &tools); err != nil {
			t.Fatalf("%v:\n%s", err, out)
		}
		found := false
		for _, tl := range tools {
			if tl.Name == "echo" {
				found = tl.InputSchema["type"] == "object"
			}
		}
		if !found {
			t.Errorf("echo with an object schema missing from %s", out)
		}
	})
	t.Run("call", func(t *testing.T) {
		code, out, errs := run("call", "everything", "echo", `{"message":"from the cli"}`)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		var res struct {
			Name      string
			Arguments map[string]string
			Value     struct {
				Content []struct{ Text string }
			}
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("%v:\n%s", err, out)
		}
		if res.Name != "echo" || res.Arguments["message"] != "from the cli" || len(res.Value.Content) != 1 || res.Value.Content[0].Text != "Echo: from the cli" {
			t.Errorf("call output:\n%s", out)
		}
	})
	t.Run("call unknown tool", func(t *testing.T) {
		// server-everything (TypeScript SDK) answers an unknown tool with an
		// isError result: a success at this level, printed, exit 0.
		code, out, errs := run("call", "everything", "no-such-tool")
		if code != 0 || !strings.Contains(out, `"isError": true`) {
			t.Errorf("exit %d, stdout %s, stderr %s", code, out, errs)
		}
	})
	t.Run("read unknown resource", func(t *testing.T) {
		code, _, errs := run("read", "everything", "demo://no/such/resource")
		if code != exitFailure || !strings.Contains(errs, "toolhostd: not-found: ") {
			t.Errorf("exit %d, stderr %q", code, errs)
		}
	})
	t.Run("call bad json", func(t *testing.T) {
		code, _, errs := run("call", "everything", "echo", `[1,2]`)
		if code != exitFailure || !strings.Contains(errs, "invalid-argument") {
			t.Errorf("exit %d, stderr %q", code, errs)
		}
	})
	t.Run("resources", func(t *testing.T) {
		code, out, errs := run("resources", "everything")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		if !strings.HasPrefix(out, "URI") || !strings.Contains(out, "demo://resource/static/document/") {
			t.Errorf("resources table:\n%s", out)
		}
	})
	t.Run("read", func(t *testing.T) {
		code, out, errs := run("read", "everything", "demo://resource/dynamic/blob/3")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		var rc struct {
			URI, MIMEType, Content string
		}
		if err := json.Unmarshal([]byte(out), &rc); err != nil {
			t.Fatalf("%v:\n%s", err, out)
		}
		if rc.URI != "demo://resource/dynamic/blob/3" || rc.MIMEType != "text/plain" || !strings.HasPrefix(rc.Content, "Resource 3: This is a base64 blob") {
			t.Errorf("read output:\n%s", out)
		}
	})
	t.Run("unknown tooling", func(t *testing.T) {
		code, _, errs := run("tools", "nope")
		if code != exitUsage || !strings.Contains(errs, `no tooling named "nope" (defined: everything)`) {
			t.Errorf("exit %d, stderr %q", code, errs)
		}
	})
}

// TestOneShotReportsConnectionErrorAtOnce: against a server that exits at
// start, every one-shot command fails with the first connection error (its
// exit status and last stderr line), not after the minute-long connect
// timeout.
func TestOneShotReportsConnectionErrorAtOnce(t *testing.T) {
	cfg := writeConfigFile(t, t.TempDir(), "toolhostd.toml",
		"version = 1\n[tooling.broken]\ncommand = \"sh\"\nargs = [\"-c\", \"echo no database >&2; exit 7\"]\nconnect_timeout = \"1m\"\n")
	for _, args := range [][]string{
		{"tools", "broken"},
		{"call", "broken", "echo"},
		{"resources", "broken"},
		{"read", "broken", "test://x"},
		{"watch", "broken", "test://x"},
		{"watch", "broken", "--list"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			start := time.Now()
			code, _, errs := runCLI(t, append([]string{"--config", cfg}, args...)...)
			if code != exitFailure {
				t.Fatalf("exit %d, want %d: %s", code, exitFailure, errs)
			}
			for _, want := range []string{"unavailable", "exit status 7", `"no database"`} {
				if !strings.Contains(errs, want) {
					t.Errorf("stderr lacks %q:\n%s", want, errs)
				}
			}
			if d := time.Since(start); d > 30*time.Second {
				t.Errorf("took %v: it waited for the connect timeout", d)
			}
		})
	}
}
