package mcpserve_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/toolhostd/toolhostd/internal/testenv"
)

// TestBadInput: what no SDK client sends, sent raw, gets the Streamable
// HTTP transport's own errors (or HTTP's, before it).
func TestBadInput(t *testing.T) {
	f := serve(t, "tok")
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"0"}}}`
	for _, tc := range []struct {
		name, token, body string
		status            int
		says              string
	}{
		{"no token", "", init, http.StatusUnauthorized, "bearer token"},
		{"not json", "tok", `{"jsonrpc":`, http.StatusBadRequest, ""},
		{"oversized", "tok", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"x":"` + strings.Repeat("x", 5<<20) + `"}}`, http.StatusRequestEntityTooLarge, "exceeds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := testenv.PostJSON(t, f.url, tc.token, tc.body)
			if status != tc.status || !strings.Contains(string(body), tc.says) {
				t.Fatalf("status %d, want %d with %q: %s", status, tc.status, tc.says, body)
			}
		})
	}
}
