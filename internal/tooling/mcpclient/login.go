package mcpclient

import (
	"context"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/tooling"
	"github.com/toolhostd/toolhostd/internal/tooling/oauth"
	"github.com/toolhostd/toolhostd/internal/tooling/oauth/tokenstore"
	"github.com/toolhostd/toolhostd/internal/tooling/transport"
)

// WithLogin makes the tooling's sessions run the authorization-code flow
// (redirected to a loopback listener) whenever the server wants a token,
// and store what it obtains, instead of failing with ErrLoginRequired.
// For a person at a terminal and the conformance adapter, not the daemon.
func WithLogin(lo oauth.LoginOptions) Option {
	return func(o *options) { o.login = &lo }
}

// LoginResult says what a Login did.
type LoginResult struct {
	// Authorized is false when the server never asked for a token (nothing
	// was stored).
	Authorized bool
	State      oauth.AuthState
}

// Login runs the authorization-code flow for cfg (an http or sse tooling
// with an oauth table) by connecting once with WithLogin and a fresh flow,
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
	m, err := New(cfg, log, WithLogin(lo))
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
	_ = cs.Close()
	return &LoginResult{Authorized: m.logins.Load() > 0, State: oauth.AuthStatus(cfg)}, nil
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
