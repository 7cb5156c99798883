package mcpclient_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/testenv"
	"github.com/toolhostd/toolhostd/internal/tooling"
	"github.com/toolhostd/toolhostd/internal/tooling/mcpclient"
)

// stdioConfig runs this test binary as a go-sdk server in mode (see
// TestMain); countFile, if not empty, gets one line per server start.
func stdioConfig(t *testing.T, mode, countFile string) *config.Tooling {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig("sub-" + mode)
	cfg.Command = exe
	cfg.Args = []string{"-test.run=^$"}
	cfg.Env = map[string]string{envServerMode: mode}
	if countFile != "" {
		cfg.Env[envCountFile] = countFile
	}
	return cfg
}

// serverPID asks the subprocess server for its pid.
func serverPID(t *testing.T, m *mcpclient.Client) int {
	t.Helper()
	var pid int
	testenv.Eventually(t, 30*time.Second, "the pid tool to answer", func() bool {
		res, err := m.CallTool(t.Context(), "pid", nil)
		if err != nil {
			return false
		}
		var v struct{ Content []struct{ Text string } }
		if err := json.Unmarshal([]byte(res.Value), &v); err != nil || len(v.Content) != 1 {
			t.Fatalf("pid result %s: %v", res.Value, err)
		}
		pid, err = strconv.Atoi(v.Content[0].Text)
		return err == nil
	})
	return pid
}

// stopProcess sends SIGSTOP to pid and waits until the kernel reports it
// stopped (a group stop is not instantaneous on a loaded machine).
func stopProcess(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "the server to be stopped", func() bool {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return false
		}
		// pid (comm) state ...: the state follows the last ')'.
		i := strings.LastIndexByte(string(data), ')')
		return i > 0 && i+2 < len(data) && data[i+2] == 'T'
	})
}

// blockingCall starts the "block" tool and waits until the server runs it
// (its "blocked" tool counts the calls under way).
func blockingCall(t *testing.T, m *mcpclient.Client) <-chan error {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		_, err := m.CallTool(t.Context(), "block", nil)
		errc <- err
	}()
	testenv.Eventually(t, 10*time.Second, "the call to reach the server", func() bool {
		res, err := m.CallTool(t.Context(), "blocked", nil)
		return err == nil && firstText(t, res.Value) == "1"
	})
	return errc
}

