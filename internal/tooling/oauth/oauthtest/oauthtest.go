// Package oauthtest is a small OAuth 2.1 authorization server and an
// OAuth-protected go-sdk MCP server for tests: real HTTP, real flows
// (authorization code with PKCE, refresh with rotation, client
// credentials, dynamic client registration), approval without a person.
// It is imported only by tests.
package oauthtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Client is a registered client.
type Client struct {
	Secret       string   // "" for a public client
	RedirectURIs []string // nil: any loopback redirect (RFC 8252)
}

// Config tunes the authorization server.
type Config struct {
	// AccessTTL is the lifetime of access tokens (default one hour).
	AccessTTL time.Duration
	// Clients are pre-registered clients by ID.
	Clients map[string]Client
	// NoRegistration disables dynamic client registration.
	NoRegistration bool
	// ScopesSupported is advertised in the metadata.
	ScopesSupported []string
	// TokenPrefix starts every token and secret issued, so tests can look
	// for them in logs.
	TokenPrefix string
}

type grant struct {
	client, scope, challenge, redirect, resource string
}

type access struct {
	scopes []string
	expiry time.Time
}

// Server is the authorization server.
type Server struct {
	*httptest.Server
	cfg Config

	mu       sync.Mutex
	clients  map[string]Client
	codes    map[string]grant
	tokens   map[string]access
	refresh  map[string]grant // refresh token -> its grant
	counts   map[string]int
	denyNext string
}

// NewServer starts an authorization server; Close it when done.
func NewServer(cfg Config) *Server {
	if cfg.AccessTTL == 0 {
		cfg.AccessTTL = time.Hour
	}
	s := &Server{
		cfg: cfg, clients: map[string]Client{}, codes: map[string]grant{},
		tokens: map[string]access{}, refresh: map[string]grant{}, counts: map[string]int{},
	}
	for id, c := range cfg.Clients {
		s.clients[id] = c
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", s.metadata)
	mux.HandleFunc("POST /register", s.register)
	mux.HandleFunc("GET /authorize", s.authorize)
	mux.HandleFunc("POST /token", s.token)
	s.Server = httptest.NewServer(mux)
	return s
}

func (s *Server) random() string { return s.cfg.TokenPrefix + rand.Text() }

// Count returns how often event happened: "register", "authorize",
// "authorization_code", "refresh_token", "client_credentials", "refused".
func (s *Server) Count(event string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[event]
}

// RevokeAll invalidates every access and refresh token issued so far.
func (s *Server) RevokeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens, s.refresh = map[string]access{}, map[string]grant{}
}

// ExpireAccess makes every access token issued so far expired.
func (s *Server) ExpireAccess() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, a := range s.tokens {
		a.expiry = time.Now().Add(-time.Minute)
		s.tokens[k] = a
	}
}

// DenyNext makes the next authorization request redirect with error.
func (s *Server) DenyNext(errorCode string) {
	s.mu.Lock()
	s.denyNext = errorCode
	s.mu.Unlock()
}

// Verify is a go-sdk TokenVerifier for the tokens this server issued.
func (s *Server) Verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.tokens[token]
	if !ok || time.Now().After(a.expiry) {
		s.counts["refused"]++
		return nil, fmt.Errorf("%w: unknown or expired token", auth.ErrInvalidToken)
	}
	return &auth.TokenInfo{Scopes: a.scopes, Expiration: a.expiry}, nil
}

func (s *Server) metadata(w http.ResponseWriter, _ *http.Request) {
	meta := &oauthex.AuthServerMeta{
		Issuer:                                     s.URL,
		AuthorizationEndpoint:                      s.URL + "/authorize",
		TokenEndpoint:                              s.URL + "/token",
		ScopesSupported:                            s.cfg.ScopesSupported,
		ResponseTypesSupported:                     []string{"code"},
		GrantTypesSupported:                        []string{"authorization_code", "refresh_token", "client_credentials"},
		CodeChallengeMethodsSupported:              []string{"S256"},
		TokenEndpointAuthMethodsSupported:          []string{"client_secret_basic", "client_secret_post", "none"},
		AuthorizationResponseIssParameterSupported: true,
	}
	if !s.cfg.NoRegistration {
		meta.RegistrationEndpoint = s.URL + "/register"
	}
	writeJSON(w, http.StatusOK, meta)
}

