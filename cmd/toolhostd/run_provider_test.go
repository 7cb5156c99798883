package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhostd/toolhostd/internal/provider/providertest"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

// runProviderConfig writes a config with the fake as provider gpt (and,
// with other, a second fake as provider other) and server-everything as
// tooling everything, sharing the tests' compile cache.
func runProviderConfig(t *testing.T, gpt, other *providertest.Server) string {
	t.Helper()
	cfg := fmt.Sprintf("version = 1\n\n[host]\ncache_dir = %q\n", filepath.Join(testenv.Root(t), "build", "test-cache"))
	for name, srv := range map[string]*providertest.Server{"gpt": gpt, "other": other} {
		if srv == nil {
			continue
		}
		c := srv.Config(t)
		cfg += fmt.Sprintf("\n[provider.%s]\nkind = %q\nbase_url = %q\napi_key = %q\nmodel = %q\nmax_retries = 0\n", name, c.Kind, c.BaseURL, c.APIKey, c.Model)
	}
	cfg += fmt.Sprintf("\n[tooling.everything]\ncommand = \"node\"\nargs = [%q, \"stdio\"]\nconnect_timeout = \"30s\"\n", testenv.NPMServer(t, "server-everything"))
	return writeConfigFile(t, t.TempDir(), "toolhostd.toml", cfg)
}

// TestRunAssistantAgainstEverything: the assistant example of each guest
// toolchain, run by `toolhostd run --provider gpt`, against
// server-everything as its tooling and the fake as its model: the model
// asks for everything's echo, the agent calls it, the tool's real answer
// goes back to the model as a tool message, and the model's final answer
// (made from that tool message) is the agent's output.
func TestRunAssistantAgainstEverything(t *testing.T) {
	gpt := providertest.New(t, providertest.OpenAI)
	cfg := runProviderConfig(t, gpt, nil)
	for _, tc := range []struct {
		dir    string
		stream bool
	}{{"agents", true}, {"agents-qjs", false}, {"agents-go", true}} {
		t.Run(tc.dir, func(t *testing.T) {
			msg := "hi from " + tc.dir
			gpt.Script(
				providertest.Reply{ToolCalls: []providertest.ToolCall{{ID: "call_1", Name: "echo", Arguments: []string{`{"message":`, fmt.Sprintf("%q}", msg)}}}},
				providertest.Reply{Answer: func(r *providertest.Request) providertest.Reply {
					return providertest.Reply{Text: []string{"The tool said: ", strings.Join(r.ToolResults, " | ")}}
				}},
			)
			before := len(gpt.Requests())
			input := fmt.Sprintf(`{"provider":"gpt","toolings":["everything"],"prompt":"echo it","stream":%v}`, tc.stream)
			code, out, errs := runCLI(t, "--config", cfg, "run", testenv.Agent(t, tc.dir, "assistant"), "--provider", "gpt", "--input", input)
			if code != 0 {
				t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, out, errs)
			}
			if want := "The tool said: Echo: " + msg + "\n"; out != want {
				t.Errorf("stdout %q, want %q", out, want)
			}
			reqs := gpt.Requests()[before:]
			if len(reqs) != 2 {
				t.Fatalf("the fake saw %d requests, want 2", len(reqs))
			}
			if !strings.Contains(","+strings.Join(reqs[0].Tools, ",")+",", ",echo,") || reqs[0].Stream != tc.stream {
				t.Errorf("first request: tools %v, stream %v", reqs[0].Tools, reqs[0].Stream)
			}
		})
	}
}

// TestRunProviderGrant: --provider names a configured provider (else a
// usage error listing them) and grants only those named: the assistant
// asking for another is denied, and nothing reaches that provider.
func TestRunProviderGrant(t *testing.T) {
	gpt := providertest.New(t, providertest.OpenAI)
	other := providertest.New(t, providertest.OpenAI)
	cfg := runProviderConfig(t, gpt, other)
	assistant := testenv.Agent(t, "agents", "assistant")
	input := `{"provider":"gpt","toolings":[],"prompt":"hi"}`

	code, out, errs := runCLI(t, "--config", cfg, "run", assistant, "--provider", "nope", "--input", input)
	if code != 64 || out != "" || !strings.Contains(errs, `--provider "nope": no [provider.nope] in the config (defined: gpt, other)`) {
		t.Errorf("unknown provider: exit %d, stdout %q, stderr:\n%s", code, out, errs)
	}

	code, out, errs = runCLI(t, "--config", cfg, "run", assistant, "--provider", "other", "--input", input)
	if code != 1 || out != "" || !strings.Contains(errs, "provider gpt: denied") {
		t.Errorf("provider not granted: exit %d, stdout %q, stderr:\n%s", code, out, errs)
	}
	if n := len(gpt.Requests()); n != 0 {
		t.Errorf("gpt saw %d requests", n)
	}

	code, out, errs = runCLI(t, "--config", cfg, "run", assistant, "--input", input)
	if code != 0 || out != "Hello from the fake.\n" {
		t.Errorf("every provider granted by default: exit %d, stdout %q, stderr:\n%s", code, out, errs)
	}
}

