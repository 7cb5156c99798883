package testenv

import "net/http"

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