func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	if s.cfg.NoRegistration {
		http.NotFound(w, r)
		return
	}
	var md oauthex.ClientRegistrationMetadata
	if err := json.NewDecoder(r.Body).Decode(&md); err != nil || len(md.RedirectURIs) == 0 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_client_metadata"})
		return
	}
	id, secret := "client-"+rand.Text(), s.random()
	s.mu.Lock()
	s.clients[id] = Client{Secret: secret, RedirectURIs: md.RedirectURIs}
	s.counts["register"]++
	s.mu.Unlock()
	md.TokenEndpointAuthMethod = "client_secret_basic"
	writeJSON(w, http.StatusCreated, &oauthex.ClientRegistrationResponse{ClientID: id, ClientSecret: secret, ClientRegistrationMetadata: md})
}

func loopbackURI(u string) bool {
	p, err := url.Parse(u)
	return err == nil && p.Scheme == "http" && (p.Hostname() == "127.0.0.1" || p.Hostname() == "localhost" || p.Hostname() == "::1")
}

func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts["authorize"]++
	c, ok := s.clients[q.Get("client_id")]
	redirect := q.Get("redirect_uri")
	switch {
	case !ok:
		http.Error(w, "unknown client", http.StatusBadRequest)
		return
	case c.RedirectURIs == nil && !loopbackURI(redirect), c.RedirectURIs != nil && !slices.Contains(c.RedirectURIs, redirect):
		http.Error(w, "redirect_uri not registered", http.StatusBadRequest)
		return
	case q.Get("response_type") != "code" || q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256":
		http.Error(w, "want response_type=code and an S256 code_challenge", http.StatusBadRequest)
		return
	}
	back := url.Values{"state": {q.Get("state")}, "iss": {s.URL}}
	if s.denyNext != "" {
		back.Set("error", s.denyNext)
		s.denyNext = ""
	} else {
		code := rand.Text()
		s.codes[code] = grant{client: q.Get("client_id"), scope: q.Get("scope"), challenge: q.Get("code_challenge"), redirect: redirect, resource: q.Get("resource")}
		back.Set("code", code)
	}
	http.Redirect(w, r, redirect+"?"+back.Encode(), http.StatusFound)
}

// clientAuth authenticates the client of a token request (basic, post or
// none for a public client) and returns its ID.
func (s *Server) clientAuth(r *http.Request) (string, bool) {
	id, secret, basic := r.BasicAuth()
	if basic {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	c, ok := s.clients[id]
	if !ok {
		return "", false
	}
	return id, subtle.ConstantTimeCompare([]byte(c.Secret), []byte(secret)) == 1
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	client, ok := s.clientAuth(r)
	if !ok {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
		return
	}
	gt := r.PostForm.Get("grant_type")
	var g grant
	switch gt {
	case "authorization_code":
		code := r.PostForm.Get("code")
		g, ok = s.codes[code]
		delete(s.codes, code)
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if !ok || g.client != client || g.redirect != r.PostForm.Get("redirect_uri") ||
			base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		}
	case "refresh_token":
		rt := r.PostForm.Get("refresh_token")
		g, ok = s.refresh[rt]
		if !ok || g.client != client {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "unknown refresh token"})
			return
		}
		delete(s.refresh, rt) // rotation: each refresh token works once
	case "client_credentials":
		g = grant{client: client, scope: r.PostForm.Get("scope")}
	default:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	s.counts[gt]++
	at := s.random()
	s.tokens[at] = access{scopes: strings.Fields(g.scope), expiry: time.Now().Add(s.cfg.AccessTTL)}
	resp := map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": int(s.cfg.AccessTTL / time.Second), "scope": g.scope}
	if gt != "client_credentials" {
		rt := s.random()
		s.refresh[rt] = g
		resp["refresh_token"] = rt
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, resp)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// Resource is an OAuth-protected MCP server: its /mcp endpoint (streamable
// HTTP) and /sse endpoint (HTTP+SSE) want a bearer token from AS with
// Scopes, and its protected resource metadata names AS.
type Resource struct {
	*httptest.Server
	AS     *Server
	Scopes []string
	srv    *mcp.Server

	mu         sync.Mutex
	callScopes []string
	open       []string // JSON-RPC methods served without a token
}

