package mcpclient_test

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/testenv"
	"github.com/toolhostd/toolhostd/internal/tooling/mcpclient"
	"github.com/toolhostd/toolhostd/internal/tooling/oauth"
	"github.com/toolhostd/toolhostd/internal/tooling/oauth/oauthtest"
	"github.com/toolhostd/toolhostd/internal/tooling/transport"
)

// TestSecretsInURLAreRedacted: a url whose query carries a ${env:...}
// secret fails to connect; the secret shows in no log line, not in the last
// error and not in the error an operation returns — the config's text does.
func TestSecretsInURLAreRedacted(t *testing.T) {
	const secret = "s3cr3t-k3y-value"
	t.Setenv("TOOLHOSTD_TEST_URL_KEY", secret)
	// A port nothing listens on: every connection attempt fails with an
	// error that quotes the url.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	for _, tr := range []string{transport.HTTP, transport.SSE} {
		t.Run(tr, func(t *testing.T) {
			core, logs := observer.New(zap.DebugLevel)
			cfg := &config.Tooling{
				Name:            "remote",
				Transport:       tr,
				ToolingEndpoint: config.ToolingEndpoint{URL: "http://" + addr + "/mcp?key=${env:TOOLHOSTD_TEST_URL_KEY}", Headers: map[string]string{"X-Token": "${env:TOOLHOSTD_TEST_URL_KEY}"}},
			}
			cfg.ConnectTimeout.Duration = 300 * time.Millisecond
			cfg.Restart.InitialBackoff.Duration = 50 * time.Millisecond
			cfg.Restart.MaxBackoff.Duration = 100 * time.Millisecond
			m := newMCP(t, cfg, zap.New(core), mcpclient.Options{})
			testenv.ServeTooling(t, m, nil)
			testenv.Eventually(t, 10*time.Second, "a failed connection attempt", func() bool { return m.Status().LastError != "" })
			_, opErr := m.ListTools(context.Background())
			if opErr == nil {
				t.Fatal("ListTools succeeded without a server")
			}
			texts := []string{m.Status().LastError, opErr.Error()}
			for _, e := range logs.All() {
				texts = append(texts, e.Message)
				for _, v := range e.ContextMap() {
					if s, ok := v.(string); ok {
						texts = append(texts, s)
					}
				}
			}
			for _, s := range texts {
				if strings.Contains(s, secret) {
					t.Fatalf("the secret leaked: %q", s)
				}
			}
			if !strings.Contains(m.Status().LastError, "${env:TOOLHOSTD_TEST_URL_KEY}") {
				t.Errorf("the last error should show the config's url: %q", m.Status().LastError)
			}
		})
	}
}

// logTexts is every message and string field logged.
func logTexts(logs *observer.ObservedLogs) []string {
	var texts []string
	for _, e := range logs.All() {
		texts = append(texts, e.Message)
		for _, v := range e.ContextMap() {
			if s, ok := v.(string); ok {
				texts = append(texts, s)
			}
		}
	}
	return texts
}

// TestOAuthSecretsAreRedacted: OAuth access and refresh tokens, dynamically
// registered client secrets and configured client secrets show in no log
// line (at debug), no last error and no operation's error, through a
// login, a session that uses and refreshes stored tokens, a refused token,
// a refused refresh and a refused client secret. (Every token and secret
// the test server issues starts with a prefix the test looks for.)
func TestOAuthSecretsAreRedacted(t *testing.T) {
	const prefix = "SECRET-TOK-"
	const clientSecret = "configured-client-secret-value"
	t.Setenv("TOOLHOSTD_TEST_CLIENT_SECRET", clientSecret)
	core, logs := observer.New(zap.DebugLevel)
	log := zap.New(core)
	var texts []string
	check := func(m *mcpclient.Client, errs ...error) {
		texts = append(texts, m.Status().LastError)
		for _, err := range errs {
			if err != nil {
				texts = append(texts, err.Error())
			}
		}
	}

	e := newOAuthEnv(t, transport.HTTP, oauthtest.Config{TokenPrefix: prefix}, []string{"read"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := mcpclient.Login(ctx, e.cfg, log, oauth.LoginOptions{Open: oauth.FollowRedirects}); err != nil {
		t.Fatal(err)
	}
	// The stored token expired: the session refreshes it.
	st := e.store()
	rec, err := st.Load(e.cfg.Name)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(rec.AccessToken, prefix) || !strings.HasPrefix(rec.RefreshToken, prefix) || !strings.HasPrefix(rec.ClientSecret, prefix) {
		t.Fatalf("the test server's secrets lack the prefix: the test would prove nothing")
	}
	rec.Expiry = time.Now().Add(-time.Minute)
	if err := st.Save(e.cfg.Name, rec); err != nil {
		t.Fatal(err)
	}
	m := newMCP(t, e.cfg, log, mcpclient.Options{})
	testenv.ServeTooling(t, m, nil)
	waitConnected(t, m)
	callEcho(t, m, "refreshed")
	// Revoked: the calls are refused, the session ends.
	e.as.RevokeAll()
	_, err1 := m.CallTool(t.Context(), "echo", json.RawMessage(`{"text":"x"}`))
	testenv.Eventually(t, 10*time.Second, "the session to end", func() bool { return !m.Status().Connected })
	_, err2 := m.ListTools(t.Context())
	check(m, err1, err2)
	// An expired token whose refresh is refused.
	rec, err = st.Load(e.cfg.Name)
	if err != nil {
		t.Fatal(err)
	}
	rec.Expiry = time.Now().Add(-time.Minute)
	if err := st.Save(e.cfg.Name, rec); err != nil {
		t.Fatal(err)
	}
	m2 := newMCP(t, e.cfg, log, mcpclient.Options{})
	testenv.ServeTooling(t, m2, nil)
	testenv.Eventually(t, 10*time.Second, "the login error", func() bool { return strings.Contains(m2.Status().LastError, "auth login") })
	_, err3 := m2.ListTools(t.Context())
	check(m2, err3)

	// Client credentials with a secret the server refuses.
	cc := newOAuthEnv(t, transport.HTTP, oauthtest.Config{TokenPrefix: prefix, Clients: map[string]oauthtest.Client{"svc": {Secret: "another"}}}, nil,
		&config.OAuth{GrantType: config.GrantClientCredentials, ClientID: "svc", ClientSecret: "${env:TOOLHOSTD_TEST_CLIENT_SECRET}"})
	m3 := newMCP(t, cc.cfg, log, mcpclient.Options{})
	testenv.ServeTooling(t, m3, nil)
	testenv.Eventually(t, 10*time.Second, "a failed connection attempt", func() bool { return m3.Status().LastError != "" })
	_, err4 := m3.ListTools(t.Context())
	check(m3, err4)
	if !strings.Contains(m3.Status().LastError, "invalid_client") {
		t.Errorf("the refused client secret should show as invalid_client: %q", m3.Status().LastError)
	}

	texts = append(texts, logTexts(logs)...)
	if len(texts) < 10 {
		t.Fatalf("only %d texts to check", len(texts))
	}
	for _, s := range texts {
		if strings.Contains(s, prefix) || strings.Contains(s, clientSecret) {
			t.Errorf("a secret leaked: %q", s)
		}
	}
	// The token file itself holds them (0600): that is where they belong.
	b, err := os.ReadFile(st.Path(e.cfg.Name))
	if err != nil || !strings.Contains(string(b), prefix) {
		t.Errorf("the token file should hold the tokens: %v", err)
	}
}
