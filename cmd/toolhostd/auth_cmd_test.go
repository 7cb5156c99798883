package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhostd/toolhostd/internal/testenv"
	"github.com/toolhostd/toolhostd/internal/tooling/oauth/oauthtest"
	"github.com/toolhostd/toolhostd/internal/tooling/oauth/tokenstore"
)

// protectedEcho is an MCP server with an echo tool behind oauthtest's
// bearer checks (scope mcp) and its authorization server; both stop with t.
func protectedEcho(t *testing.T) (*oauthtest.Server, *oauthtest.Resource) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "protected", Version: "1"}, nil)
	testenv.AddEcho(srv)
	as := oauthtest.NewServer(oauthtest.Config{TokenPrefix: "tok-"})
	res := oauthtest.NewResource(as, srv, []string{"mcp"})
	t.Cleanup(func() { res.Close(); as.Close() })
	return as, res
}

// TestAuthCommands: login (headless: the test authorization server
// approves at once) stores the tokens under $STATE_DIRECTORY, status shows
// their state but never a token, the one-shot commands use them, and after
// logout a call fails at once with the login hint.
func TestAuthCommands(t *testing.T) {
	as, res := protectedEcho(t)

	state := t.TempDir()
	t.Setenv("STATE_DIRECTORY", state)
	dir := t.TempDir()
	cfg := writeConfigFile(t, dir, "toolhostd.toml", fmt.Sprintf(`version = 1

[tooling.remote]
url = %q
oauth = {}
connect_timeout = "20s"

[tooling.plain]
url = %q

[tooling.service]
url = %q
oauth = { grant_type = "client_credentials", client_id = "svc", client_secret = "x" }
`, res.URL+"/mcp", res.URL+"/mcp", res.URL+"/mcp"))
	run := func(args ...string) (int, string, string) {
		return runCLI(t, append([]string{"--config", cfg}, args...)...)
	}

	code, out, errs := run("auth", "status")
	if code != 0 || !strings.Contains(out, "remote") || !strings.Contains(out, "not logged in") || strings.Contains(out, "plain") ||
		!regexp.MustCompile(`(?m)^service\s+client_credentials\s+no login`).MatchString(out) {
		t.Fatalf("status before login: exit %d\n%s%s", code, out, errs)
	}

	code, out, errs = run("auth", "login", "remote", "--headless")
	if code != 0 {
		t.Fatalf("login: exit %d\n%s%s", code, out, errs)
	}
	if !strings.Contains(errs, "Open this URL to authorize: "+as.URL+"/authorize?") {
		t.Errorf("login stderr:\n%s", errs)
	}
	if !strings.HasPrefix(out, "remote: logged in; scopes mcp") || !strings.Contains(out, filepath.Join(state, "oauth", "remote.json")) {
		t.Errorf("login stdout:\n%s", out)
	}
	rec, err := tokenstore.New(state).Load("remote")
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(state, "oauth", "remote.json"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("token file: %v %v", err, st.Mode())
	}

	code, out, errs = run("auth", "status")
	if code != 0 || !strings.Contains(out, "logged in") || !strings.Contains(out, "refreshable") {
		t.Errorf("status after login: exit %d\n%s%s", code, out, errs)
	}
	if strings.Contains(out+errs, "tok-") || strings.Contains(out+errs, rec.AccessToken) {
		t.Errorf("status printed a token:\n%s", out)
	}

	code, out, errs = run("call", "remote", "echo", `{"text":"with the stored token"}`)
	if code != 0 || !strings.Contains(out, "with the stored token") {
		t.Fatalf("call: exit %d\n%s%s", code, out, errs)
	}
	if strings.Contains(out+errs, "tok-") {
		t.Errorf("call printed a token:\n%s%s", out, errs)
	}

	code, out, _ = run("auth", "logout", "remote")
	if code != 0 || out != "remote: logged out (stored tokens removed)\n" {
		t.Errorf("logout: exit %d: %q", code, out)
	}
	start := time.Now()
	code, out, errs = run("call", "remote", "echo", `{"text":"x"}`)
	if code != exitFailure || !strings.Contains(errs, "unavailable") || !strings.Contains(errs, "no token is stored: run toolhostd auth login remote") {
		t.Errorf("call after logout: exit %d\n%s%s", code, out, errs)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the call after logout took %v: it should not wait for the connect timeout", d)
	}
	code, out, _ = run("auth", "logout", "remote")
	if code != 0 || out != "remote: no stored tokens\n" {
		t.Errorf("second logout: exit %d: %q", code, out)
	}

	code, _, errs = run("auth", "login", "service", "--headless")
	if code != exitUsage || !strings.Contains(errs, "nothing to log in") {
		t.Errorf("login of a client_credentials tooling: exit %d: %s", code, errs)
	}
	code, _, errs = run("auth", "login", "plain", "--headless")
	if code != exitUsage || !strings.Contains(errs, "tooling plain has no oauth table: add oauth = {} to [tooling.plain]") {
		t.Errorf("login without oauth: exit %d: %s", code, errs)
	}
}

