package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhostd/toolhostd/internal/provider/providertest"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

// chatConfig writes a config with the fake OpenAI API as provider gpt and
// server-everything as tooling everything.
func chatConfig(t *testing.T, srv *providertest.Server) string {
	t.Helper()
	c := srv.Config(t)
	cfg := fmt.Sprintf("version = 1\n\n[provider.gpt]\nkind = %q\nbase_url = %q\napi_key = %q\nmodel = %q\nmax_retries = 0\n"+
		"\n[tooling.everything]\ncommand = \"node\"\nargs = [%q, \"stdio\"]\nconnect_timeout = \"30s\"\n",
		c.Kind, c.BaseURL, c.APIKey, c.Model, testenv.NPMServer(t, "server-everything"))
	return writeConfigFile(t, t.TempDir(), "toolhostd.toml", cfg)
}

// TestChatCommand: `toolhostd chat` streams the answer to stdout; with
// --tools it runs the tool loop against server-everything: the model's
// echo call is made and its result goes back as a tool message, a call of
// a tool the pattern leaves out is not made, and a loop past --max-turns
// fails.
func TestChatCommand(t *testing.T) {
	srv := providertest.New(t, providertest.OpenAI)
	cfg := chatConfig(t, srv)

	t.Run("plain", func(t *testing.T) {
		srv.Script(providertest.Reply{Text: []string{"Hel", "lo ", "there"}, InputTokens: 7, OutputTokens: 3})
		code, out, errs := runCLI(t, "--config", cfg, "chat", "gpt", "say hello", "--system", "be brief")
		if code != 0 || out != "Hello there\n" {
			t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, out, errs)
		}
		if !strings.Contains(errs, "[fake-model-1: stop, 7 tokens in, 3 out]") {
			t.Errorf("stderr lacks the usage line:\n%s", errs)
		}
		r := srv.Last()
		if !r.Stream || r.System != "be brief" || len(r.Tools) != 0 || !strings.Contains(string(r.Body), "say hello") {
			t.Errorf("request: stream %v, system %q, tools %v, body %s", r.Stream, r.System, r.Tools, r.Body)
		}
	})

	t.Run("tool loop", func(t *testing.T) {
		srv.Script(
			providertest.Reply{ToolCalls: []providertest.ToolCall{
				{ID: "call-1", Name: "echo", Arguments: []string{`{"message":`, `"hi there"}`}},
				{ID: "call-2", Name: "get-sum", Arguments: []string{`{"a":1,"b":2}`}},
			}},
			providertest.Reply{Text: []string{"The echo said ", "hi there."}},
		)
		before := len(srv.Requests())
		code, out, errs := runCLI(t, "--config", cfg, "chat", "gpt", "echo hi there", "--tools", "everything=echo")
		if code != 0 || out != "The echo said hi there.\n" {
			t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, out, errs)
		}
		reqs := srv.Requests()[before:]
		if len(reqs) != 2 {
			t.Fatalf("%d requests, want 2", len(reqs))
		}
		if strings.Join(reqs[0].Tools, ",") != "echo" {
			t.Errorf("tools offered: %v, want only echo", reqs[0].Tools)
		}
		second := string(reqs[1].Body)
		for _, want := range []string{`"tool_call_id":"call-1"`, "Echo: hi there", `"tool_call_id":"call-2"`, `error: no tool named \"get-sum\" is offered`} {
			if !strings.Contains(second, want) {
				t.Errorf("the second request lacks %s:\n%s", want, second)
			}
		}
		for _, want := range []string{`→ echo({"message":"hi there"})`, "← Echo: hi there", "→ get-sum("} {
			if !strings.Contains(errs, want) {
				t.Errorf("stderr lacks %q:\n%s", want, errs)
			}
		}
	})

	t.Run("max turns", func(t *testing.T) {
		srv.Script(providertest.Reply{ToolCalls: []providertest.ToolCall{{ID: "c", Name: "echo", Arguments: []string{`{"message":"x"}`}}}})
		code, _, errs := runCLI(t, "--config", cfg, "chat", "gpt", "loop", "--tools", "everything", "--max-turns", "1")
		if code != exitFailure || !strings.Contains(errs, "the model still asks for tools after 1 turns (--max-turns)") {
			t.Errorf("exit %d, stderr:\n%s", code, errs)
		}
	})

	t.Run("audited", func(t *testing.T) {
		// chat's requests and tool calls go through an agent's contract:
		// audited under the agent name "chat", as an agent's are.
		dir := t.TempDir()
		logPath := filepath.Join(dir, "audit.jsonl")
		b, err := os.ReadFile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		withAudit := strings.Replace(string(b), "version = 1\n", fmt.Sprintf("version = 1\n\n[host]\naudit_log = %q\n", logPath), 1)
		srv.Script(
			providertest.Reply{ToolCalls: []providertest.ToolCall{{ID: "call-1", Name: "echo", Arguments: []string{`{"message":"audited"}`}}}},
			providertest.Reply{Text: []string{"done"}},
		)
		code, out, errs := runCLI(t, "--config", writeConfigFile(t, dir, "toolhostd.toml", withAudit), "chat", "gpt", "echo", "--tools", "everything=echo")
		if code != 0 || out != "done\n" {
			t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, out, errs)
		}
		lines, err := os.ReadFile(logPath)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{`"agent":"chat"`, `"op":"chat-stream"`, `"op":"call-tool-blocking"`, `"tool":"echo"`} {
			if !strings.Contains(string(lines), want) {
				t.Errorf("the audit log lacks %s:\n%s", want, lines)
			}
		}
	})

	t.Run("usage errors", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"chat", "nope", "x"}, `no provider named "nope"`},
			{[]string{"chat", "gpt", "x", "--tools", "nope"}, `--tools nope: no tooling named "nope"`},
		} {
			code, _, errs := runCLI(t, append([]string{"--config", cfg}, tc.args...)...)
			if code != exitUsage || !strings.Contains(errs, tc.want) {
				t.Errorf("%v: exit %d, stderr:\n%s", tc.args, code, errs)
			}
		}
	})
}
