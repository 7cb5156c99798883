package mcpclient

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/tooling"
	"github.com/toolhostd/toolhostd/internal/tooling/oauth"
	"github.com/toolhostd/toolhostd/internal/tooling/oauth/tokenstore"
	"github.com/toolhostd/toolhostd/internal/tooling/transport"
)

// LoginResult says what a Login did.
type LoginResult struct {
	// Authorized is false when nothing was stored: the server never asked
	// for a token and Unasked says why the flow could not run without its
	// asking (it publishes no OAuth metadata, for one).
	Authorized bool
	Unasked    string
	State      oauth.AuthState
}

// Login runs the authorization-code flow for cfg (an http or sse tooling
// with an oauth table) by connecting once with Options.Login and a fresh flow,
// and stores the tokens for later sessions. ctx bounds the whole login,
// including the wait for the person to approve.
func Login(ctx context.Context, cfg *config.Tooling, log *zap.Logger, lo oauth.LoginOptions) (*LoginResult, error) {
	switch {
	case cfg.OAuth == nil:
		return nil, fmt.Errorf("tooling %s has no oauth table: add oauth = {} to [tooling.%s]", cfg.Name, cfg.Name)
	case cfg.Transport != transport.HTTP && cfg.Transport != transport.SSE:
		return nil, fmt.Errorf("tooling %s: oauth is only for transports http and sse", cfg.Name)
	case cfg.OAuth.GrantType == config.GrantClientCredentials:
		return nil, fmt.Errorf("tooling %s uses grant_type client_credentials: it authenticates itself, there is nothing to log in", cfg.Name)
	}
	lo.Fresh = true
	m, err := New(cfg, log, Options{Login: &lo})
	if err != nil {
		return nil, err
	}
	track := transport.NewTracker(true)
	defer track.AbortWrites()
	d, err := m.dial(track)
	if err != nil {
		return nil, err
	}
	defer d.cleanup()
	cs, err := m.client.Connect(ctx, d.transport, &mcp.ClientSessionOptions{ProtocolVersion: m.opts.protocol})
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("login to %s: %w", cfg.Name, ctx.Err())
		}
		return nil, m.redact(fmt.Errorf("login to %s: %w", cfg.Name, err))
	}
	defer cs.Close()
	// A server may let initialize through and ask for authorization only
	// at a later request (step-up): tools/list is the next one anybody
	// makes. When even that is open (the server protects tools/call, say),
	// the login is still what was asked for: it runs the flow as a 401
	// without a challenge would, discovering the server's metadata at its
	// well-known URLs.
	if m.logins.Load() == 0 && cs.InitializeResult().Capabilities.Tools != nil {
		if _, err := cs.ListTools(ctx, nil); err != nil && m.logins.Load() == 0 {
			return nil, m.redact(fmt.Errorf("login to %s: %w", cfg.Name, err))
		}
	}
	res := &LoginResult{}
	if m.logins.Load() == 0 && d.oauth != nil {
		if err := authorizeUnasked(ctx, d.oauth, d.url); err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("login to %s: %w", cfg.Name, ctx.Err())
			}
			res.Unasked = m.redact(err).Error()
		}
	}
	res.Authorized = m.logins.Load() > 0
	res.State = oauth.AuthStatus(cfg)
	return res, nil
}

// authorizeUnasked runs h's authorization flow for endpoint without a
// server's 401: the response it is handed is a 401 with no challenge.
func authorizeUnasked(ctx context.Context, h auth.OAuthHandler, endpoint string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, http.NoBody)
	if err != nil {
		return err
	}
	resp := &http.Response{StatusCode: http.StatusUnauthorized, Header: http.Header{}, Body: http.NoBody, Request: req}
	return h.Authorize(ctx, req, resp)
}

// onToken counts a token a login obtained and keeps its secrets out of
// error text.
func (m *Client) onToken(rs []tooling.Redaction) {
	m.logins.Add(1)
	m.addSecrets(rs)
}

func (m *Client) addSecrets(rs []tooling.Redaction) {
	m.mu.Lock()
	m.secrets = append(m.secrets[:len(m.secrets):len(m.secrets)], rs...)
	m.mu.Unlock()
}

// needsLogin returns the loginRequiredError the last session ended with,
// if it did.
func (m *Client) needsLogin() *oauth.LoginRequiredError {
	m.mu.Lock()
	defer m.mu.Unlock()
	return oauth.AsLoginRequired(m.lastErr)
}

// loginPoll is how often a tooling that needs a login looks for new tokens.
var loginPoll = time.Second

// tokenVersion is the version of the tooling's stored tokens (zero without
// an authorization-code oauth table).
func (m *Client) tokenVersion() tokenstore.Version {
	if m.cfg.OAuth == nil || m.cfg.OAuth.GrantType == config.GrantClientCredentials {
		return tokenstore.Version{}
	}
	return oauth.StoreFor(m.cfg).Version(m.name)
}

// waitForLogin waits until the stored tokens differ from since (someone
// logged in or out), or ctx ends.
func (m *Client) waitForLogin(ctx context.Context, since tokenstore.Version) error {
	t := time.NewTicker(loginPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		if m.tokenVersion() != since {
			m.log.Info("stored tokens changed; reconnecting")
			m.setLastErr(nil)
			return nil
		}
	}
}

// signal is a channel closed to wake its waiters and renewed to reset it.
type signal struct {
	ch     chan struct{}
	closed bool
}

func (s *signal) close() {
	if !s.closed {
		close(s.ch)
		s.closed = true
	}
}

func (s *signal) renew() {
	if s.closed {
		s.ch, s.closed = make(chan struct{}), false
	}
}