// TestRunProviderModels: --provider PROVIDER=MODEL,... allows only the
// models matching a glob: the assistant asking for the provider's default
// model outside them is denied before anything is sent, naming the flag; a
// bare --provider PROVIDER beside it allows every model again.
func TestRunProviderModels(t *testing.T) {
	gpt := providertest.New(t, providertest.OpenAI)
	cfg := runProviderConfig(t, gpt, nil)
	assistant := testenv.Agent(t, "agents", "assistant")
	input := `{"provider":"gpt","toolings":[],"prompt":"hi"}`
	for _, tc := range []struct {
		name  string
		flags []string
		code  int
		out   string
		errs  string
		sent  int // requests the fake saw
	}{
		{name: "model granted", flags: []string{"--provider", "gpt=gpt-4o*,fake-model-*"}, out: "Hello from the fake.\n", sent: 1},
		{name: "model not granted", flags: []string{"--provider", "gpt=gpt-4o*"}, code: 1,
			errs: `model "fake-model-1" is not granted to agent "assistant" on provider "gpt": --provider gpt=gpt-4o* has no match`},
		{name: "bare name allows every model", flags: []string{"--provider", "gpt=gpt-4o*", "--provider", "gpt"}, out: "Hello from the fake.\n", sent: 1},
		{name: "empty pattern", flags: []string{"--provider", "gpt="}, code: 64, errs: `--provider "gpt=": an empty pattern after =`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(gpt.Requests())
			args := append([]string{"--config", cfg, "run", assistant, "--input", input}, tc.flags...)
			code, out, errs := runCLI(t, args...)
			if code != tc.code || out != tc.out || !strings.Contains(errs, tc.errs) {
				t.Errorf("exit %d (want %d), stdout %q (want %q), stderr (want %q):\n%s", code, tc.code, out, tc.out, tc.errs, errs)
			}
			if n := len(gpt.Requests()) - before; n != tc.sent {
				t.Errorf("the fake saw %d requests, want %d", n, tc.sent)
			}
		})
	}
}

// TestRunSampling: under `toolhostd run` a tooling whose sampling names a
// provider gets its server's sampling requests answered by that provider,
// as under serve: the probe's call of server-everything's
// trigger-sampling-request returns the fake's answer, and the request's
// audit line names the tooling.
func TestRunSampling(t *testing.T) {
	gpt := providertest.New(t, providertest.OpenAI)
	gpt.SetDefault(providertest.Reply{Text: []string{"sampled ", "under run"}, InputTokens: 5, OutputTokens: 2})
	dir := t.TempDir()
	auditPath := filepath.Join(dir, "audit.jsonl")
	c := gpt.Config(t)
	cfg := writeConfigFile(t, dir, "toolhostd.toml", fmt.Sprintf(
		"version = 1\n\n[host]\ncache_dir = %q\naudit_log = %q\n\n[provider.gpt]\nkind = %q\nbase_url = %q\napi_key = %q\nmodel = %q\nmax_retries = 0\n"+
			"\n[tooling.everything]\ncommand = \"node\"\nargs = [%q, \"stdio\"]\nconnect_timeout = \"30s\"\nsampling = { provider = \"gpt\", max_tokens = 32 }\n",
		filepath.Join(testenv.Root(t), "build", "test-cache"), auditPath, c.Kind, c.BaseURL, c.APIKey, c.Model, testenv.NPMServer(t, "server-everything")))
	steps, _ := json.Marshal(map[string]any{"steps": []map[string]any{
		{"op": "get", "name": "everything", "as": "t"},
		{"op": "call-tool-blocking", "h": "t", "tool": "trigger-sampling-request", "args": map[string]any{"prompt": "hello", "maxTokens": 500}},
	}})
	code, out, errs := runCLI(t, "--config", cfg, "run", testenv.Agent(t, "test-agents", "probe"), "--input", string(steps))
	if code != 0 || !strings.Contains(out, "sampled under run") {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, out, errs)
	}
	if last := gpt.Last(); last == nil || last.MaxTokens != 32 {
		t.Errorf("model request %+v", last)
	}
	b, err := os.ReadFile(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"agent":"tooling:everything","tooling":"everything","provider":"gpt"`) || !strings.Contains(string(b), `"op":"sampling"`) {
		t.Errorf("the audit log lacks the sampling line:\n%s", b)
	}
}