// OpenMethods lets POSTs of these JSON-RPC methods (and every GET and
// DELETE) through without a token: a server that asks for authorization
// only at a later request, such as tools/list or tools/call.
func (r *Resource) OpenMethods(methods ...string) {
	r.mu.Lock()
	r.open = methods
	r.mu.Unlock()
}

// lazy serves the requests OpenMethods names with open, the others with
// protected.
func (r *Resource) lazy(protected, open http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		methods := r.open
		r.mu.Unlock()
		if len(methods) == 0 {
			protected.ServeHTTP(w, req)
			return
		}
		if req.Method != http.MethodPost {
			open.ServeHTTP(w, req)
			return
		}
		method, err := rpcMethod(req)
		if err != nil {
			http.Error(w, "reading the body", http.StatusBadRequest)
			return
		}
		if slices.Contains(methods, method) {
			open.ServeHTTP(w, req)
			return
		}
		protected.ServeHTTP(w, req)
	})
}

// RequireForCalls makes tools/call on /mcp want scopes besides Scopes: a
// token without them gets 403 insufficient_scope naming every scope needed
// (a step-up challenge).
func (r *Resource) RequireForCalls(scopes ...string) {
	r.mu.Lock()
	r.callScopes = scopes
	r.mu.Unlock()
}

func (r *Resource) stepUp(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		need := r.callScopes
		r.mu.Unlock()
		if len(need) == 0 || req.Method != http.MethodPost {
			next.ServeHTTP(w, req)
			return
		}
		method, err := rpcMethod(req)
		if err != nil {
			http.Error(w, "reading the body", http.StatusBadRequest)
			return
		}
		info := auth.TokenInfoFromContext(req.Context())
		if method == "tools/call" && info != nil {
			for _, s := range need {
				if !slices.Contains(info.Scopes, s) {
					all := append(append([]string(nil), r.Scopes...), need...)
					w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope=%q`, strings.Join(all, " ")))
					http.Error(w, "insufficient scope", http.StatusForbidden)
					return
				}
			}
		}
		next.ServeHTTP(w, req)
	})
}

// rpcMethod is the JSON-RPC method of a POST's body, which it leaves to
// be read again.
func rpcMethod(req *http.Request) (string, error) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return "", err
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	var msg struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(body, &msg)
	return msg.Method, nil
}

// Close ends the MCP server's sessions (a client whose token was refused
// cannot end its own) and stops the HTTP server.
func (r *Resource) Close() {
	for ss := range r.srv.Sessions() {
		_ = ss.Close()
	}
	r.Server.Close()
}

// NewResource starts an MCP server serving srv behind bearer-token checks.
func NewResource(as *Server, srv *mcp.Server, scopes []string) *Resource {
	res := &Resource{AS: as, Scopes: scopes, srv: srv}
	mux := http.NewServeMux()
	res.Server = httptest.NewUnstartedServer(mux)
	base := "http://" + res.Listener.Addr().String()
	protect := func(path string, h http.Handler) {
		meta := base + "/.well-known/oauth-protected-resource" + path
		protected := auth.RequireBearerToken(as.Verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: meta, Scopes: scopes})(res.stepUp(h))
		mux.Handle(path, res.lazy(protected, h))
		mux.Handle("/.well-known/oauth-protected-resource"+path, auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
			Resource:             base + path,
			AuthorizationServers: []string{as.URL},
			ScopesSupported:      scopes,
		}))
	}
	get := func(*http.Request) *mcp.Server { return srv }
	protect("/mcp", mcp.NewStreamableHTTPHandler(get, nil))
	protect("/sse", mcp.NewSSEHandler(get, nil))
	res.Start()
	return res
}