func TestSubprocessKilledMidCall(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	// No liveness pings: the dead pipe alone must fail the call.
	m := newMCP(t, stdioConfig(t, "stdio", ""), zap.New(core), mcpclient.Options{PingInterval: -1})
	rec := newRecorder()
	testenv.ServeTooling(t, m, rec)
	waitConnected(t, m)
	pid1 := serverPID(t, m)
	if err := m.Subscribe(t.Context(), "test://text/1"); err != nil {
		t.Fatal(err)
	}

	errc := blockingCall(t, m)
	if err := syscall.Kill(pid1, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The call timeout is 20s: well before it, the call fails unavailable.
	wantCode(t, testenv.Recv(t, errc, 10*time.Second, "the in-flight call to fail"), tooling.CodeUnavailable)

	pid2 := serverPID(t, m)
	if pid2 == pid1 {
		t.Fatal("same server pid after SIGKILL")
	}
	if st := m.Status(); st.Restarts < 1 || !st.Connected {
		t.Errorf("status after reconnect = %+v", st)
	}
	// The subscription was made again on the new server: it only notifies
	// subscribed sessions. The new session takes calls while its
	// re-subscription may still be on its way, so touch until an update
	// comes (the server sends none to a session that is not subscribed).
	testenv.Eventually(t, 10*time.Second, "an update on the re-subscribed uri", func() bool {
		if _, err := m.CallTool(t.Context(), "touch", json.RawMessage(`{"uri":"test://text/1"}`)); err != nil {
			t.Fatal(err)
		}
		select {
		case got := <-rec.updated:
			if got != "test://text/1" {
				t.Errorf("updated %q", got)
			}
			return true
		case <-time.After(200 * time.Millisecond):
			return false
		}
	})
	if n := logs.FilterMessage("server stderr").FilterFieldKey("line").Len(); n < 2 {
		t.Errorf("server stderr lines logged: %d, want one per start", n)
	}
}

// stopServerMidCall serves m, makes a call that blocks, stops the server
// under it (SIGSTOP: hung, not dead) and returns the stopped server's pid,
// when it was stopped, and the error the call failed with (within d).
func stopServerMidCall(t *testing.T, m *mcpclient.Client, d time.Duration) (pid int, stopped time.Time, err error) {
	t.Helper()
	testenv.ServeTooling(t, m, nil)
	waitConnected(t, m)
	pid = serverPID(t, m)
	errc := blockingCall(t, m)
	stopProcess(t, pid)
	stopped = time.Now()
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	return pid, stopped, testenv.Recv(t, errc, d, "the in-flight call to fail")
}

func TestSubprocessStoppedFailsLiveness(t *testing.T) {
	m := newMCP(t, stdioConfig(t, "stdio", ""), nil, mcpclient.Options{PingInterval: 200 * time.Millisecond, PingTimeout: 300 * time.Millisecond})
	pid1, _, err := stopServerMidCall(t, m, 10*time.Second)
	wantCode(t, err, tooling.CodeUnavailable)
	if !strings.Contains(err.Error(), "liveness") {
		t.Errorf("error %q does not say the liveness check failed", err)
	}
	if pid2 := serverPID(t, m); pid2 == pid1 {
		t.Fatal("same server after a failed liveness check")
	}
}

func TestSubprocessStoppedCallTimesOut(t *testing.T) {
	cfg := stdioConfig(t, "stdio", "")
	cfg.CallTimeout = dur(500 * time.Millisecond)
	m := newMCP(t, cfg, nil, mcpclient.Options{PingInterval: -1})
	testenv.ServeTooling(t, m, nil)
	waitConnected(t, m)
	pid := serverPID(t, m)
	stopProcess(t, pid)
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	errc := make(chan error, 1)
	go func() {
		_, err := m.CallTool(t.Context(), "echo", json.RawMessage(`{"text":"anyone?"}`))
		errc <- err
	}()
	wantCode(t, testenv.Recv(t, errc, 10*time.Second, "the call to time out"), tooling.CodeTimeout)
	_, err := m.ListTools(t.Context())
	wantCode(t, err, tooling.CodeTimeout)
}

func TestSubprocessExitAtStartBacksOff(t *testing.T) {
	countFile := filepath.Join(t.TempDir(), "starts")
	cfg := stdioConfig(t, "exit", countFile)
	// Long enough for a race-instrumented binary to start on a loaded
	// machine: the attempts must fail by the exit, not by the timeout.
	cfg.ConnectTimeout = dur(2 * time.Second)
	cfg.Restart.InitialBackoff = dur(100 * time.Millisecond)
	cfg.Restart.MaxBackoff = dur(400 * time.Millisecond)
	m := newMCP(t, cfg, nil, mcpclient.Options{})
	testenv.ServeTooling(t, m, nil)

	// An operation fails unavailable with the last connection error.
	_, err := m.ListTools(t.Context())
	wantCode(t, err, tooling.CodeUnavailable)
	if !strings.Contains(err.Error(), "connecting") {
		t.Errorf("error %q lacks the connection error", err)
	}

	// Count the starts in a 2s window.
	count := func() int {
		data, err := os.ReadFile(countFile)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(string(data), "\n")
	}
	before := count()
	time.Sleep(2 * time.Second) // the window is the measurement
	starts := count() - before
	// By now the backoff is at its 400ms maximum, jittered to 200..400ms:
	// at most 10 starts in 2s (plus process start time, so fewer), and at
	// least 2 however loaded the machine. A busy loop would make hundreds.
	if starts < 2 || starts > 11 {
		t.Errorf("%d server starts in ~2.5s, want a handful (backoff)", starts)
	}
	if st := m.Status(); st.Connected || st.Restarts < 2 || st.LastError == "" {
		t.Errorf("status = %+v", st)
	}
}
