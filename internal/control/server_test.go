package control_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/control/controltest"
)

// unixHTTP is a plain HTTP client of the socket, for requests the typed
// client does not make.
func unixHTTP(sock string) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
		DisableKeepAlives: true,
	}}
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

func request(t *testing.T, hc *http.Client, method, url, auth string) answer {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{resp.StatusCode, resp.Header, body}
}

// errorOf decodes an {"error": ...} body, failing on any other shape.
func errorOf(t *testing.T, a answer) string {
	t.Helper()
	if ct := a.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	var e map[string]any
	if err := json.Unmarshal(a.body, &e); err != nil {
		t.Fatalf("error body is not JSON: %q", a.body)
	}
	msg, ok := e["error"].(string)
	if !ok || msg == "" || len(e) != 1 {
		t.Fatalf(`error body %s is not {"error": "..."}`, a.body)
	}
	return msg
}

func TestEndpoints(t *testing.T) {
	be := controltest.NewBackend()
	be.AddAgent(control.AgentStatus{Name: "conflict", State: "stopping"})
	be.AddAgent(control.AgentStatus{Name: "broken", State: "failed"})
	be.AddAgent(control.AgentStatus{Name: "busy", State: "running"})
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "test_things_total", Help: "Things."})
	c.Add(7)
	reg.MustRegister(c)
	srv := controltest.Serve(t, control.Options{Backend: be, Gatherer: reg})
	hc := unixHTTP(srv.Socket())
	const base = "http://toolhostd"

	tests := []struct {
		method, path string
		status       int
		errHas       string // for an error answer: a substring of "error"
		check        func(t *testing.T, body []byte)
	}{
		{method: "GET", path: "/v1/agents", status: 200, check: func(t *testing.T, body []byte) {
			var l control.AgentList
			if err := json.Unmarshal(body, &l); err != nil {
				t.Fatal(err)
			}
			if len(l.Agents) != 5 || l.Agents[0].Name != "a" || l.Agents[0].Inbox != 3 || l.Agents[0].Restarts != 2 ||
				l.Agents[1].LastError != "exited with err: nope" || !l.Agents[0].Since.Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) {
				t.Errorf("agents %+v", l.Agents)
			}
			for _, key := range []string{`"inbox_depth":3`, `"restarts":2`, `"state":"running"`, `"last_error":"exited with err: nope"`} {
				if !bytes.Contains(body, []byte(key)) {
					t.Errorf("body lacks %s: %s", key, body)
				}
			}
		}},
		{method: "HEAD", path: "/v1/agents", status: 200},
		{method: "POST", path: "/v1/agents", status: 405, errHas: "method POST not allowed"},
		{method: "GET", path: "/v1/agents/b", status: 200, check: func(t *testing.T, body []byte) {
			var a control.AgentStatus
			if err := json.Unmarshal(body, &a); err != nil || a.Name != "b" || a.State != "stopped" || len(a.Toolings) != 2 {
				t.Errorf("agent %+v (%v)", a, err)
			}
		}},
		{method: "GET", path: "/v1/agents/nope", status: 404, errHas: `no such agent: "nope"`},
		{method: "POST", path: "/v1/agents/b/start", status: 200, check: func(t *testing.T, body []byte) {
			var a control.AgentStatus
			if err := json.Unmarshal(body, &a); err != nil || a.Name != "b" || a.State != "running" {
				t.Errorf("after start: %+v (%v)", a, err)
			}
		}},
		{method: "POST", path: "/v1/agents/a/restart", status: 200, check: func(t *testing.T, body []byte) {
			var a control.AgentStatus
			if err := json.Unmarshal(body, &a); err != nil || a.Restarts != 3 {
				t.Errorf("after restart: %+v (%v)", a, err)
			}
		}},
		{method: "POST", path: "/v1/agents/a/stop", status: 200, check: func(t *testing.T, body []byte) {
			var a control.AgentStatus
			if err := json.Unmarshal(body, &a); err != nil || a.State != "stopped" {
				t.Errorf("after stop: %+v (%v)", a, err)
			}
		}},
		{method: "POST", path: "/v1/agents/nope/start", status: 404, errHas: `no such agent: "nope"`},
		{method: "POST", path: "/v1/agents/nope/stop", status: 404, errHas: "no such agent"},
		{method: "POST", path: "/v1/agents/nope/restart", status: 404, errHas: "no such agent"},
		{method: "POST", path: "/v1/agents/conflict/stop", status: 409, errHas: "agent conflict is stopping: conflict"},
		{method: "POST", path: "/v1/agents/broken/start", status: 500, errHas: "bad magic"},
		{method: "POST", path: "/v1/agents/busy/restart", status: 503, errHas: "shutting down"},
		{method: "GET", path: "/v1/agents/a/start", status: 405, errHas: "use POST"},
		{method: "DELETE", path: "/v1/agents/a/restart", status: 405, errHas: "method DELETE"},
		{method: "POST", path: "/v1/agents/a/kill", status: 404, errHas: `no such action "kill"`},
		{method: "GET", path: "/v1/toolings", status: 200, check: func(t *testing.T, body []byte) {
			var l control.ToolingList
			if err := json.Unmarshal(body, &l); err != nil {
				t.Fatal(err)
			}
			if len(l.Toolings) != 2 || l.Toolings[0].ServerName != "secure-filesystem-server" || l.Toolings[0].Tools != 14 ||
				l.Toolings[0].InFlight != 1 || l.Toolings[1].Restarts != 5 || l.Toolings[1].LastError != "connection refused" {
				t.Errorf("toolings %+v", l.Toolings)
			}
			for _, key := range []string{`"transport":"stdio"`, `"server_version":"0.2.0"`, `"in_flight":1`, `"state":"connecting"`} {
				if !bytes.Contains(body, []byte(key)) {
					t.Errorf("body lacks %s: %s", key, body)
				}
			}
		}},
		{method: "PUT", path: "/v1/toolings", status: 405, errHas: "use GET"},
		{method: "POST", path: "/v1/reload", status: 200, check: func(t *testing.T, body []byte) {
			if string(body) != `{"status":"reloaded"}`+"\n" {
				t.Errorf("reload body %s", body)
			}
		}},
		{method: "GET", path: "/v1/reload", status: 405, errHas: "use POST"},
		{method: "GET", path: "/healthz", status: 200, check: func(t *testing.T, body []byte) {
			if string(body) != `{"status":"ok"}`+"\n" {
				t.Errorf("healthz body %s", body)
			}
		}},
		{method: "POST", path: "/healthz", status: 405, errHas: "use GET"},
		{method: "GET", path: "/readyz", status: 503, errHas: "not ready"},
		{method: "GET", path: "/metrics", status: 200, check: func(t *testing.T, body []byte) {
			if !bytes.Contains(body, []byte("test_things_total 7")) {
				t.Errorf("metrics lack the registry's counter:\n%s", body)
			}
		}},
		{method: "POST", path: "/metrics", status: 405, errHas: "use GET"},
		{method: "GET", path: "/v2/agents", status: 404, errHas: "no such endpoint: /v2/agents"},
		{method: "GET", path: "/v1/agents/", status: 404, errHas: "no such endpoint"},
		{method: "GET", path: "/", status: 404, errHas: "no such endpoint"},
		{method: "GET", path: "/v1//agents", status: 404, errHas: "no such endpoint: /v1//agents"},
		{method: "GET", path: "/v1/x/../agents", status: 404, errHas: "no such endpoint"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			a := request(t, hc, tt.method, base+tt.path, "")
			if a.status != tt.status {
				t.Fatalf("status %d, want %d; body %s", a.status, tt.status, a.body)
			}
			if tt.status == 405 {
				if allow := a.header.Get("Allow"); allow == "" || strings.Contains(allow, tt.method) {
					t.Errorf("Allow %q", allow)
				}
			}
			if tt.errHas != "" {
				if msg := errorOf(t, a); !strings.Contains(msg, tt.errHas) {
					t.Errorf("error %q, want it to contain %q", msg, tt.errHas)
				}
			}
			if tt.check != nil {
				tt.check(t, a.body)
			}
		})
	}
	want := []string{"start b", "restart a", "stop a", "reload"}
	if got := be.Actions(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("backend saw %q, want %q", got, want)
	}

	// Readiness follows the backend.
	be.SetReady(true)
	if a := request(t, hc, "GET", base+"/readyz", ""); a.status != 200 || string(a.body) != `{"status":"ready"}`+"\n" {
		t.Errorf("readyz when ready: %d %s", a.status, a.body)
	}
	// A refused reload: 422, or 503 when the daemon cannot reload now.
	be.SetReloadError(config.Errors{{File: "/etc/toolhostd/toolhostd.toml", Line: 3, Col: 1, Key: "host.log_level", Msg: `"x" is not one of debug, info, warn, error`}})
	a := request(t, hc, "POST", base+"/v1/reload", "")
	if a.status != 422 || !strings.Contains(errorOf(t, a), "toolhostd.toml:3:1: host.log_level") {
		t.Errorf("reload with a config error: %d %s", a.status, a.body)
	}
	be.SetReloadError(errors.New("read config: disk on fire"))
	if a := request(t, hc, "POST", base+"/v1/reload", ""); a.status != 422 || errorOf(t, a) != "read config: disk on fire" {
		t.Errorf("reload failure: %d %s", a.status, a.body)
	}
	be.SetReloadError(fmt.Errorf("the daemon is shutting down (%w)", control.ErrUnavailable))
	if a := request(t, hc, "POST", base+"/v1/reload", ""); a.status != 503 || errorOf(t, a) != "the daemon is shutting down (unavailable)" {
		t.Errorf("reload while stopping: %d %s", a.status, a.body)
	}
}

