package expose

import (
	"crypto/subtle"
	"fmt"
	"net/http"

	"github.com/toolhostd/toolhostd/internal/config"
)

// CheckListen refuses a listener that is not loopback-only when no token
// is configured: the endpoints take a bearer token unless nothing but
// this machine can reach them.
func CheckListen(protocol, listen, token string) error {
	if token == "" && !config.IsLoopback(listen) {
		return fmt.Errorf("%s listen %q is not loopback-only: set [host] %s.token", protocol, listen, protocol)
	}
	return nil
}

// RequireToken wraps h so that a request without "Authorization: Bearer
// token" gets 401 (with WWW-Authenticate: Bearer) and never reaches h. An
// empty token lets every request through.
func RequireToken(token string, h http.Handler) http.Handler {
	if token == "" {
		return h
	}
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="toolhostd"`)
			http.Error(w, "missing or wrong bearer token", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// LimitBody wraps h so that a request body over max bytes fails to read
// (the protocol handler answers its own parse error).
func LimitBody(max int64, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, max)
		h.ServeHTTP(w, r)
	})
}
