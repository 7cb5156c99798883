package endpoints_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/endpoints"
	"github.com/toolhostd/toolhostd/internal/message"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func parse(t *testing.T, host string) *config.Config {
	t.Helper()
	cfg, err := config.Parse("test.toml", []byte("version = 1\n[host]\n"+host))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestEndpoints: the endpoints bind at New (a bad or taken address fails
// New, closing what it had bound), serve their paths on one server per
// address until Close, which is idempotent.
func TestEndpoints(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	router := message.NewRouter(nil, message.Options{})
	free := freeAddr(t)
	for _, c := range []struct {
		name    string
		host    string
		addrs   int
		paths   map[string]string // path: what its answer says
		wantErr string
	}{
		{name: "none", host: "", addrs: 0},
		{name: "mcp and a2a on one address", host: fmt.Sprintf("mcp = { listen = %q }\na2a = { listen = %q }", free, free),
			addrs: 1, paths: map[string]string{config.A2APath + "/echo/.well-known/agent-card.json": "no agent echo is exposed over A2A",
				"/elsewhere": "404 page not found"}},
		{name: "a taken address", host: fmt.Sprintf("mcp = { listen = %q }\na2a = { listen = %q }", freeAddr(t), taken.Addr().String()),
			wantErr: "protocol endpoints:"},
		{name: "an unset token", host: fmt.Sprintf(`mcp = { listen = %q, token = "${env:TOOLHOSTD_TEST_NO_SUCH_TOKEN}" }`, freeAddr(t)),
			wantErr: "host.mcp.token"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, err := endpoints.New(endpoints.Options{Config: parse(t, c.host), Router: router, Version: "test"})
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("New: %v, want an error naming %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			addrs := e.Addrs()
			if len(addrs) != c.addrs {
				t.Fatalf("addrs %v, want %d", addrs, c.addrs)
			}
			e.Serve()
			for p, want := range c.paths {
				resp, err := http.Get("http://" + addrs[0] + p)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if !strings.Contains(string(body), want) {
					t.Errorf("GET %s: %d %q, want it to say %q", p, resp.StatusCode, body, want)
				}
			}
			if c.addrs > 0 { // the MCP endpoint answers a GET without a session with its own error, not the mux's 404
				resp, err := http.Get("http://" + addrs[0] + config.MCPPath)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode == http.StatusNotFound {
					t.Errorf("GET %s: 404, want the MCP endpoint", config.MCPPath)
				}
			}
			if _, ok := e.Peer("nobody"); ok {
				t.Error("a peer that is not configured")
			}
			e.Close()
			e.Close()
			for _, a := range addrs {
				if conn, err := net.Dial("tcp", a); err == nil {
					conn.Close()
					t.Errorf("%s still listens after Close", a)
				}
			}
		})
	}
}

// freeAddr is a loopback address with a port free a moment ago (the
// config takes no port 0).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
