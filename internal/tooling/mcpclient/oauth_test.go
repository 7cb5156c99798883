package mcpclient_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/testenv"
	"github.com/toolhostd/toolhostd/internal/tooling"
	"github.com/toolhostd/toolhostd/internal/tooling/mcpclient"
	"github.com/toolhostd/toolhostd/internal/tooling/oauth"
	"github.com/toolhostd/toolhostd/internal/tooling/oauth/oauthtest"
	"github.com/toolhostd/toolhostd/internal/tooling/oauth/tokenstore"
	"github.com/toolhostd/toolhostd/internal/tooling/transport"
)

// oauthEnv is an authorization server, an MCP server protected by it, and
// the config of a tooling for it whose state directory is a temp dir.
type oauthEnv struct {
	as  *oauthtest.Server
	res *oauthtest.Resource
	cfg *config.Tooling
}

func newOAuthEnv(t *testing.T, tr string, asCfg oauthtest.Config, scopes []string, oauth *config.OAuth) *oauthEnv {
	t.Helper()
	as := oauthtest.NewServer(asCfg)
	res := oauthtest.NewResource(as, newTestServer(0).Server, scopes)
	// The resource closes first: its sessions end before the AS goes.
	t.Cleanup(as.Close)
	t.Cleanup(res.Close)
	cfg := testConfig("remote-" + tr)
	cfg.Transport, cfg.Command = tr, ""
	cfg.URL = res.URL + "/mcp"
	if tr == transport.SSE {
		cfg.URL = res.URL + "/sse"
	}
	if oauth == nil {
		oauth = &config.OAuth{}
	}
	oauth.StateDir = t.TempDir()
	cfg.OAuth = oauth
	return &oauthEnv{as: as, res: res, cfg: cfg}
}

func (e *oauthEnv) store() *tokenstore.Store { return tokenstore.New(e.cfg.OAuth.StateDir) }

// expireToken makes the stored token expire, here and at the server (an
// hour after the login, as it were), and returns the record as it was.
func (e *oauthEnv) expireToken(t *testing.T) *tokenstore.Record {
	t.Helper()
	st := e.store()
	rec, err := st.Load(e.cfg.Name)
	if err != nil {
		t.Fatal(err)
	}
	e.as.ExpireAccess()
	expired := *rec
	expired.Expiry = time.Now().Add(-time.Minute)
	if err := st.Save(e.cfg.Name, &expired); err != nil {
		t.Fatal(err)
	}
	return rec
}

// login runs the authorization-code flow the way `auth login --headless`
// does and returns what was printed.
func (e *oauthEnv) login(t *testing.T) string {
	t.Helper()
	var prompt bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := mcpclient.Login(ctx, e.cfg, zap.NewNop(), oauth.LoginOptions{Prompt: &prompt, Open: oauth.FollowRedirects})
	if err != nil {
		t.Fatalf("Login: %v", err)
	}
	if !res.Authorized || res.State.State != "logged in" {
		t.Fatalf("Login = %+v", res)
	}
	return prompt.String()
}

// scopeSet is scopes sorted and joined (go-sdk does not keep their order).
func scopeSet(scopes []string) string {
	s := slices.Clone(scopes)
	slices.Sort(s)
	return strings.Join(s, " ")
}

func callEcho(t *testing.T, m *mcpclient.Client, text string) {
	t.Helper()
	res, err := m.CallTool(t.Context(), "echo", json.RawMessage(`{"text":"`+text+`"}`))
	if err != nil {
		t.Fatalf("echo: %v", err)
	}
	if got := firstText(t, res.Value); got != text {
		t.Fatalf("echo = %q, want %q", got, text)
	}
}

// TestOAuthLoginThenServe: a login with dynamic client registration and
// PKCE prints the authorization URL, stores the tokens (file 0600 in a
// 0700 directory), and a later session without any login machinery uses
// them, over streamable HTTP and over SSE.
func TestOAuthLoginThenServe(t *testing.T) {
	for _, tr := range []string{transport.HTTP, transport.SSE} {
		t.Run(tr, func(t *testing.T) {
			e := newOAuthEnv(t, tr, oauthtest.Config{}, nil, nil)
			prompt := e.login(t)
			if !strings.HasPrefix(prompt, "Open this URL to authorize: "+e.as.URL+"/authorize?") || !strings.Contains(prompt, "code_challenge_method=S256") {
				t.Errorf("prompt = %q", prompt)
			}
			if n := e.as.Count("register"); n != 1 {
				t.Errorf("%d dynamic registrations, want 1", n)
			}
			p := e.store().Path(e.cfg.Name)
			if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o600 {
				t.Errorf("token file %s: %v, mode %v", p, err, st.Mode())
			}
			if st, err := os.Stat(filepath.Dir(p)); err != nil || st.Mode().Perm() != 0o700 {
				t.Errorf("token dir: %v, mode %v", err, st.Mode())
			}

			m := newMCP(t, e.cfg, nil, mcpclient.Options{})
			testenv.ServeTooling(t, m, nil)
			waitConnected(t, m)
			callEcho(t, m, "with a stored token over "+tr)
			if n := e.as.Count("authorize"); n != 1 {
				t.Errorf("%d authorization requests, want only the login's", n)
			}
		})
	}
}

