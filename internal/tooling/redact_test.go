package tooling_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

// TestSecretsInURLAreRedacted: a url whose query carries a ${env:...}
// secret fails to connect; the secret shows in no log line, not in the last
// error and not in the error an operation returns — the config's text does.
func TestSecretsInURLAreRedacted(t *testing.T) {
	const secret = "s3cr3t-k3y-value"
	t.Setenv("TOOLHOSTD_TEST_URL_KEY", secret)
	// A port nothing listens on: every connection attempt fails with an
	// error that quotes the url.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	for _, transport := range []string{tooling.TransportHTTP, tooling.TransportSSE} {
		t.Run(transport, func(t *testing.T) {
			core, logs := observer.New(zap.DebugLevel)
			cfg := &config.Tooling{
				Name:      "remote",
				Transport: transport,
				URL:       "http://" + addr + "/mcp?key=${env:TOOLHOSTD_TEST_URL_KEY}",
				Headers:   map[string]string{"X-Token": "${env:TOOLHOSTD_TEST_URL_KEY}"},
			}
			cfg.ConnectTimeout.Duration = 300 * time.Millisecond
			cfg.Restart.InitialBackoff.Duration = 50 * time.Millisecond
			cfg.Restart.MaxBackoff.Duration = 100 * time.Millisecond
			m := newMCP(t, cfg, zap.New(core))
			serve(t, m)
			eventually(t, 10*time.Second, "a failed connection attempt", func() bool { return m.Status().LastError != "" })
			_, opErr := m.ListTools(context.Background())
			if opErr == nil {
				t.Fatal("ListTools succeeded without a server")
			}
			texts := []string{m.Status().LastError, opErr.Error()}
			for _, e := range logs.All() {
				texts = append(texts, e.Message)
				for _, v := range e.ContextMap() {
					if s, ok := v.(string); ok {
						texts = append(texts, s)
					}
				}
			}
			for _, s := range texts {
				if strings.Contains(s, secret) {
					t.Fatalf("the secret leaked: %q", s)
				}
			}
			if !strings.Contains(m.Status().LastError, "${env:TOOLHOSTD_TEST_URL_KEY}") {
				t.Errorf("the last error should show the config's url: %q", m.Status().LastError)
			}
		})
	}
}