func TestMetricsNotEnabled(t *testing.T) {
	srv := controltest.Serve(t, control.Options{Backend: controltest.NewBackend()})
	a := request(t, unixHTTP(srv.Socket()), "GET", "http://toolhostd/metrics", "")
	if a.status != 404 || errorOf(t, a) != "metrics are not enabled" {
		t.Errorf("/metrics without a gatherer: %d %s", a.status, a.body)
	}
}

// TestMetricsParse: /metrics is valid Prometheus text.
func TestMetricsParse(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector())
	srv := controltest.Serve(t, control.Options{Backend: controltest.NewBackend(), Gatherer: reg})
	c, err := control.Dial(srv.Socket())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	text, err := c.Metrics(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, text)
	}
	if fams["go_goroutines"] == nil {
		t.Errorf("no go_goroutines in %d families", len(fams))
	}
}

func TestClient(t *testing.T) {
	be := controltest.NewBackend()
	be.AddAgent(control.AgentStatus{Name: "conflict", State: "stopping"})
	srv := controltest.Serve(t, control.Options{Backend: be})
	c, err := control.Dial(srv.Socket())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := t.Context()

	agents, err := c.Agents(ctx)
	if err != nil || len(agents) != 3 || agents[1].Name != "b" {
		t.Fatalf("Agents = %+v, %v", agents, err)
	}
	if a, err := c.Agent(ctx, "a"); err != nil || a.Component != "/agents/a.wasm" {
		t.Errorf("Agent(a) = %+v, %v", a, err)
	}
	if _, err := c.Agent(ctx, "zz"); !errors.Is(err, control.ErrUnknownAgent) || err.Error() != `no such agent: "zz"` {
		t.Errorf("Agent(zz) err = %v", err)
	}
	if a, err := c.StartAgent(ctx, "b"); err != nil || a.State != "running" {
		t.Errorf("StartAgent = %+v, %v", a, err)
	}
	if a, err := c.StopAgent(ctx, "b"); err != nil || a.State != "stopped" {
		t.Errorf("StopAgent = %+v, %v", a, err)
	}
	if a, err := c.RestartAgent(ctx, "a"); err != nil || a.Restarts != 3 {
		t.Errorf("RestartAgent = %+v, %v", a, err)
	}
	if _, err := c.RestartAgent(ctx, "zz"); !errors.Is(err, control.ErrUnknownAgent) {
		t.Errorf("RestartAgent(zz) err = %v", err)
	}
	var ae *control.APIError
	if _, err := c.StopAgent(ctx, "conflict"); !errors.Is(err, control.ErrConflict) || !errors.As(err, &ae) || ae.Status != 409 {
		t.Errorf("StopAgent(conflict) err = %v", err)
	}
	if tl, err := c.Toolings(ctx); err != nil || len(tl) != 2 || tl[1].Name != "web" {
		t.Errorf("Toolings = %+v, %v", tl, err)
	}
	if err := c.Reload(ctx); err != nil {
		t.Errorf("Reload: %v", err)
	}
	be.SetReloadError(errors.New("[agent.x] component missing"))
	if err := c.Reload(ctx); err == nil || err.Error() != "[agent.x] component missing" {
		t.Errorf("Reload err = %v", err)
	}
	if err := c.Health(ctx); err != nil {
		t.Errorf("Health: %v", err)
	}
	if ok, err := c.Ready(ctx); ok || err != nil {
		t.Errorf("Ready = %v, %v before ready", ok, err)
	}
	be.SetReady(true)
	if ok, err := c.Ready(ctx); !ok || err != nil {
		t.Errorf("Ready = %v, %v", ok, err)
	}
	if _, err := c.Metrics(ctx); !errors.As(err, &ae) || ae.Status != 404 {
		t.Errorf("Metrics without a gatherer err = %v", err)
	}
}

func TestDialNotRunning(t *testing.T) {
	dir := controltest.TempDir(t)
	sock := filepath.Join(dir, "toolhostd.sock")
	_, err := control.Dial(sock)
	if !errors.Is(err, control.ErrNotRunning) {
		t.Fatalf("Dial of a missing socket: %v", err)
	}
	want := "cannot reach toolhostd at " + sock + ": connect: no such file or directory; is it running?"
	if err.Error() != want {
		t.Errorf("error %q\nwant  %q", err, want)
	}
	// A socket nobody listens on (a dead daemon's).
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()
	if _, err := control.Dial(sock); !errors.Is(err, control.ErrNotRunning) || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("Dial of a dead socket: %v", err)
	}
	// A daemon that stops between Dial and a call.
	be := controltest.NewBackend()
	s, err := control.NewServer(control.Options{Backend: be, Socket: filepath.Join(dir, "other.sock")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	<-s.Listening()
	c, err := control.Dial(s.Socket())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := c.Agents(t.Context()); !errors.Is(err, control.ErrNotRunning) {
		t.Errorf("call after the daemon stopped: %v", err)
	}
}
