package testenv

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// BearerClient is an HTTP client that sends "Authorization: Bearer token"
// with every request (the protocol endpoints' tests hand it to the SDK
// clients they drive).
func BearerClient(token string) *http.Client { return &http.Client{Transport: bearer(token)} }

type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// HeaderClient is an HTTP client that sets header key to value on every
// request (a traceparent, say); "" sets nothing.
func HeaderClient(key, value string) *http.Client {
	return &http.Client{Transport: headerSetter{key, value}}
}

type headerSetter struct{ key, value string }

func (h headerSetter) RoundTrip(r *http.Request) (*http.Response, error) {
	if h.value != "" {
		r = r.Clone(r.Context())
		r.Header.Set(h.key, h.value)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// PostJSON posts body as JSON (bearer token unless "") and returns the
// status and body: for the input no SDK client sends (malformed,
// oversized, unauthenticated), which the bad-input tests send raw.
func PostJSON(t testing.TB, url, token, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}
