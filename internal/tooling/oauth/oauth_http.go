package oauth

// HTTP round trippers for OAuth: the handler applied to the SSE transport,
// and the hint for a server that wants OAuth from a tooling without it.

import (
	"errors"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/oauth2"
)

// Transport applies an OAuthHandler to the requests of a transport
// that has no OAuth support of its own (go-sdk's SSE client), the way
// go-sdk's streamable transport does: the token on every request; after a
// 401 or 403, Authorize and one retry.
type Transport struct {
	Base    http.RoundTripper
	Handler auth.OAuthHandler
}

func (t *Transport) withToken(r *http.Request) (*http.Request, error) {
	r = r.Clone(r.Context())
	ts, err := t.Handler.TokenSource(r.Context())
	if err != nil {
		return nil, err
	}
	if ts == nil {
		return r, nil
	}
	tok, err := ts.Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.ErrorCode == "invalid_grant" {
			return r, nil // refused: the server's 401 leads to Authorize
		}
		return nil, err
	}
	tok.SetAuthHeader(r)
	return r, nil
}

func (t *Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	req, err := t.withToken(r)
	if err != nil {
		return nil, err
	}
	resp, err := t.Base.RoundTrip(req)
	if err != nil || (resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden) {
		return resp, err
	}
	if r.Body != nil && r.Body != http.NoBody && r.GetBody == nil {
		return resp, nil // cannot be sent again
	}
	if err := t.Handler.Authorize(r.Context(), req, resp); err != nil {
		return nil, err
	}
	retry, err := t.withToken(r)
	if err != nil {
		return nil, err
	}
	if r.GetBody != nil {
		if retry.Body, err = r.GetBody(); err != nil {
			return nil, err
		}
	}
	return t.Base.RoundTrip(retry)
}

// ChallengeTransport notes a 401 with a Bearer challenge on a tooling
// that has no oauth table.
type ChallengeTransport struct {
	Base http.RoundTripper
	Seen *atomic.Bool
}

func (t *ChallengeTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.Base.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusUnauthorized {
		for _, c := range resp.Header.Values("WWW-Authenticate") {
			if len(c) >= 6 && strings.EqualFold(c[:6], "bearer") {
				t.Seen.Store(true)
			}
		}
	}
	return resp, err
}
