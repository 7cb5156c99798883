package control_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/control/controltest"
)

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
