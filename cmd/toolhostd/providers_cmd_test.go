package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/toolhostd/toolhostd/internal/provider/providertest"
)

// TestProvidersCommand: `toolhostd providers` against the fake APIs: one
// answers with its model listed, one without it, one refuses the key.
func TestProvidersCommand(t *testing.T) {
	gpt := providertest.New(t, providertest.OpenAI)
	claude := providertest.New(t, providertest.Anthropic)
	claude.SetModels("claude-other")
	bad := providertest.New(t, providertest.Anthropic)
	var b strings.Builder
	b.WriteString("version = 1\n")
	for _, p := range []struct {
		name string
		srv  *providertest.Server
	}{{"gpt", gpt}, {"claude", claude}, {"bad", bad}} {
		c := p.srv.Config(t)
		fmt.Fprintf(&b, "\n[provider.%s]\nkind = %q\nbase_url = %q\napi_key = %q\nmodel = %q\nmax_retries = 0\n", p.name, c.Kind, c.BaseURL, c.APIKey, c.Model)
	}
	bad.SetKey("not-the-configured-key")
	cfg := writeConfigFile(t, t.TempDir(), "toolhostd.toml", b.String())

	code, out, errs := runCLI(t, "--config", cfg, "providers")
	if code != exitFailure || !strings.Contains(errs, "1 provider of 3 did not answer") {
		t.Errorf("exit %d, stderr:\n%s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "NAME") {
		t.Fatalf("table:\n%s", out)
	}
	for i, want := range [][]string{
		{"bad", "anthropic", "denied: provider \"bad\" refused the credentials (HTTP 401 Unauthorized): check provider.bad.api_key"},
		{"claude", "anthropic", "ok (1 model, its model not listed;"},
		{"gpt", "openai", providertest.DefaultModel, "ok (2 models, its model listed;"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[i+1], w) {
				t.Errorf("line %q lacks %q", lines[i+1], w)
			}
		}
	}
	if strings.Contains(out+errs, providertest.DefaultKey) || strings.Contains(out+errs, "not-the-configured-key") {
		t.Errorf("a key was printed:\n%s\n%s", out, errs)
	}
	for _, s := range []*providertest.Server{gpt, claude, bad} {
		if r := s.Last(); r == nil || r.Method != "GET" || r.Path != "/v1/models" {
			t.Errorf("%v fake: last request %+v", s.API, r)
		}
	}

	code, out, errs = runCLI(t, "--config", cfg, "providers", "gpt", "--json")
	var checks []providerCheck
	if code != 0 || json.Unmarshal([]byte(out), &checks) != nil || len(checks) != 1 || !checks[0].OK || !checks[0].Listed || len(checks[0].Models) != 2 {
		t.Errorf("--json: exit %d, %s\n%s", code, out, errs)
	}

	if code, _, errs := runCLI(t, "--config", cfg, "providers", "nope"); code != exitUsage || !strings.Contains(errs, `no provider named "nope" (defined: bad, claude, gpt)`) {
		t.Errorf("unknown provider: exit %d, %s", code, errs)
	}
}
