package provider_test

import (
	"testing"

	"github.com/toolhostd/toolhostd/internal/provider"
	"github.com/toolhostd/toolhostd/internal/provider/providertest"
)

// TestEnvironmentIgnored: the SDKs' own environment variables (a base URL,
// a key, an organization, a project) in the daemon's environment reach no
// request: the config alone says where requests go and with which key.
func TestEnvironmentIgnored(t *testing.T) {
	for k, v := range map[string]string{
		"OPENAI_BASE_URL": "http://127.0.0.1:1/v1", "OPENAI_API_KEY": "env-key", "OPENAI_ORG_ID": "org-env", "OPENAI_PROJECT_ID": "proj-env",
		"ANTHROPIC_BASE_URL": "http://127.0.0.1:1", "ANTHROPIC_API_KEY": "env-key", "ANTHROPIC_AUTH_TOKEN": "env-token",
	} {
		t.Setenv(k, v)
	}
	for _, api := range apis {
		t.Run(api.String(), func(t *testing.T) {
			srv := providertest.New(t, api)
			p := open(t, srv, nil)
			req := provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Content: "hi"}}}
			if _, _, err := chat(t.Context(), p, true, req); err != nil {
				t.Fatal(err)
			}
			r := srv.Last()
			if r.APIKey() != providertest.DefaultKey {
				t.Errorf("key %q, want the configured one", r.APIKey())
			}
			for _, h := range []string{"OpenAI-Organization", "OpenAI-Project"} {
				if v := r.Header.Get(h); v != "" {
					t.Errorf("%s: %q from the environment", h, v)
				}
			}
		})
	}
}
