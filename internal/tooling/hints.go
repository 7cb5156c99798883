package tooling

import (
	"fmt"
	"net/http"
	"sync"
)

// httpStatus keeps the first answer of a connection attempt that suggests
// a transport mistake: a 400, 404 or 405.
type httpStatus struct {
	mu     sync.Mutex
	method string
	code   int
}

func (s *httpStatus) record(method string, code int) {
	if s == nil || (code != http.StatusBadRequest && code != http.StatusNotFound && code != http.StatusMethodNotAllowed) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.code == 0 {
		s.method, s.code = method, code
	}
}

func (s *httpStatus) get() (string, int) {
	if s == nil {
		return "", 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.method, s.code
}

// transportHint adds to a failed connection attempt's error which
// transport the config used and that the other may be meant, when the
// server's answer suggests it (SSE pointed at a streamable HTTP endpoint,
// or the reverse, or a wrong path).
func transportHint(err error, transport string, st *httpStatus) error {
	method, code := st.get()
	if code == 0 {
		return err
	}
	answer := fmt.Sprintf("the server answered %s with %d %s", method, code, http.StatusText(code))
	switch transport {
	case TransportHTTP:
		return fmt.Errorf("%w (%s to transport \"http\", streamable HTTP: check the url's path, or set transport = \"sse\" if the server speaks the older HTTP+SSE protocol, often at a url ending in /sse)", err, answer)
	case TransportSSE:
		return fmt.Errorf("%w (%s to transport \"sse\", HTTP+SSE: check the url's path, or set transport = \"http\" if the server speaks streamable HTTP, often at a url ending in /mcp)", err, answer)
	}
	return err
}
