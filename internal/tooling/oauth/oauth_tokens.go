package oauth

// The stored tokens of authorization-code toolings: refreshing them, and
// what `toolhostd auth status` and `logout` see of them.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/oauth2"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/tooling"
	"github.com/toolhostd/toolhostd/internal/tooling/oauth/tokenstore"
)

// storedSource is the token source of a stored record: it refreshes the
// token when it expires and stores the new one. Refreshes are serialised
// across processes by the store's lock, and a token another process
// refreshed meanwhile is taken from the store instead of refreshing again
// (an authorization server that rotates refresh tokens accepts each once).
type storedSource struct {
	store *tokenstore.Store
	name  string
	ctx   context.Context // carries the HTTP client for refreshes

	mu      sync.Mutex
	rec     *tokenstore.Record
	refused atomic.Bool // the last refresh failed
}

func newStoredSource(store *tokenstore.Store, name string, rec *tokenstore.Record, hc *http.Client) *storedSource {
	return &storedSource{store: store, name: name, rec: rec, ctx: context.WithValue(context.Background(), oauth2.HTTPClient, hc)}
}

// redactions are the token values, to be kept out of error text.
func (s *storedSource) redactions() []tooling.Redaction {
	s.mu.Lock()
	defer s.mu.Unlock()
	var rs []tooling.Redaction
	for _, v := range []string{s.rec.AccessToken, s.rec.RefreshToken, s.rec.ClientSecret} {
		if len(v) >= 8 {
			rs = append(rs, tooling.Redaction{Secret: v, Shown: "[token redacted]"})
		}
	}
	return rs
}

// refreshFailed reports whether the last refresh was refused.
func (s *storedSource) refreshFailed() bool { return s.refused.Load() }

func (s *storedSource) Token() (*oauth2.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.rec.Token(); t.Valid() {
		return t, nil
	}
	unlock, err := s.store.Lock(s.name)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if r, err := s.store.Load(s.name); err == nil && r.Resource == s.rec.Resource && r.Token().Valid() {
		s.rec = r
		return r.Token(), nil
	}
	old := s.rec.Token()
	t, err := s.rec.Config().TokenSource(s.ctx, old).Token()
	if err != nil {
		s.refused.Store(true)
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.ErrorCode != "invalid_grant" && re.Response != nil && re.Response.StatusCode < 500 {
			// The client itself was refused (invalid_client, ...): only a
			// new login (a new registration) helps. An invalid_grant goes
			// back to go-sdk, which then asks without a token: the
			// server's 401 says the same, with the server's word for it.
			code := re.ErrorCode
			if code == "" {
				code = re.Response.Status
			}
			return nil, &LoginRequiredError{Tooling: s.name, Reason: "the authorization server refused to refresh the stored token (" + code + ")"}
		}
		return nil, fmt.Errorf("refreshing the OAuth token: %w", err)
	}
	s.refused.Store(false)
	rec := *s.rec
	rec.SetToken(t, time.Now())
	s.rec = &rec
	if err := s.store.Save(s.name, &rec); err != nil {
		return nil, err
	}
	return rec.Token(), nil
}

// AuthState is what `toolhostd auth status` shows of one tooling: never a
// token.
type AuthState struct {
	Tooling string
	Grant   string // authorization_code | client_credentials
	// State: "logged in", "expired" (and not refreshable), "not logged in",
	// "stale" (logged in for another url), "error", or "no login" for
	// client_credentials.
	State       string
	Detail      string // the error, for State "error"
	Expiry      time.Time
	Refreshable bool
	Scopes      []string
	Obtained    time.Time
	Path        string // the token file
}

// AuthStatus reads the stored token state of cfg (which has an oauth
// table).
func AuthStatus(cfg *config.Tooling) AuthState {
	st := AuthState{Tooling: cfg.Name, Grant: config.GrantAuthorizationCode}
	if cfg.OAuth != nil && cfg.OAuth.GrantType != "" {
		st.Grant = cfg.OAuth.GrantType
	}
	if st.Grant == config.GrantClientCredentials {
		st.State = "no login"
		return st
	}
	store := StoreFor(cfg)
	st.Path = store.Path(cfg.Name)
	rec, err := store.Load(cfg.Name)
	switch {
	case errors.Is(err, tokenstore.ErrNotFound):
		st.State = "not logged in"
		return st
	case err != nil:
		st.State, st.Detail = "error", err.Error()
		return st
	}
	st.Expiry, st.Refreshable, st.Obtained = rec.Expiry, rec.RefreshToken != "", rec.Obtained
	st.Scopes = slices.Sorted(slices.Values(rec.Scopes))
	switch {
	case rec.Resource != cfg.URL:
		st.State = "stale"
		st.Detail = "logged in for " + rec.Resource
	case !rec.Token().Valid() && !st.Refreshable:
		st.State = "expired"
	default:
		st.State = "logged in"
	}
	return st
}

// Logout forgets the stored tokens of cfg; false when there were none.
func Logout(cfg *config.Tooling) (bool, error) {
	return StoreFor(cfg).Delete(cfg.Name)
}