// TestOAuthRefreshesAndStores: a stored token that has expired is
// refreshed with the stored refresh token, and the new tokens replace the
// old ones in the store (the server rotates refresh tokens: the old one is
// spent).
func TestOAuthRefreshesAndStores(t *testing.T) {
	e := newOAuthEnv(t, transport.HTTP, oauthtest.Config{}, nil, nil)
	e.login(t)
	st := e.store()
	before := e.expireToken(t)

	m := newMCP(t, e.cfg, nil, mcpclient.Options{})
	testenv.ServeTooling(t, m, nil)
	waitConnected(t, m)
	callEcho(t, m, "refreshed")
	if n := e.as.Count("refresh_token"); n != 1 {
		t.Errorf("%d refreshes, want 1", n)
	}
	after, err := st.Load(e.cfg.Name)
	if err != nil {
		t.Fatal(err)
	}
	if after.AccessToken == before.AccessToken || after.RefreshToken == before.RefreshToken || !after.Token().Valid() {
		t.Errorf("the store kept the old tokens (access changed %v, refresh changed %v, valid %v)",
			after.AccessToken != before.AccessToken, after.RefreshToken != before.RefreshToken, after.Token().Valid())
	}
	if after.ClientID != before.ClientID || after.TokenURL != before.TokenURL {
		t.Errorf("refresh lost the client: %q %q", after.ClientID, after.TokenURL)
	}
}

// TestOAuthMissingTokenWaitsForLogin: without a stored token the session
// fails once with unavailable and "run toolhostd auth login NAME", starts
// no authorization flow, does not reconnect over and over, and connects by
// itself once someone logs in.
func TestOAuthMissingTokenWaitsForLogin(t *testing.T) {
	e := newOAuthEnv(t, transport.HTTP, oauthtest.Config{}, nil, nil)
	e.cfg.ConnectTimeout = dur(30 * time.Second)
	m := newMCP(t, e.cfg, nil, mcpclient.Options{})
	testenv.ServeTooling(t, m, nil)
	want := "run toolhostd auth login " + e.cfg.Name
	// A caller already waiting for the first session hears of the login at
	// once, not after the connect timeout (30s here).
	start := time.Now()
	if _, err := m.ListTools(t.Context()); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("first ListTools = %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the first ListTools took %v", d)
	}
	testenv.Eventually(t, 10*time.Second, "the login error", func() bool { return strings.Contains(m.Status().LastError, want) })
	if le := m.Status().LastError; !strings.Contains(le, "no token is stored") {
		t.Errorf("last error = %q", le)
	}
	start = time.Now()
	_, err := m.ListTools(t.Context())
	wantCode(t, err, tooling.CodeUnavailable)
	if !strings.Contains(err.Error(), want) {
		t.Errorf("ListTools error = %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("ListTools took %v: it should fail at once, not wait for a session", d)
	}
	// The restart backoff here is 20ms: a tooling retrying blindly would
	// have been refused dozens of times by now.
	time.Sleep(500 * time.Millisecond)
	if n := e.as.Count("authorize"); n != 0 {
		t.Errorf("%d authorization requests from a session nobody can log in from", n)
	}
	if m.Status().Restarts != 0 {
		t.Errorf("%d reconnections while waiting for a login", m.Status().Restarts)
	}

	e.login(t)
	waitConnected(t, m)
	callEcho(t, m, "after the login")
}

