package mcpclient_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhostd/toolhostd/internal/tooling/mcpclient"
)

// headerLog records one header of every request a handler sees.
type headerLog struct {
	mu     sync.Mutex
	values []string
}

func (h *headerLog) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.values = append(h.values, r.Header.Get("X-Api-Key"))
		h.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

func (h *headerLog) all() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.values...)
}

func TestHTTPTransportsSendConfiguredHeaders(t *testing.T) {
	t.Setenv("TOOLING_TEST_API_KEY", "s3cret")
	for _, tr := range []string{"http", "sse"} {
		t.Run(tr, func(t *testing.T) {
			ts := newTestServer(0)
			var h http.Handler
			if tr == "http" {
				h = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ts.Server }, nil)
			} else {
				h = mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return ts.Server }, nil)
			}
			log := &headerLog{}
			hs := httptest.NewServer(log.wrap(h))
			defer hs.Close()

			cfg := testConfig("web-" + tr)
			cfg.Transport, cfg.Command, cfg.URL = tr, "", hs.URL
			cfg.Headers = map[string]string{"X-Api-Key": "key-${env:TOOLING_TEST_API_KEY}"}
			m := newMCP(t, cfg, nil, mcpclient.Options{})
			// Stop the session before the HTTP server closes.
			func() {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				done := make(chan error, 1)
				go func() { done <- m.Serve(ctx, nil) }()
				defer func() { cancel(); <-done }()
				waitConnected(t, m)
				res, err := m.CallTool(t.Context(), "echo", json.RawMessage(`{"text":"over `+tr+`"}`))
				if err != nil {
					t.Fatal(err)
				}
				if got := firstText(t, res.Value); got != "over "+tr {
					t.Errorf("echo = %q", got)
				}
				if _, err := m.ListTools(t.Context()); err != nil {
					t.Fatal(err)
				}
			}()
			vals := log.all()
			if len(vals) < 3 {
				t.Fatalf("only %d requests seen", len(vals))
			}
			for i, v := range vals {
				if v != "key-s3cret" {
					t.Errorf("request %d: X-Api-Key = %q, want the expanded header", i, v)
				}
			}
		})
	}
}
