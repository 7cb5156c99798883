package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/toolhostd/toolhostd/internal/tooling/mcpclient"
	"github.com/toolhostd/toolhostd/internal/tooling/oauth"
)

// The auth/* scenarios: a server behind an OAuth 2.1 authorization server
// that wants the client to authorize, then list the tools and call
// "test-tool". The tooling gets an oauth table (a client ID metadata
// document URL, and the pre-registered client the suite hands over in
// MCP_CONFORMANCE_CONTEXT where it does), its tokens go to the scenario's
// state directory, and it runs the login flow itself (mcpclient.Options.Login)
// the way `toolhostd auth login --headless` does: the suite's
// authorization server approves at once, so following the authorization
// URL's redirects ends at the tooling's loopback redirect.

// authScenarios are the suite's auth/* client scenarios (0.1.16).
var authScenarios = []string{
	"auth/metadata-default",
	"auth/metadata-var1",
	"auth/metadata-var2",
	"auth/metadata-var3",
	"auth/basic-cimd",
	"auth/scope-from-www-authenticate",
	"auth/scope-from-scopes-supported",
	"auth/scope-omitted-when-undefined",
	"auth/scope-step-up",
	"auth/scope-retry-limit",
	"auth/token-endpoint-auth-basic",
	"auth/token-endpoint-auth-post",
	"auth/token-endpoint-auth-none",
	"auth/pre-registration",
	"auth/2025-03-26-oauth-metadata-backcompat",
	"auth/2025-03-26-oauth-endpoint-fallback",
	"auth/resource-mismatch",
	"auth/offline-access-scope",
	"auth/offline-access-not-supported",
	"auth/client-credentials-jwt",
	"auth/client-credentials-basic",
	"auth/cross-app-access-complete-flow",
}

// clientCredentialsScenarios authenticate the client itself: no login.
var clientCredentialsScenarios = map[string]bool{
	"auth/client-credentials-basic": true,
	"auth/client-credentials-jwt":   true,
}

// conformanceClientMetadataURL is the client ID metadata document URL the
// suite's authorization servers accept (as in go-sdk's conformance client).
const conformanceClientMetadataURL = "https://conformance-test.local/client-metadata.json"

func authConfig(e *env) (host, tooling string, err error) {
	host = fmt.Sprintf("state_dir = %q\n", e.StateDir)
	var keys []string
	if clientCredentialsScenarios[e.Scenario] {
		keys = append(keys, `grant_type = "client_credentials"`)
	} else {
		keys = append(keys, fmt.Sprintf("client_metadata_url = %q", conformanceClientMetadataURL))
	}
	if id, ok := e.Context["client_id"].(string); ok {
		keys = append(keys, fmt.Sprintf("client_id = %q", id))
		if secret, ok := e.Context["client_secret"].(string); ok {
			// Like a deployment: the secret comes from the environment.
			if err := os.Setenv("CONFORMANCE_CLIENT_SECRET", secret); err != nil {
				return "", "", err
			}
			keys = append(keys, `client_secret = "${env:CONFORMANCE_CLIENT_SECRET}"`)
		}
	}
	return host, "oauth = { " + strings.Join(keys, ", ") + " }\n", nil
}

func authOptions(e *env) mcpclient.Options {
	if clientCredentialsScenarios[e.Scenario] {
		return mcpclient.Options{}
	}
	return mcpclient.Options{Login: &oauth.LoginOptions{Prompt: os.Stderr, Open: oauth.FollowRedirects}}
}

func runAuth(ctx context.Context, t *mcpclient.Client, _ *env) error {
	return listThenCall(ctx, t, "test-tool", `{}`)
}

func init() {
	for _, name := range authScenarios {
		register(name, scenario{config: authConfig, run: runAuth, options: authOptions})
	}
}