// TestOAuthRefusedToken: a stored token the server refuses (revoked) ends
// the session with the login message, at connect and in the middle of a
// session; an expired token whose refresh is refused says so.
func TestOAuthRefusedToken(t *testing.T) {
	t.Run("at-connect", func(t *testing.T) {
		e := newOAuthEnv(t, transport.HTTP, oauthtest.Config{}, nil, nil)
		e.login(t)
		e.as.RevokeAll()
		m := newMCP(t, e.cfg, nil, mcpclient.Options{})
		testenv.ServeTooling(t, m, nil)
		testenv.Eventually(t, 10*time.Second, "the login error", func() bool {
			return strings.Contains(m.Status().LastError, "the server refused the stored token: run toolhostd auth login "+e.cfg.Name)
		})
	})
	t.Run("mid-session", func(t *testing.T) {
		e := newOAuthEnv(t, transport.HTTP, oauthtest.Config{}, nil, nil)
		e.login(t)
		m := newMCP(t, e.cfg, nil, mcpclient.Options{})
		testenv.ServeTooling(t, m, nil)
		waitConnected(t, m)
		callEcho(t, m, "before")
		e.as.RevokeAll()
		_, err := m.CallTool(t.Context(), "echo", json.RawMessage(`{"text":"after"}`))
		wantCode(t, err, tooling.CodeUnavailable)
		if !strings.Contains(err.Error(), "run toolhostd auth login "+e.cfg.Name) {
			t.Errorf("error = %v", err)
		}
		testenv.Eventually(t, 10*time.Second, "the session to end", func() bool { return !m.Status().Connected })
		// A new login brings it back.
		e.login(t)
		waitConnected(t, m)
		callEcho(t, m, "after a new login")
	})
	t.Run("refresh-client-refused", func(t *testing.T) {
		e := newOAuthEnv(t, transport.HTTP, oauthtest.Config{}, nil, nil)
		e.login(t)
		st := e.store()
		rec, err := st.Load(e.cfg.Name)
		if err != nil {
			t.Fatal(err)
		}
		// The registration is gone at the authorization server.
		rec.ClientID, rec.Expiry = "forgotten-client", time.Now().Add(-time.Minute)
		if err := st.Save(e.cfg.Name, rec); err != nil {
			t.Fatal(err)
		}
		m := newMCP(t, e.cfg, nil, mcpclient.Options{})
		testenv.ServeTooling(t, m, nil)
		testenv.Eventually(t, 10*time.Second, "the login error", func() bool {
			return strings.Contains(m.Status().LastError, "the authorization server refused to refresh the stored token (invalid_client): run toolhostd auth login")
		})
		// The window is the check: a retrying tooling (20ms backoff)
		// would have reconnected by now.
		time.Sleep(300 * time.Millisecond)
		if n := m.Status().Restarts; n != 0 {
			t.Errorf("%d reconnections with a refused client", n)
		}
	})
	t.Run("refresh-refused", func(t *testing.T) {
		e := newOAuthEnv(t, transport.HTTP, oauthtest.Config{}, nil, nil)
		e.login(t)
		e.as.RevokeAll()
		st := e.store()
		rec, err := st.Load(e.cfg.Name)
		if err != nil {
			t.Fatal(err)
		}
		rec.Expiry = time.Now().Add(-time.Minute)
		if err := st.Save(e.cfg.Name, rec); err != nil {
			t.Fatal(err)
		}
		m := newMCP(t, e.cfg, nil, mcpclient.Options{})
		testenv.ServeTooling(t, m, nil)
		testenv.Eventually(t, 10*time.Second, "the login error", func() bool {
			return strings.Contains(m.Status().LastError, "the stored token expired and could not be refreshed: run toolhostd auth login")
		})
	})
}

// TestOAuthPreregisteredClientAndScopes: a pre-registered confidential
// client (its secret from the environment) logs in where dynamic
// registration is off, asking for the configured scopes instead of the
// ones the server advertises.
func TestOAuthPreregisteredClientAndScopes(t *testing.T) {
	t.Setenv("TOOLING_TEST_CLIENT_SECRET", "pre-registered-secret")
	e := newOAuthEnv(t, transport.HTTP, oauthtest.Config{
		NoRegistration: true,
		Clients:        map[string]oauthtest.Client{"toolhostd-test": {Secret: "pre-registered-secret"}},
	}, []string{"read"}, &config.OAuth{ClientID: "toolhostd-test", ClientSecret: "${env:TOOLING_TEST_CLIENT_SECRET}", Scopes: []string{"read", "extra"}})
	e.login(t)
	rec, err := e.store().Load(e.cfg.Name)
	if err != nil {
		t.Fatal(err)
	}
	if rec.ClientID != "toolhostd-test" || scopeSet(rec.Scopes) != "extra read" {
		t.Errorf("stored client %q scopes %q", rec.ClientID, rec.Scopes)
	}
	m := newMCP(t, e.cfg, nil, mcpclient.Options{})
	testenv.ServeTooling(t, m, nil)
	waitConnected(t, m)
	callEcho(t, m, "pre-registered")
}

