package config

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// OAuth grant types of a tooling's `oauth.grant_type`.
const (
	GrantAuthorizationCode = "authorization_code"
	GrantClientCredentials = "client_credentials"
)

// OAuth is a tooling's `oauth` table: the tooling's server is an OAuth 2.1
// protected resource. Every key is optional; `oauth = {}` logs in with
// whatever the authorization server offers (client ID metadata document,
// dynamic client registration) and the scopes the server asks for.
type OAuth struct {
	// GrantType is authorization_code (default: a person logs in once with
	// `toolhostd auth login`) or client_credentials (no person: the client
	// authenticates itself; needs ClientID and ClientSecret).
	GrantType string `toml:"grant_type"`
	// ClientID and ClientSecret are a pre-registered client; both may be
	// ${env:...} / ${file:...} references: call Expand at use. Without a
	// ClientID the client is registered dynamically.
	ClientID     string `toml:"client_id"`
	ClientSecret string `toml:"client_secret"`
	// ClientMetadataURL is the https URL of a client ID metadata document,
	// used as the client ID where the authorization server supports it.
	ClientMetadataURL string `toml:"client_metadata_url"`
	// Scopes replace the scopes the server asks for (nil: ask for those).
	Scopes []string `toml:"scopes"`
	// RedirectPort is the loopback port of the login's redirect URI
	// (http://127.0.0.1:PORT/callback); 0 picks a free one. A pre-registered
	// client usually needs a fixed one.
	RedirectPort int `toml:"redirect_port"`

	// StateDir is the config's host.state_dir ("" when not set: see
	// DefaultStateDir), where the tooling's tokens are kept.
	StateDir string `toml:"-" json:",omitempty"`
}

// StateDir is where toolhostd keeps state that outlives a process (OAuth
// tokens): host.state_dir, else the first directory of $STATE_DIRECTORY
// (systemd's StateDirectory=), else $XDG_STATE_HOME/toolhostd, else
// ~/.local/state/toolhostd.
func (c *Config) StateDir() string {
	if c != nil && c.Host.StateDir != "" {
		return c.Host.StateDir
	}
	return DefaultStateDir()
}

// DefaultStateDir is the state directory when host.state_dir is not set
// (see Config.StateDir).
func DefaultStateDir() string {
	if s := os.Getenv("STATE_DIRECTORY"); s != "" {
		first, _, _ := strings.Cut(s, ":")
		if filepath.IsAbs(first) {
			return first
		}
	}
	if x := os.Getenv("XDG_STATE_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "toolhostd")
	}
	if h, err := os.UserHomeDir(); err == nil && h != "" {
		return filepath.Join(h, ".local", "state", "toolhostd")
	}
	return filepath.Join(os.TempDir(), "toolhostd-state")
}

// oauth decodes a tooling's oauth table.
func (d *decoder) oauth(path []string, v any) *OAuth {
	m, ok := d.asTable(path, v)
	if !ok {
		return nil
	}
	o := &OAuth{}
	n0 := len(d.errs)
	d.fields(path, m, handlers{
		"grant_type": func(p []string, v any) {
			o.GrantType, _ = d.asEnum(p, v, GrantAuthorizationCode, GrantClientCredentials)
		},
		"client_id": func(p []string, v any) {
			o.ClientID, _ = d.asRefString(p, v)
		},
		"client_secret": func(p []string, v any) {
			o.ClientSecret, _ = d.asRefString(p, v)
		},
		"client_metadata_url": func(p []string, v any) {
			s, ok := d.asPlainString(p, v)
			if !ok || s == "" {
				return
			}
			if u, err := url.Parse(s); err != nil || u.Scheme != "https" || u.Host == "" || strings.Trim(u.Path, "/") == "" {
				d.errAt(p, "invalid client ID metadata document url: want https://, a host and a path")
				return
			}
			o.ClientMetadataURL = s
		},
		"scopes": func(p []string, v any) {
			o.Scopes, _ = d.asStrings(p, v, func(p []string, s string) bool {
				if s == "" || strings.ContainsAny(s, " \t\r\n\"\\") {
					d.errAt(p, "invalid scope %q: a scope is a non-empty word without spaces, quotes or backslashes", s)
					return false
				}
				return true
			})
		},
		"redirect_port": func(p []string, v any) {
			n, ok := d.asInt(p, v, 0)
			if ok && n > 65535 {
				d.errAt(p, "want a port from 1 to 65535 (or 0 for any), got %d", n)
				return
			}
			o.RedirectPort = n
		},
	})
	setDefault(&o.GrantType, GrantAuthorizationCode)
	if o.ClientSecret != "" && o.ClientID == "" && !d.erred(child(path, "client_id"), 0) {
		d.errAt(child(path, "client_secret"), "needs client_id: a client secret belongs to a pre-registered client")
	}
	if o.GrantType == GrantClientCredentials {
		if (o.ClientID == "" || o.ClientSecret == "") && !d.erred(path, n0) {
			d.errAt(child(path, "grant_type"), "client_credentials needs client_id and client_secret (a confidential client)")
		}
		if o.RedirectPort != 0 {
			d.errAt(child(path, "redirect_port"), "not used by grant_type client_credentials (nobody is redirected)")
		}
	}
	return o
}

// checkOAuth validates a tooling's oauth table against its other keys.
func (d *decoder) checkOAuth(path []string, t *Tooling) {
	if t.OAuth == nil {
		return
	}
	if t.Transport == "stdio" {
		d.errAt(child(path, "oauth"), "only used by transports http and sse")
		return
	}
	for k := range t.Headers {
		if strings.EqualFold(k, "Authorization") {
			d.errAt(child(child(path, "headers"), k), "conflicts with oauth: the Authorization header carries the OAuth access token")
		}
	}
}
