package main

import (
	"context"

	"github.com/toolhostd/toolhostd/internal/tooling"
)

// The auth/* scenarios: a server behind an OAuth 2.1 authorization server
// that wants the client to authorize, then list the tools and call
// "test-tool". authConfig is where the OAuth work of issue 12 plugs in: it
// returns the [host] keys (for example a state directory under e.StateDir)
// and the [tooling.conformance] keys (the oauth table, a pre-registered
// client from e.Context's client_id and client_secret) the scenario needs.
// Until toolhostd speaks OAuth it adds nothing, and these scenarios fail.

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

func authConfig(e *env) (host, tooling string, err error) {
	return "", "", nil
}

func runAuth(ctx context.Context, t *tooling.MCP, _ *env) error {
	return listThenCall(ctx, t, "test-tool", `{}`)
}

func init() {
	for _, name := range authScenarios {
		register(name, scenario{config: authConfig, run: runAuth})
	}
}
