// Package oauth is OAuth 2.1 for http and sse toolings, on go-sdk's auth
// and extauth packages and golang.org/x/oauth2 token sources; its tokens
// live in its tokenstore package:
//
//   - authorization_code: `toolhostd auth login` (mcpclient.Login) runs
//     go-sdk's AuthorizationCodeHandler (PKCE, protected resource and
//     authorization server discovery, client ID metadata document /
//     pre-registered / dynamic registration, scope selection and step-up)
//     with a loopback redirect, and stores the client and token. Sessions
//     then use the stored token and refresh it (storedSource); when none is
//     stored or the server refuses it, no person is there to log in, so the
//     session fails with tooling.ErrLoginRequired (a LoginRequiredError) and
//     waits for a login instead of retrying. LoginOptions
//     (mcpclient.Options.Login) make sessions run the flow themselves (a
//     person, or the conformance adapter, is present).
//   - client_credentials: go-sdk's ClientCredentialsHandler; no person, no
//     stored token.
//
// NewSetup builds the handler of one connection attempt; Transport applies
// it to a transport without OAuth of its own (go-sdk's SSE client).
package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"go.uber.org/zap"
	"golang.org/x/oauth2"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/tooling"
	"github.com/toolhostd/toolhostd/internal/tooling/oauth/tokenstore"
)

// oauthRequestTimeout bounds each request to an authorization server.
const oauthRequestTimeout = 30 * time.Second

// LoginRequiredError is the cause of a session that needs a person to log
// in: no token is stored, or the server refused it.
type LoginRequiredError struct {
	Tooling, Reason string
}

func (e *LoginRequiredError) Error() string {
	return fmt.Sprintf("tooling %s needs authorization: %s: run toolhostd auth login %s", e.Tooling, e.Reason, e.Tooling)
}

func (e *LoginRequiredError) Is(target error) bool { return target == tooling.ErrLoginRequired }

// loginRequired returns the LoginRequiredError in err's chain, if any.
func AsLoginRequired(err error) *LoginRequiredError {
	var le *LoginRequiredError
	if errors.As(err, &le) {
		return le
	}
	return nil
}

// storeFor returns the token store of the tooling (its config's state_dir).
func StoreFor(cfg *config.Tooling) *tokenstore.Store {
	dir := ""
	if cfg.OAuth != nil {
		dir = cfg.OAuth.StateDir
	}
	if dir == "" {
		dir = config.DefaultStateDir()
	}
	return tokenstore.New(dir)
}

// Setup is the OAuth side of one connection attempt.
type Setup struct {
	Handler auth.OAuthHandler
	Secrets []tooling.Redaction
	Cleanup func()
}

// NewSetup builds the OAuth handler of one connection attempt of cfg, nil
// when the tooling has no oauth table. login nil: nobody can log in (the
// daemon); onToken gets the secrets of each token a login obtains.
func NewSetup(cfg *config.Tooling, log *zap.Logger, login *LoginOptions, onToken func([]tooling.Redaction)) (*Setup, error) {
	o := cfg.OAuth
	if o == nil {
		return nil, nil
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	hc := &http.Client{Transport: base, Timeout: oauthRequestTimeout}
	setup := &Setup{Cleanup: base.CloseIdleConnections}
	fail := func(err error) (*Setup, error) {
		setup.Cleanup()
		return nil, err
	}
	var creds *oauthex.ClientCredentials
	if o.ClientID != "" {
		id, err := config.Expand(o.ClientID)
		if err != nil {
			return fail(fmt.Errorf("oauth client_id: %w", err))
		}
		creds = &oauthex.ClientCredentials{ClientID: id}
		if o.ClientSecret != "" {
			secret, err := config.Expand(o.ClientSecret)
			if err != nil {
				return fail(fmt.Errorf("oauth client_secret: %w", err))
			}
			if secret != "" {
				creds.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: secret}
				setup.Secrets = append(setup.Secrets, tooling.Redaction{Secret: secret, Shown: "[client_secret redacted]"})
			}
		}
	}
	if o.GrantType == config.GrantClientCredentials {
		h, err := extauth.NewClientCredentialsHandler(&extauth.ClientCredentialsHandlerConfig{Credentials: creds, HTTPClient: hc})
		if err != nil {
			return fail(fmt.Errorf("oauth: %w", err))
		}
		setup.Handler = &clientCredentials{h: h}
		return setup, nil
	}

	store := StoreFor(cfg)
	var ts oauth2.TokenSource
	var reason string
	fresh := login != nil && login.Fresh
	rec, err := store.Load(cfg.Name)
	var stepUp []string // scopes a server asked for after the last login
	if err == nil && rec.Resource == cfg.URL {
		stepUp = rec.WantScopes
	}
	switch {
	case fresh:
	case errors.Is(err, tokenstore.ErrNotFound):
		reason = "no token is stored"
	case err != nil:
		reason = err.Error()
	case rec.Resource != cfg.URL:
		reason = "the stored token is for another url (" + rec.Resource + ")"
	default:
		ss := newStoredSource(store, cfg.Name, rec, hc)
		setup.Secrets = append(setup.Secrets, ss.redactions()...)
		ts = ss
	}
	if login == nil {
		setup.Handler = &storedTokens{tooling: cfg.Name, store: store, resource: cfg.URL, ts: ts, reason: reason}
		return setup, nil
	}

	// A person (or the conformance adapter) is present: go-sdk runs the
	// authorization-code flow, redirected to a loopback listener.
	lb, err := startLoopback(o.RedirectPort)
	if err != nil {
		return fail(err)
	}
	cleanup := setup.Cleanup
	setup.Cleanup = func() { lb.close(); cleanup() }
	hcfg := &auth.AuthorizationCodeHandlerConfig{
		PreregisteredClient: creds,
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{
			Metadata: &oauthex.ClientRegistrationMetadata{
				RedirectURIs:  []string{lb.redirect},
				ClientName:    "toolhostd",
				GrantTypes:    []string{"authorization_code", "refresh_token"},
				ResponseTypes: []string{"code"},
			},
		},
		RedirectURL:              lb.redirect,
		AuthorizationCodeFetcher: authorizationFetcher(log, login, lb),
		RequestRefreshToken:      true,
		Client:                   hc,
		InitialTokenSource:       ts,
		NewTokenSource: func(ctx context.Context, c *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			rec := &tokenstore.Record{Resource: cfg.URL, Client: tokenstore.ClientOf(c)}
			rec.SetToken(tok, time.Now())
			if err := store.Save(cfg.Name, rec); err != nil {
				return nil, err
			}
			ss := newStoredSource(store, cfg.Name, rec, hc)
			onToken(ss.redactions())
			return ss, nil
		},
	}
	if o.ClientMetadataURL != "" {
		hcfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: o.ClientMetadataURL}
	}
	if len(o.Scopes) > 0 || len(stepUp) > 0 {
		configured := append([]string(nil), o.Scopes...)
		hcfg.ScopeFilter = func(discovered []string) []string {
			scopes := discovered
			if len(configured) > 0 {
				scopes = configured
			}
			return union(scopes, stepUp)
		}
	}
	h, err := auth.NewAuthorizationCodeHandler(hcfg)
	if err != nil {
		return fail(fmt.Errorf("oauth: %w", err))
	}
	setup.Handler = h
	return setup, nil
}

