// Package tokenstore keeps the OAuth tokens of toolhostd's toolings in the
// state directory: one JSON file per tooling (mode 0600) in an oauth
// directory (mode 0700), replaced atomically, and a lock file per tooling
// that serialises refreshes across processes (the daemon and one-shot
// commands share the tokens). The files hold secrets; nothing here logs
// them, and errors name files, never their content.
package tokenstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/oauth2"
)

// ErrNotFound is returned by Load when no tokens are stored for a tooling.
var ErrNotFound = errors.New("no stored tokens")

// Record is what a login leaves for one tooling: the client it used, the
// authorization server's endpoints and the token. All of it is needed to
// refresh the token without a person. It is stored as one flat JSON object
// (the embedded types add no level).
type Record struct {
	// Resource is the tooling's url as written in the config (its text, not
	// an expanded secret): a record for another url is not used.
	Resource string `json:"resource"`

	Client
	// WantScopes are scopes the server asked for later (step-up) that the
	// token lacks: the next login asks for them too.
	WantScopes []string `json:"want_scopes,omitempty"`

	Tokens
}

// Client is the OAuth client a login used, the authorization server's
// endpoints and the scopes it asked for: what refreshing the token takes.
type Client struct {
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret,omitempty"` // a secret (dynamic registration)
	AuthURL      string `json:"auth_url"`
	TokenURL     string `json:"token_url"`
	AuthStyle    int    `json:"auth_style"` // oauth2.AuthStyle
	RedirectURL  string `json:"redirect_url,omitempty"`
	// Scopes are the scopes asked for at login.
	Scopes []string `json:"scopes,omitempty"`
}

// Config is the oauth2 client configuration that refreshes the token.
func (c *Client) Config() *oauth2.Config {
	return &oauth2.Config{
		ClientID:     c.ClientID,
		ClientSecret: c.ClientSecret,
		Endpoint:     oauth2.Endpoint{AuthURL: c.AuthURL, TokenURL: c.TokenURL, AuthStyle: oauth2.AuthStyle(c.AuthStyle)},
		RedirectURL:  c.RedirectURL,
		Scopes:       c.Scopes,
	}
}

// ClientOf is the Client of the oauth2 configuration c (Config's inverse).
func ClientOf(c *oauth2.Config) Client {
	return Client{
		ClientID: c.ClientID, ClientSecret: c.ClientSecret,
		AuthURL: c.Endpoint.AuthURL, TokenURL: c.Endpoint.TokenURL, AuthStyle: int(c.Endpoint.AuthStyle),
		RedirectURL: c.RedirectURL, Scopes: c.Scopes,
	}
}

// Tokens are the tokens the authorization server last granted, and when.
type Tokens struct {
	AccessToken  string    `json:"access_token"`
	TokenType    string    `json:"token_type,omitempty"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	// Obtained is when the token was last obtained or refreshed.
	Obtained time.Time `json:"obtained"`
}

// Token returns the stored token.
func (t *Tokens) Token() *oauth2.Token {
	return &oauth2.Token{AccessToken: t.AccessToken, TokenType: t.TokenType, RefreshToken: t.RefreshToken, Expiry: t.Expiry}
}

// SetToken stores tok, obtained at now; a token without a refresh token
// keeps the one stored (authorization servers that do not rotate it send
// none on refresh).
func (t *Tokens) SetToken(tok *oauth2.Token, now time.Time) {
	t.AccessToken, t.TokenType, t.Expiry = tok.AccessToken, tok.TokenType, tok.Expiry
	if tok.RefreshToken != "" {
		t.RefreshToken = tok.RefreshToken
	}
	t.Obtained = now
}

// Store is the oauth directory of a state directory.
type Store struct{ dir string }

// New returns the store under stateDir (its oauth subdirectory). Nothing is
// created until the first Save.
func New(stateDir string) *Store { return &Store{dir: filepath.Join(stateDir, "oauth")} }

// Dir is the directory the token files are in.
func (s *Store) Dir() string { return s.dir }

// Path is the file holding the tokens of the tooling called name.
func (s *Store) Path(name string) string { return filepath.Join(s.dir, name+".json") }

func checkName(name string) error {
	if name == "" || name != filepath.Base(name) || name[0] == '.' {
		return fmt.Errorf("invalid tooling name %q", name)
	}
	return nil
}

// Load reads the record of the tooling called name; ErrNotFound when there
// is none. A file that others than its owner may read is refused: its
// tokens must be considered leaked.
func (s *Store) Load(name string) (*Record, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	p := s.Path(name)
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("reading stored tokens: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading stored tokens: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("refusing stored tokens in %s: mode %04o lets others read them (want 0600; log in again)", p, st.Mode().Perm())
	}
	var r Record
	if err := json.NewDecoder(f).Decode(&r); err != nil {
		// The decoder's message may quote the content: do not pass it on.
		return nil, fmt.Errorf("reading stored tokens: %s is not a token file", p)
	}
	return &r, nil
}

// Save writes the record of the tooling called name atomically (a
// temporary file renamed over the old one), creating the directory with
// mode 0700 and the file with mode 0600.
func (s *Store) Save(name string, r *Record) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := s.mkdir(); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding tokens: %w", err)
	}
	tmp, err := os.CreateTemp(s.dir, "."+name+".*.tmp")
	if err != nil {
		return fmt.Errorf("storing tokens: %w", err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename: nothing there
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("storing tokens: %w", err)
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("storing tokens: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("storing tokens: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("storing tokens: %w", err)
	}
	if err := os.Rename(tmp.Name(), s.Path(name)); err != nil {
		return fmt.Errorf("storing tokens: %w", err)
	}
	return nil
}

// mkdir creates the directory (and the state directory) and makes sure
// only the owner can enter it.
func (s *Store) mkdir() error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("creating the token directory: %w", err)
	}
	if err := os.Chmod(s.dir, 0o700); err != nil {
		return fmt.Errorf("creating the token directory: %w", err)
	}
	return nil
}

// Delete removes the record of the tooling called name; false when there
// was none.
func (s *Store) Delete(name string) (bool, error) {
	if err := checkName(name); err != nil {
		return false, err
	}
	err := os.Remove(s.Path(name))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("removing stored tokens: %w", err)
	}
	return true, nil
}

// Version identifies the stored record of name as it is now (zero when
// there is none): it changes whenever the record is saved or deleted.
type Version struct {
	mod   time.Time
	size  int64
	inode uint64
}

// Version returns the current version of name's record.
func (s *Store) Version(name string) Version {
	st, err := os.Stat(s.Path(name))
	if err != nil {
		return Version{}
	}
	v := Version{mod: st.ModTime(), size: st.Size()}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		v.inode = sys.Ino
	}
	return v
}

// Lock takes the exclusive lock of name's record (an flock on a lock file
// beside it), waiting for another process that holds it; call the returned
// function to release it.
func (s *Store) Lock(name string) (func(), error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	if err := s.mkdir(); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(s.dir, name+".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("locking stored tokens: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("locking stored tokens: %w", err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
