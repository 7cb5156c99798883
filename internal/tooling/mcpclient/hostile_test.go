package mcpclient_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/toolhostd/toolhostd/internal/testenv"
	"github.com/toolhostd/toolhostd/internal/tooling"
	"github.com/toolhostd/toolhostd/internal/tooling/mcpclient"
)

// bigArgs asks the big tool for a text of n bytes.
func bigArgs(n int) json.RawMessage { return json.RawMessage(fmt.Sprintf(`{"bytes":%d}`, n)) }

// An answer over max_message_bytes fails its own call only: a call in
// flight meanwhile, the session and the server are untouched.
func TestSubprocessOversizedAnswerFailsOneCall(t *testing.T) {
	cfg := stdioConfig(t, "stdio", "")
	cfg.MaxMessageBytes = 1 << 20
	m := newMCP(t, cfg, nil, mcpclient.Options{PingInterval: -1})
	testenv.ServeTooling(t, m, nil)
	waitConnected(t, m)
	pid := serverPID(t, m)
	errc := blockingCall(t, m)

	_, err := m.CallTool(t.Context(), "big", bigArgs(2<<20))
	wantCode(t, err, tooling.CodeProtocol)
	for _, want := range []string{"max_message_bytes", "[tooling.sub-stdio]", "(1048576)", "bytes"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	// The size of the message is named: the 2 MiB text and its envelope.
	var size int
	if i := strings.Index(err.Error(), "a message of "); i < 0 {
		t.Errorf("error %q does not name the size", err)
	} else if _, serr := fmt.Sscanf(err.Error()[i:], "a message of %d bytes", &size); serr != nil || size < 2<<20 || size > 2<<20+200 {
		t.Errorf("size named %d (%v), want just over %d", size, serr, 2<<20)
	}

	select {
	case err := <-errc:
		t.Fatalf("the call in flight ended with the oversized one: %v", err)
	default:
	}
	if got := serverPID(t, m); got != pid {
		t.Fatal("the server was replaced")
	}
	res, err := m.CallTool(t.Context(), "big", bigArgs(100<<10))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(firstText(t, res.Value)); n != 100<<10 {
		t.Errorf("a 100KiB answer came back with %d bytes", n)
	}
	if st := m.Status(); st.Restarts != 0 || !st.Connected {
		t.Errorf("status %+v", st)
	}
}

// The default max_message_bytes is 64 MiB: a 17 MiB answer (over go-sdk's
// own 16 MiB line limit) arrives.
func TestSubprocessLargeAnswerWithinDefault(t *testing.T) {
	cfg := stdioConfig(t, "stdio", "")
	cfg.CallTimeout = dur(2 * time.Minute) // JSON work on 17 MiB, several times, under -race
	m := newMCP(t, cfg, nil, mcpclient.Options{PingInterval: -1})
	testenv.ServeTooling(t, m, nil)
	waitConnected(t, m)
	res, err := m.CallTool(t.Context(), "big", bigArgs(17<<20))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(firstText(t, res.Value)); n != 17<<20 {
		t.Errorf("answer of %d bytes", n)
	}
}

// Lines on stdout that are not JSON-RPC are logged (a few, truncated) and
// skipped; the session goes on.
func TestSubprocessGarbageOnStdoutIsSkipped(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	m := newMCP(t, stdioConfig(t, "stdio", ""), zap.New(core), mcpclient.Options{PingInterval: -1})
	testenv.ServeTooling(t, m, nil)
	waitConnected(t, m)
	pid1 := serverPID(t, m)
	res, err := m.CallTool(t.Context(), "garbage", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := firstText(t, res.Value); got != "printed garbage" {
		t.Errorf("garbage tool said %q", got)
	}
	if pid2 := serverPID(t, m); pid2 != pid1 {
		t.Fatal("the server was replaced after garbage on its stdout")
	}
	skipped := logs.FilterMessage("skipping a line of the server's stdout that is not JSON-RPC").All()
	if len(skipped) == 0 || len(skipped) > 5 {
		t.Fatalf("%d warnings for 20 garbage lines, want 1 to 5 (rate-limited)", len(skipped))
	}
	first := skipped[0].ContextMap()["line"].(string)
	if !strings.HasPrefix(first, "{not json either xxx") || len(first) > 210 {
		t.Errorf("first skipped line logged as %q (%d bytes), want it truncated", first, len(first))
	}
	if st := m.Status(); st.Restarts != 0 {
		t.Errorf("status %+v", st)
	}
}

// A banner printed before the first message does not stop the session.
func TestSubprocessBannerBeforeInitialize(t *testing.T) {
	m := newMCP(t, stdioConfig(t, "banner", ""), nil, mcpclient.Options{PingInterval: -1})
	testenv.ServeTooling(t, m, nil)
	waitConnected(t, m)
	if _, err := m.CallTool(t.Context(), "echo", json.RawMessage(`{"text":"hi"}`)); err != nil {
		t.Fatal(err)
	}
	if st := m.Status(); st.Restarts != 0 {
		t.Errorf("status %+v: the banner cost a restart", st)
	}
}

// A call made while the tooling cannot connect fails at once with the
// connection error, not after the connect timeout.
func TestSubprocessExitAtStartFailsFast(t *testing.T) {
	cfg := stdioConfig(t, "exit", "")
	cfg.ConnectTimeout = dur(time.Minute)
	cfg.Restart.InitialBackoff = dur(time.Second)
	cfg.Restart.MaxBackoff = dur(time.Second)
	m := newMCP(t, cfg, nil, mcpclient.Options{})
	testenv.ServeTooling(t, m, nil)
	for i := range 3 {
		errc := make(chan error, 1)
		go func() {
			_, err := m.ListTools(t.Context())
			errc <- err
		}()
		// Well before the one-minute connect timeout.
		err := testenv.Recv(t, errc, 20*time.Second, "the call to fail")
		wantCode(t, err, tooling.CodeUnavailable)
		t.Logf("call %d: %v", i, err)
		if !strings.Contains(err.Error(), "exit status 3") {
			t.Errorf("call %d: error %q lacks the server's exit", i, err)
		}
		// The next call lands elsewhere in the 1s backoff: it must fail
		// at once wherever it lands.
		time.Sleep(300 * time.Millisecond)
	}
}

// The liveness check comes from the config's ping_interval and
// ping_timeout.
func TestSubprocessStoppedLivenessFromConfig(t *testing.T) {
	cfg := stdioConfig(t, "stdio", "")
	cfg.PingInterval, cfg.PingTimeout = dur(200*time.Millisecond), dur(300*time.Millisecond)
	m := newMCP(t, cfg, nil, mcpclient.Options{})
	_, _, err := stopServerMidCall(t, m, 5*time.Second)
	wantCode(t, err, tooling.CodeUnavailable)
	if !strings.Contains(err.Error(), "liveness") {
		t.Errorf("error %q does not say the liveness check failed", err)
	}
}

// With the default liveness check a hung server is replaced in seconds.
func TestSubprocessStoppedDefaultLiveness(t *testing.T) {
	m := newMCP(t, stdioConfig(t, "stdio", ""), nil, mcpclient.Options{})
	// The old defaults (15s + 5s) would take up to 20s.
	pid1, start, err := stopServerMidCall(t, m, 10*time.Second)
	wantCode(t, err, tooling.CodeUnavailable)
	pid2 := serverPID(t, m)
	if pid2 == pid1 {
		t.Fatal("same server")
	}
	t.Logf("hung server replaced %v after SIGSTOP", time.Since(start).Round(time.Millisecond))
}

// A server that ignores SIGTERM and stdin EOF dies with its host even when
// the host is SIGKILLed.
func TestSubprocessDiesWithHost(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(t.TempDir(), "pid")
	host := exec.Command(exe, "-test.run=^$")
	host.Env = append(os.Environ(), envServerMode+"=host", envPIDFile+"="+pidFile)
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	testenv.Eventually(t, 30*time.Second, "the host's server to start", func() bool {
		data, err := os.ReadFile(pidFile)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(string(data))
		return err == nil
	})
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if err := host.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = host.Wait()
	testenv.Eventually(t, 10*time.Second, "the server to die with its host", func() bool {
		return !processAlive(pid)
	})
}

// processAlive reports whether pid runs (a zombie does not: its parent,
// now init, reaps it).
func processAlive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(data), ')')
	return i > 0 && i+2 < len(data) && data[i+2] != 'Z'
}

