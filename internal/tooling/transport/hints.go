package transport

import (
	"fmt"
	"net/http"
	"sync"
)

// HTTPStatus keeps the first answer of a connection attempt that suggests
// a transport mistake: a 400, 404 or 405.
type HTTPStatus struct {
	mu     sync.Mutex
	method string
	code   int
}

func (s *HTTPStatus) record(method string, code int) {
	if s == nil || (code != http.StatusBadRequest && code != http.StatusNotFound && code != http.StatusMethodNotAllowed) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.code == 0 {
		s.method, s.code = method, code
	}
}

func (s *HTTPStatus) get() (string, int) {
	if s == nil {
		return "", 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.method, s.code
}

// Hint adds to a failed connection attempt's error which
// transport the config used and that the other may be meant, when the
// server's answer suggests it (SSE pointed at a streamable HTTP endpoint,
// or the reverse, or a wrong path).
func Hint(err error, transport string, st *HTTPStatus) error {
	method, code := st.get()
	if code == 0 {
		return err
	}
	answer := fmt.Sprintf("the server answered %s with %d %s", method, code, http.StatusText(code))
	switch transport {
	case HTTP:
		return fmt.Errorf("%w (%s to transport \"http\", streamable HTTP: check the url's path, or set transport = \"sse\" if the server speaks the older HTTP+SSE protocol, often at a url ending in /sse)", err, answer)
	case SSE:
		return fmt.Errorf("%w (%s to transport \"sse\", HTTP+SSE: check the url's path, or set transport = \"http\" if the server speaks streamable HTTP, often at a url ending in /mcp)", err, answer)
	}
	return err
}