// TestOAuthLoginDenied: an authorization server that refuses the request
// fails the login with its error code and stores nothing.
func TestOAuthLoginDenied(t *testing.T) {
	e := newOAuthEnv(t, transport.HTTP, oauthtest.Config{}, nil, nil)
	e.as.DenyNext("access_denied")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := mcpclient.Login(ctx, e.cfg, zap.NewNop(), oauth.LoginOptions{Open: oauth.FollowRedirects})
	if err == nil || !strings.Contains(err.Error(), "access_denied") {
		t.Fatalf("Login = %v, want the access_denied refusal", err)
	}
	if st := oauth.AuthStatus(e.cfg); st.State != "not logged in" {
		t.Errorf("status after a refused login = %+v", st)
	}
}

// TestOAuthClientCredentials: grant_type client_credentials needs nobody:
// the session gets its token itself, and gets a new one when it expires
// (after the request that first asked for a token is long over).
func TestOAuthClientCredentials(t *testing.T) {
	t.Setenv("TOOLING_TEST_CC_SECRET", "cc-secret")
	// 12s tokens: oauth2 treats a token as expired 10s early, so the
	// session's token source must fetch a new one after about 2s.
	e := newOAuthEnv(t, transport.HTTP, oauthtest.Config{
		AccessTTL: 12 * time.Second,
		Clients:   map[string]oauthtest.Client{"daemon": {Secret: "cc-secret"}},
	}, nil, &config.OAuth{GrantType: config.GrantClientCredentials, ClientID: "daemon", ClientSecret: "${env:TOOLING_TEST_CC_SECRET}"})
	m := newMCP(t, e.cfg, nil, mcpclient.Options{})
	testenv.ServeTooling(t, m, nil)
	waitConnected(t, m)
	callEcho(t, m, "as a service")
	n := e.as.Count("client_credentials")
	if n < 1 || e.as.Count("authorize") != 0 {
		t.Fatalf("client_credentials grants %d, authorizations %d", n, e.as.Count("authorize"))
	}
	// The server forgets the token: the next call is refused, and the
	// session gets a new token during that call.
	e.as.ExpireAccess()
	callEcho(t, m, "after a refusal")
	if e.as.Count("client_credentials") <= n {
		t.Fatalf("no new token was fetched after a refusal")
	}
	n = e.as.Count("client_credentials")
	// That token expires too; the call that fetched it is long over. The
	// wait is the thing under test (real time against a real server, not
	// a synctest bubble): the token source must notice the expiry itself.
	time.Sleep(2500 * time.Millisecond)
	callEcho(t, m, "with a new token")
	if e.as.Count("client_credentials") <= n {
		t.Errorf("no new token was fetched after the first expired")
	}
	if st := oauth.AuthStatus(e.cfg); st.State != "no login" {
		t.Errorf("status = %+v", st)
	}
}

// TestOAuthLoginWhileRefreshing: two sessions sharing a store refresh an
// expired token at once; with a server that rotates refresh tokens only
// one refresh may happen (the other takes its result from the store).
func TestOAuthConcurrentRefresh(t *testing.T) {
	e := newOAuthEnv(t, transport.HTTP, oauthtest.Config{}, nil, nil)
	e.login(t)
	e.expireToken(t)
	var wg sync.WaitGroup
	ms := []*mcpclient.Client{newMCP(t, e.cfg, nil, mcpclient.Options{}), newMCP(t, e.cfg, nil, mcpclient.Options{}), newMCP(t, e.cfg, nil, mcpclient.Options{})}
	for _, m := range ms {
		testenv.ServeTooling(t, m, nil)
	}
	for _, m := range ms {
		wg.Go(func() { waitConnected(t, m) })
	}
	wg.Wait()
	for _, m := range ms {
		callEcho(t, m, "shared")
	}
	if n := e.as.Count("refresh_token"); n != 1 {
		t.Errorf("%d refreshes, want 1", n)
	}
}