// Stopping the tooling while a call is cancelled (one Ctrl-C ends both)
// flushes the notifications/cancelled to the server before closing.
func TestSubprocessCancelNoticeFlushedOnStop(t *testing.T) {
	for i := range 5 {
		methods := filepath.Join(t.TempDir(), "methods")
		cfg := stdioConfig(t, "stdio", "")
		cfg.Env[envMethodsFile] = methods
		m := newMCP(t, cfg, nil, mcpclient.Options{PingInterval: -1})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- m.Serve(ctx, nil) }()
		waitConnected(t, m)
		errc := make(chan error, 1)
		go func() {
			_, err := m.CallTool(ctx, "block", nil)
			errc <- err
		}()
		testenv.Eventually(t, 10*time.Second, "the call to reach the server", func() bool {
			data, _ := os.ReadFile(methods)
			return strings.Contains(string(data), "tools/call")
		})
		cancel()
		wantCode(t, testenv.Recv(t, errc, 10*time.Second, "the call to end"), tooling.CodeCancelled)
		testenv.Recv(t, done, 30*time.Second, "Serve to return")
		data, _ := os.ReadFile(methods)
		if !strings.Contains(string(data), "notifications/cancelled") {
			t.Fatalf("run %d: the server never saw notifications/cancelled; it saw:\n%s", i, data)
		}
	}
}