// TestAuthLoginLaterRequest: a server that lets initialize through and
// asks for a token only at a later request. Login obtains one whether that
// request is tools/list (login makes it) or tools/call (login runs the flow
// unasked, from the server's well-known metadata), so the hint of a call
// refused for want of a token leads to a login that works; against a
// server without OAuth, login says why nothing was stored.
func TestAuthLoginLaterRequest(t *testing.T) {
	for _, tc := range []struct {
		name string
		open []string
	}{
		{"tools/list", []string{"initialize", "notifications/initialized"}},
		{"tools/call", []string{"initialize", "notifications/initialized", "tools/list"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			as, res := protectedEcho(t)
			res.OpenMethods(tc.open...)
			t.Setenv("STATE_DIRECTORY", t.TempDir())
			cfg := writeConfigFile(t, t.TempDir(), "toolhostd.toml", fmt.Sprintf("version = 1\n\n[tooling.remote]\nurl = %q\noauth = {}\nconnect_timeout = \"20s\"\n", res.URL+"/mcp"))
			run := func(args ...string) (int, string, string) {
				return runCLI(t, append([]string{"--config", cfg}, args...)...)
			}
			code, out, errs := run("call", "remote", "echo", `{"text":"x"}`)
			if code != exitFailure || !strings.Contains(errs, "run toolhostd auth login remote") {
				t.Fatalf("call before login: exit %d\n%s%s", code, out, errs)
			}
			code, out, errs = run("auth", "login", "remote", "--headless")
			if code != 0 || !strings.HasPrefix(out, "remote: logged in; scopes mcp") {
				t.Fatalf("login: exit %d\n%s%s", code, out, errs)
			}
			if n := as.Count("authorization_code"); n != 1 {
				t.Errorf("%d authorization codes exchanged, want 1", n)
			}
			code, out, errs = run("call", "remote", "echo", `{"text":"after the login"}`)
			if code != 0 || !strings.Contains(out, "after the login") {
				t.Errorf("call after login: exit %d\n%s%s", code, out, errs)
			}
		})
	}
	t.Run("no oauth", func(t *testing.T) {
		srv := mcp.NewServer(&mcp.Implementation{Name: "open", Version: "1"}, nil)
		hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
		defer hs.Close()
		t.Setenv("STATE_DIRECTORY", t.TempDir())
		cfg := writeConfigFile(t, t.TempDir(), "toolhostd.toml", fmt.Sprintf("version = 1\n\n[tooling.open]\nurl = %q\noauth = {}\n", hs.URL))
		code, out, errs := runCLI(t, "--config", cfg, "auth", "login", "open", "--headless")
		if code != 0 || !strings.HasPrefix(out, "open: the server did not ask for authorization and the flow could not run without it (") ||
			!strings.HasSuffix(out, "); nothing was stored\n") {
			t.Errorf("login: exit %d\n%s%s", code, out, errs)
		}
	})
}