// TestOAuthHintWithoutOAuthTable: a tooling without an oauth table whose
// server asks for a bearer token says how to configure one.
func TestOAuthHintWithoutOAuthTable(t *testing.T) {
	for _, tr := range []string{transport.HTTP, transport.SSE} {
		t.Run(tr, func(t *testing.T) {
			e := newOAuthEnv(t, tr, oauthtest.Config{}, nil, nil)
			e.cfg.OAuth = nil
			m := newMCP(t, e.cfg, nil, mcpclient.Options{})
			testenv.ServeTooling(t, m, nil)
			want := "the server asks for an OAuth token: add oauth = {} to [tooling." + e.cfg.Name + "], then run toolhostd auth login " + e.cfg.Name
			testenv.Eventually(t, 10*time.Second, "the oauth hint", func() bool { return strings.Contains(m.Status().LastError, want) })
		})
	}
}

// TestOAuthStatusAndLogout: status reports each state without a token;
// logout forgets the tokens.
func TestOAuthStatusAndLogout(t *testing.T) {
	e := newOAuthEnv(t, transport.HTTP, oauthtest.Config{}, nil, nil)
	if st := oauth.AuthStatus(e.cfg); st.State != "not logged in" {
		t.Errorf("before login: %+v", st)
	}
	e.login(t)
	st := oauth.AuthStatus(e.cfg)
	if st.State != "logged in" || !st.Refreshable || st.Expiry.Before(time.Now().Add(50*time.Minute)) {
		t.Errorf("after login: %+v", st)
	}
	other := *e.cfg
	other.URL = e.res.URL + "/other"
	if st := oauth.AuthStatus(&other); st.State != "stale" {
		t.Errorf("for another url: %+v", st)
	}
	if ok, err := oauth.Logout(e.cfg); !ok || err != nil {
		t.Errorf("Logout = %v, %v", ok, err)
	}
	if ok, err := oauth.Logout(e.cfg); ok || err != nil {
		t.Errorf("second Logout = %v, %v", ok, err)
	}
	if st := oauth.AuthStatus(e.cfg); st.State != "not logged in" {
		t.Errorf("after logout: %+v", st)
	}
}

// TestOAuthStepUp: a server that wants more scopes for a call (403
// insufficient_scope). A session nobody can log in from fails the call
// with the login hint and notes the scopes, so that the next login asks
// for them; a session with Options.Login follows the step-up itself (go-sdk
// asks for the union of the granted and the challenged scopes).
func TestOAuthStepUp(t *testing.T) {
	t.Run("stored", func(t *testing.T) {
		e := newOAuthEnv(t, transport.HTTP, oauthtest.Config{}, []string{"read"}, nil)
		e.login(t)
		e.res.RequireForCalls("write")
		m := newMCP(t, e.cfg, nil, mcpclient.Options{})
		testenv.ServeTooling(t, m, nil)
		waitConnected(t, m)
		_, err := m.CallTool(t.Context(), "echo", json.RawMessage(`{"text":"x"}`))
		wantCode(t, err, tooling.CodeUnavailable)
		if !strings.Contains(err.Error(), "wants more scopes than the stored token has (read write): run toolhostd auth login") {
			t.Errorf("error = %v", err)
		}
		rec, lerr := e.store().Load(e.cfg.Name)
		if lerr != nil || scopeSet(rec.WantScopes) != "read write" {
			t.Fatalf("stored record wants %v (%v)", rec.WantScopes, lerr)
		}
		e.login(t)
		if rec, _ := e.store().Load(e.cfg.Name); scopeSet(rec.Scopes) != "read write" || rec.WantScopes != nil {
			t.Errorf("the new login asked for %v (still wanting %v)", rec.Scopes, rec.WantScopes)
		}
		waitConnected(t, m)
		callEcho(t, m, "with the wider token")
	})
	t.Run("with-login", func(t *testing.T) {
		e := newOAuthEnv(t, transport.HTTP, oauthtest.Config{}, []string{"read"}, nil)
		e.res.RequireForCalls("write")
		m := newMCP(t, e.cfg, nil, mcpclient.Options{Login: &oauth.LoginOptions{Open: oauth.FollowRedirects}})
		testenv.ServeTooling(t, m, nil)
		waitConnected(t, m)
		callEcho(t, m, "stepped up")
		if n := e.as.Count("authorization_code"); n != 2 {
			t.Errorf("%d authorizations, want 2 (connect, step-up)", n)
		}
		rec, err := e.store().Load(e.cfg.Name)
		if err != nil || scopeSet(rec.Scopes) != "read write" {
			t.Errorf("stored scopes %v (%v)", rec.Scopes, err)
		}
	})
}
