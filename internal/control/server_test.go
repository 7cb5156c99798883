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
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

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

// TestSocket: mode 0660, the stale socket of a dead daemon is replaced, a
// live one is not, a file that is not a socket is not touched, and the
// socket is removed at the end.
func TestSocket(t *testing.T) {
	dir := controltest.TempDir(t)
	sock := filepath.Join(dir, "run", "toolhostd.sock") // the directory is created
	// A stale socket.
	if err := os.Mkdir(filepath.Dir(sock), 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()

	be := controltest.NewBackend()
	s, err := control.NewServer(control.Options{Backend: be, Socket: sock})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	select {
	case <-s.Listening():
	case err := <-done:
		t.Fatalf("Serve over a stale socket: %v", err)
	}
	fi, err := os.Lstat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o660 {
		t.Errorf("socket mode %v, want a socket with 0660", fi.Mode())
	}
	entries, _ := os.ReadDir(filepath.Dir(sock))
	if len(entries) != 1 {
		t.Errorf("socket directory holds %d entries, want the socket alone", len(entries))
	}
	// A second server on the same live socket refuses.
	s2, err := control.NewServer(control.Options{Backend: be, Socket: sock})
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Serve(t.Context()); !errors.Is(err, control.ErrInUse) {
		t.Errorf("second Serve = %v, want ErrInUse", err)
	}
	if _, err := os.Lstat(sock); err != nil {
		t.Errorf("the refused server removed the live socket: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve = %v after cancel", err)
	}
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Errorf("socket left after Serve: %v", err)
	}

	// A regular file in the way is an error and stays.
	if err := os.WriteFile(sock, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	s3, err := control.NewServer(control.Options{Backend: be, Socket: sock})
	if err != nil {
		t.Fatal(err)
	}
	if err := s3.Serve(t.Context()); err == nil || !strings.Contains(err.Error(), "is not a socket") {
		t.Errorf("Serve over a file = %v", err)
	}
	if b, err := os.ReadFile(sock); err != nil || string(b) != "keep" {
		t.Errorf("file in the way changed: %q %v", b, err)
	}
}

func TestNewServerErrors(t *testing.T) {
	be := controltest.NewBackend()
	tests := []struct {
		name string
		opts control.Options
		want string
	}{
		{"no backend", control.Options{Socket: "/tmp/x.sock"}, "no backend"},
		{"tcp without token", control.Options{Backend: be, Socket: "/tmp/x.sock", Listen: "127.0.0.1:0"}, "needs a token"},
		{"long path", control.Options{Backend: be, Socket: "/tmp/" + strings.Repeat("x", 120)}, "too long"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := control.NewServer(tt.opts); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("NewServer err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestDefaultSocket(t *testing.T) {
	tests := []struct{ env, want string }{
		{"", "/run/toolhostd/toolhostd.sock"},
		{"/run/th", "/run/th/toolhostd.sock"},
		{"/run/a:/run/b", "/run/a/toolhostd.sock"},
		{"relative", "/run/toolhostd/toolhostd.sock"},
	}
	for _, tt := range tests {
		t.Setenv("RUNTIME_DIRECTORY", tt.env)
		if got := control.DefaultSocket(); got != tt.want {
			t.Errorf("RUNTIME_DIRECTORY=%q: DefaultSocket() = %q, want %q", tt.env, got, tt.want)
		}
	}
}

// TestTCP: the TCP listener wants the bearer token (expanded from the
// environment), compares it exactly and never logs it; the unix socket
// needs none.
func TestTCP(t *testing.T) {
	const token = "s3cret-T0ken-value"
	t.Setenv("CONTROL_TEST_TOKEN", token)
	core, logs := observer.New(zap.DebugLevel)
	be := controltest.NewBackend()
	srv := controltest.Serve(t, control.Options{Backend: be, Listen: "127.0.0.1:0", Token: "${env:CONTROL_TEST_TOKEN}", Log: zap.New(core),
		Gatherer: prometheus.NewRegistry()})
	addr := srv.TCPAddr()
	if addr == nil {
		t.Fatal("no TCP address")
	}
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	base := "http://" + addr.String()
	tests := []struct {
		auth   string
		status int
		errHas string
	}{
		{"", 401, "missing bearer token"},
		{"Basic dXNlcjpwYXNz", 401, "missing bearer token"},
		{"Bearer", 401, "missing bearer token"},
		{"Bearer wrong", 401, "invalid bearer token"},
		{"Bearer " + token + "x", 401, "invalid bearer token"},
		{"Bearer " + token[:len(token)-1], 401, "invalid bearer token"},
		{"Bearer " + token, 200, ""},
		{"bearer " + token, 200, ""},
	}
	// The probes answer without a token (Kubernetes httpGet cannot send one).
	for _, path := range []string{"/healthz", "/readyz"} {
		if a := request(t, hc, "GET", base+path, ""); a.status != 200 && a.status != 503 {
			t.Errorf("GET %s without a token: %d %s", path, a.status, a.body)
		}
	}
	if a := request(t, hc, "POST", base+"/healthz", ""); a.status != 401 {
		t.Errorf("POST /healthz without a token: %d, want 401", a.status)
	}
	for _, path := range []string{"/v1/agents", "/v1/toolings", "/metrics"} {
		for _, tt := range tests {
			a := request(t, hc, "GET", base+path, tt.auth)
			if a.status != tt.status {
				t.Errorf("GET %s with %q: status %d, want %d (%s)", path, tt.auth, a.status, tt.status, a.body)
				continue
			}
			if tt.status == 401 {
				if msg := errorOf(t, a); msg != tt.errHas {
					t.Errorf("GET %s with %q: error %q, want %q", path, tt.auth, msg, tt.errHas)
				}
				if !strings.HasPrefix(a.header.Get("WWW-Authenticate"), "Bearer") {
					t.Errorf("WWW-Authenticate %q", a.header.Get("WWW-Authenticate"))
				}
			}
		}
	}
	// A POST needs the token as well.
	if a := request(t, hc, "POST", base+"/v1/agents/a/stop", ""); a.status != 401 {
		t.Errorf("POST without a token: %d", a.status)
	}
	if len(be.Actions()) != 0 {
		t.Errorf("an unauthenticated request reached the backend: %v", be.Actions())
	}
	// The typed client over TCP.
	c, err := control.DialTCP(addr.String(), token)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if a, err := c.StopAgent(t.Context(), "a"); err != nil || a.State != "stopped" {
		t.Errorf("StopAgent over TCP = %+v, %v", a, err)
	}
	bad, err := control.DialTCP(addr.String(), "nope")
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	if _, err := bad.Agents(t.Context()); !errors.Is(err, control.ErrUnauthorized) {
		t.Errorf("wrong token: %v", err)
	}
	// The unix socket needs no token.
	if a := request(t, unixHTTP(srv.Socket()), "GET", "http://toolhostd/v1/agents", ""); a.status != 200 {
		t.Errorf("unix socket: %d %s", a.status, a.body)
	}
	if logs.FilterMessageSnippet("invalid bearer token").Len() == 0 {
		t.Error("a wrong token was not logged")
	}
	for _, e := range logs.All() {
		b, _ := json.Marshal(e.ContextMap())
		if strings.Contains(e.Message, token) || bytes.Contains(b, []byte(token)) {
			t.Errorf("the token is in a log entry: %s %s", e.Message, b)
		}
	}
}

func TestTCPTokenErrors(t *testing.T) {
	be := controltest.NewBackend()
	dir := controltest.TempDir(t)
	for _, tok := range []string{"${env:CONTROL_TEST_UNSET_VARIABLE}", "${file:" + filepath.Join(dir, "missing") + "}"} {
		os.Unsetenv("CONTROL_TEST_UNSET_VARIABLE")
		s, err := control.NewServer(control.Options{Backend: be, Socket: filepath.Join(dir, "t.sock"), Listen: "127.0.0.1:0", Token: tok})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Serve(t.Context()); err == nil || !strings.HasPrefix(err.Error(), "control_token: ") {
			t.Errorf("Serve with token %s: %v", tok, err)
		}
		if _, err := os.Lstat(filepath.Join(dir, "t.sock")); !os.IsNotExist(err) {
			t.Errorf("socket created despite the token error")
		}
	}
	// An empty expansion is no token.
	t.Setenv("CONTROL_TEST_EMPTY", "")
	s, err := control.NewServer(control.Options{Backend: be, Socket: filepath.Join(dir, "t.sock"), Listen: "127.0.0.1:0", Token: "${env:CONTROL_TEST_EMPTY}"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Serve(t.Context()); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("Serve with an empty token: %v", err)
	}
	// A TCP address in use fails Serve and leaves no socket.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	s, err = control.NewServer(control.Options{Backend: be, Socket: filepath.Join(dir, "t.sock"), Listen: l.Addr().String(), Token: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Serve(t.Context()); err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("Serve on a busy port: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "t.sock")); !os.IsNotExist(err) {
		t.Errorf("socket left after a failed Serve")
	}
}

// TestNonOwnerRefused runs the test binary as a client under uid 65534:
// without the socket's group it cannot connect (mode 0660); with it, it
// connects and the peer check refuses it. As root it is served.
func TestNonOwnerRefused(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run a client under another uid")
	}
	srv := controltest.Serve(t, control.Options{Backend: controltest.NewBackend()})
	// The go test binary sits in a 0700 build directory: copy it out.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(controltest.TempDir(t), "client")
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(cred *syscall.Credential) (int, string) {
		cmd := exec.CommandContext(t.Context(), bin, "-test.run=^$")
		cmd.Env = append(os.Environ(), envClient+"="+srv.Socket())
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("run client: %v\n%s", err, out)
		}
		return cmd.ProcessState.ExitCode(), string(out)
	}
	tests := []struct {
		name string
		cred *syscall.Credential
		code int
		out  string
	}{
		{"root", nil, clientOK, "uid=0 err=<nil>"},
		{"other user", &syscall.Credential{Uid: 65534, Gid: 65534}, clientUnauthorized,
			"uid=65534 err=cannot reach toolhostd at " + srv.Socket() + ": connect: permission denied"},
		{"other user in the socket's group", &syscall.Credential{Uid: 65534, Gid: uint32(os.Getgid())}, clientUnauthorized,
			"uid=65534 err=uid 65534 may not use the control socket (only uid 0 and root)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out := run(tt.cred)
			if code != tt.code || !strings.HasPrefix(out, tt.out) {
				t.Errorf("exit %d, output %q\nwant exit %d, output starting %q", code, out, tt.code, tt.out)
			}
		})
	}
}

// TestShutdownBounded: a request still running when Serve's context ends is
// given ShutdownTimeout, then cut; Serve returns and removes the socket.
func TestShutdownBounded(t *testing.T) {
	be := controltest.NewBackend()
	be.Block = make(chan struct{})
	be.Entered = make(chan string, 1)
	defer close(be.Block)
	sock := filepath.Join(controltest.TempDir(t), "toolhostd.sock")
	s, err := control.NewServer(control.Options{Backend: be, Socket: sock, ShutdownTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	<-s.Listening()
	c, err := control.Dial(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	callErr := make(chan error, 1)
	go func() {
		_, err := c.StopAgent(context.Background(), "a")
		callErr <- err
	}()
	<-be.Entered
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve = %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return with a request blocked")
	}
	if err := <-callErr; err == nil {
		t.Error("the cut request succeeded")
	}
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Errorf("socket left: %v", err)
	}
	// New connections are refused.
	if _, err := control.Dial(sock); !errors.Is(err, control.ErrNotRunning) {
		t.Errorf("Dial after stop: %v", err)
	}
}