// authorizationFetcher is go-sdk's AuthorizationCodeFetcher: it shows the
// authorization URL, opens it if asked to, and waits for the redirect.
func authorizationFetcher(log *zap.Logger, lo *LoginOptions, lb *loopback) auth.AuthorizationCodeFetcher {
	return func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		// One flow at a time on the one redirect (two requests refused at
		// once each start one).
		lb.flow.Lock()
		defer lb.flow.Unlock()
		lb.drain()
		if lo.Prompt != nil {
			fmt.Fprintf(lo.Prompt, "Open this URL to authorize: %s\n", args.URL)
		}
		if lo.Open != nil {
			if err := lo.Open(ctx, args.URL); err != nil {
				log.Warn("opening the authorization URL failed; open it yourself", zap.Error(err))
			}
		}
		select {
		case r := <-lb.results:
			if r.err != nil {
				return nil, r.err
			}
			return r.res, nil
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the authorization redirect: %w", ctx.Err())
		}
	}
}

// storedTokens is the OAuthHandler of a session nobody can log in from:
// it sends the stored token and, when the server wants another one, fails
// with a LoginRequiredError.
type storedTokens struct {
	tooling  string
	store    *tokenstore.Store
	resource string
	ts       oauth2.TokenSource // nil: none stored
	reason   string             // why ts is nil
}

func (h *storedTokens) TokenSource(context.Context) (oauth2.TokenSource, error) {
	if h.ts == nil {
		return nil, nil // go-sdk then sends no Authorization header
	}
	return h.ts, nil
}

func (h *storedTokens) Authorize(_ context.Context, _ *http.Request, resp *http.Response) error {
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	challenges, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	bearer := func(k string) string {
		for _, c := range challenges {
			if c.Scheme == "bearer" && c.Params[k] != "" {
				return c.Params[k]
			}
		}
		return ""
	}
	if resp.StatusCode == http.StatusForbidden {
		if bearer("error") != "insufficient_scope" {
			return nil // not about the token: the request's own answer
		}
		reason := "the server wants more scopes than the stored token has"
		if s := bearer("scope"); s != "" {
			reason += " (" + s + ")"
			h.wantScopes(strings.Fields(s))
		}
		return &LoginRequiredError{Tooling: h.tooling, Reason: reason}
	}
	reason := h.reason
	switch {
	case h.ts != nil:
		reason = "the server refused the stored token"
		if ss, ok := h.ts.(*storedSource); ok && ss.refreshFailed() {
			reason = "the stored token expired and could not be refreshed"
		}
	case reason == "":
		reason = "no token is stored"
	}
	return &LoginRequiredError{Tooling: h.tooling, Reason: reason}
}

// wantScopes notes in the stored record the scopes a step-up challenge
// asked for, so that the next login asks for them.
func (h *storedTokens) wantScopes(scopes []string) {
	unlock, err := h.store.Lock(h.tooling)
	if err != nil {
		return
	}
	defer unlock()
	rec, err := h.store.Load(h.tooling)
	if err != nil || rec.Resource != h.resource {
		return
	}
	if want := union(rec.WantScopes, scopes); len(want) != len(rec.WantScopes) {
		rec.WantScopes = want
		_ = h.store.Save(h.tooling, rec)
	}
}

// union is a followed by the elements of b not in a.
func union(a, b []string) []string {
	out := append([]string(nil), a...)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// clientCredentials wraps go-sdk's ClientCredentialsHandler: it is not
// safe for concurrent use, and the token source it makes keeps the
// context of the request that was refused, so that later token requests
// would fail once that request is over; each token request is bounded by
// the HTTP client's timeout instead.
type clientCredentials struct {
	mu sync.Mutex
	h  *extauth.ClientCredentialsHandler
}

func (c *clientCredentials) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.h.TokenSource(ctx)
}

func (c *clientCredentials) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.h.Authorize(context.WithoutCancel(ctx), req, resp)
}
