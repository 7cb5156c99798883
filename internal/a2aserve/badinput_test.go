package a2aserve_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/toolhostd/toolhostd/internal/testenv"
)

// TestBadInput: what no SDK client sends, sent raw, gets the JSON-RPC
// binding's own errors (or HTTP's, before the binding).
func TestBadInput(t *testing.T) {
	f := serve(t, "tok")
	big := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"` +
		strings.Repeat("x", 5<<20) + `"}]}}}`
	for _, tc := range []struct {
		name, path, token, body string
		status, code            int // code: the JSON-RPC error's, 0 for none
	}{
		{"no token", "/talk", "", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}`, http.StatusUnauthorized, 0},
		{"wrong token", "/talk", "guess", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}`, http.StatusUnauthorized, 0},
		{"not json", "/talk", "tok", `{"jsonrpc":`, http.StatusOK, -32700},
		{"no method", "/talk", "tok", `{"jsonrpc":"2.0","id":1,"method":"Nope","params":{}}`, http.StatusOK, -32601},
		{"bad params", "/talk", "tok", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":7}}`, http.StatusOK, -32602},
		{"0.3 not json", "/talk/v0.3", "tok", `[}`, http.StatusOK, -32700},
		{"oversized", "/talk", "tok", big, http.StatusOK, -32700},
		{"not exposed", "/nobody", "tok", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}`, http.StatusNotFound, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := testenv.PostJSON(t, f.url+tc.path, tc.token, tc.body)
			if status != tc.status {
				t.Fatalf("status %d, want %d: %s", status, tc.status, body)
			}
			if tc.code == 0 {
				return
			}
			var rpc struct{ Error *struct{ Code int } }
			if err := json.Unmarshal(body, &rpc); err != nil || rpc.Error == nil || rpc.Error.Code != tc.code {
				t.Fatalf("want JSON-RPC error %d, got %s", tc.code, body)
			}
		})
	}
	if open, retained, _ := f.router.Stats(); open+retained != 0 {
		t.Fatalf("bad input became messages: %d open, %d retained", open, retained)
	}
}
