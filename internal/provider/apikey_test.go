package provider_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/provider"
	"github.com/toolhostd/toolhostd/internal/provider/providertest"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

// TestAPIKeyRotation: a ${file:...} api_key is resolved once per keyTTL,
// not per request; a rotated key is used once keyTTL has passed, and at
// once after the endpoint refused the old one (one request is refused).
func TestAPIKeyRotation(t *testing.T) {
	for _, api := range apis {
		for _, tc := range []struct {
			name    string
			ttl     time.Duration
			refused int // requests refused after the rotation
		}{{"within the TTL", time.Hour, 1}, {"after the TTL", 0, 0}} {
			t.Run(api.String()+"/"+tc.name, func(t *testing.T) {
				defer provider.SetKeyTTL(tc.ttl)()
				srv := providertest.New(t, api)
				var keyFile string
				p := open(t, srv, func(c *config.Provider) {
					keyFile = strings.TrimSuffix(strings.TrimPrefix(c.APIKey, "${file:"), "}")
				})
				for _, stream := range []bool{false, true} {
					if _, _, err := chat(context.Background(), p, stream, hi); err != nil {
						t.Fatalf("before the rotation: %v", err)
					}
				}
				const rotated = "rotated-key-5c1"
				old := srv.Key
				if err := os.WriteFile(keyFile, []byte(rotated+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				srv.SetKey(rotated)
				for i := range tc.refused {
					_, _, err := chat(context.Background(), p, i%2 == 1, hi)
					if err == nil || codeOf(t, err) != tooling.CodeDenied {
						t.Fatalf("request %d after the rotation: %v, want denied (the cached key)", i, err)
					}
					if strings.Contains(err.Error(), rotated) || strings.Contains(err.Error(), old) {
						t.Errorf("the error shows a key: %v", err)
					}
				}
				for _, stream := range []bool{false, true} {
					if _, _, err := chat(context.Background(), p, stream, hi); err != nil {
						t.Fatalf("with the rotated key (stream %v): %v", stream, err)
					}
				}
			})
		}
	}
}

// TestAPIKeyUnsetCause: a request whose api_key names an unset variable
// fails unavailable, and the host side still finds config's sentinel in
// the error's chain.
func TestAPIKeyUnsetCause(t *testing.T) {
	srv := providertest.New(t, providertest.OpenAI)
	p := open(t, srv, func(c *config.Provider) { c.APIKey = "${env:TOOLHOSTD_TEST_UNSET_KEY}" })
	_, _, err := chat(context.Background(), p, false, hi)
	if err == nil || codeOf(t, err) != tooling.CodeUnavailable || !errors.Is(err, config.ErrUnsetVariable) {
		t.Fatalf("want unavailable with config.ErrUnsetVariable in its chain, got %v", err)
	}
}
