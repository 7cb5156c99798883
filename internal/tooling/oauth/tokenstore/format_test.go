package tokenstore

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestFileFormat: a token file is one flat JSON object, its keys in this
// order, empty optional ones left out; what Save writes is exactly that
// (with a newline), and Load reads back every field.
func TestFileFormat(t *testing.T) {
	full := &Record{
		Resource: "https://h/mcp",
		Client: Client{
			ClientID: "c", ClientSecret: "cs", AuthURL: "https://as/auth", TokenURL: "https://as/token",
			AuthStyle: 1, RedirectURL: "http://127.0.0.1:1/cb", Scopes: []string{"read", "write"},
		},
		WantScopes: []string{"admin"},
		Tokens: Tokens{
			AccessToken: "at", TokenType: "Bearer", RefreshToken: "rt",
			Expiry:   time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC),
			Obtained: time.Date(2030, 1, 2, 2, 4, 5, 0, time.UTC),
		},
	}
	for _, tc := range []struct {
		name string
		rec  *Record
		want string
	}{
		{"full", full, `{
  "resource": "https://h/mcp",
  "client_id": "c",
  "client_secret": "cs",
  "auth_url": "https://as/auth",
  "token_url": "https://as/token",
  "auth_style": 1,
  "redirect_url": "http://127.0.0.1:1/cb",
  "scopes": [
    "read",
    "write"
  ],
  "want_scopes": [
    "admin"
  ],
  "access_token": "at",
  "token_type": "Bearer",
  "refresh_token": "rt",
  "expiry": "2030-01-02T03:04:05Z",
  "obtained": "2030-01-02T02:04:05Z"
}
`},
		{"empty", &Record{}, `{
  "resource": "",
  "client_id": "",
  "auth_url": "",
  "token_url": "",
  "auth_style": 0,
  "access_token": "",
  "obtained": "0001-01-01T00:00:00Z"
}
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(t.TempDir())
			if err := s.Save("x", tc.rec); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(s.Dir(), "x.json"))
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Fatalf("file\n%s\nwant\n%s", b, tc.want)
			}
			got, err := s.Load("x")
			if err != nil {
				t.Fatal(err)
			}
			again, err := json.MarshalIndent(got, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			if string(again)+"\n" != tc.want {
				t.Fatalf("loaded and encoded again\n%s\nwant\n%s", again, tc.want)
			}
		})
	}
}
