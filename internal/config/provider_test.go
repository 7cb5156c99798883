package config

import (
	"errors"
	"strings"
	"testing"
)

// TestDefaultProviderExample: the commented [provider.*] examples and the
// agent's provider keys of Default() parse once uncommented, to the values
// they show.
func TestDefaultProviderExample(t *testing.T) {
	var b strings.Builder
	in := false
	for _, line := range strings.Split(Default(), "\n") {
		switch {
		case strings.HasPrefix(line, "# [provider.") || strings.HasPrefix(line, "# [agent.watcher.grants.gpt]"):
			in = true
		case strings.HasPrefix(line, "# providers = "):
			line = strings.TrimPrefix(line, "# ")
		case in && line == "#":
			line = ""
		case in && !strings.HasPrefix(line, "# "):
			in = false
		}
		if in && !strings.HasPrefix(line, "#   ") && !strings.HasPrefix(line, "#                    ") {
			line = strings.TrimPrefix(line, "# ")
		}
		b.WriteString(line + "\n")
	}
	c, err := Parse("toolhostd.toml", []byte(b.String()))
	if err != nil {
		t.Fatalf("Default() with its provider examples uncommented:\n%v\n%s", err, b.String())
	}
	gpt, claude := c.Provider["gpt"], c.Provider["claude"]
	if gpt == nil || gpt.Kind != KindOpenAI || gpt.BaseURL != "http://127.0.0.1:11434/v1" || gpt.APIKey != "${env:OPENAI_API_KEY}" ||
		gpt.Model != "gpt-4o-mini" || gpt.Timeout.Duration != DefaultProviderTimeout || gpt.MaxRetries != DefaultProviderMaxRetries ||
		gpt.MaxTokens != DefaultProviderMaxTokens || gpt.Headers["OpenAI-Organization"] != "org-123" {
		t.Errorf("provider gpt = %+v", gpt)
	}
	if claude == nil || claude.Kind != KindAnthropic || claude.BaseURL != "" || claude.Model != "claude-sonnet-4-5" {
		t.Errorf("provider claude = %+v", claude)
	}
	a := c.Agent["watcher"]
	g := a.ProviderGrants["gpt"]
	if len(a.Providers) != 1 || a.Providers[0] != "gpt" || g == nil || g.MaxConcurrentCalls != 4 || g.RequestsPerMinute != 30 ||
		g.TokensPerHour != 200000 || g.TokensPerDay != 2000000 || g.MaxTokens != 1024 || len(g.Models) != 1 || g.Models[0] != "gpt-4o*" {
		t.Errorf("agent watcher: providers %v, grant %+v", a.Providers, g)
	}
	if _, ok := a.Grants["gpt"]; ok {
		t.Error("a provider's grant is also in the tooling grants")
	}
}

// TestExpandAPIKey resolves the reference at use; its error names the key
// and the variable, never a value.
func TestExpandAPIKey(t *testing.T) {
	p := &Provider{Name: "gpt", APIKey: "${env:TOOLHOSTD_TEST_KEY}"}
	t.Setenv("TOOLHOSTD_TEST_KEY", "sk-secret-1")
	if k, err := p.ExpandAPIKey(); err != nil || k != "sk-secret-1" {
		t.Fatalf("ExpandAPIKey = %q, %v", k, err)
	}
	p.APIKey = "${env:TOOLHOSTD_TEST_UNSET_KEY}"
	_, err := p.ExpandAPIKey()
	if !errors.Is(err, ErrUnsetVariable) || !strings.Contains(err.Error(), "provider gpt: api_key") || strings.Contains(err.Error(), "sk-secret") {
		t.Errorf("unset variable: %v", err)
	}
	if k, err := (&Provider{Name: "local"}).ExpandAPIKey(); err != nil || k != "" {
		t.Errorf("no api_key: %q, %v", k, err)
	}
}
