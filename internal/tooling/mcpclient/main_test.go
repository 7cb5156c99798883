package mcpclient_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/testenv"
	"github.com/toolhostd/toolhostd/internal/tooling"
	"github.com/toolhostd/toolhostd/internal/tooling/mcpclient"
)

// envServerMode, when set, makes the test binary an MCP server on stdio
// instead of running tests: "stdio" serves newTestServer, "exit" exits at
// once with status 3. envCountFile, when set, gets one line per start.
const (
	envServerMode = "TOOLING_TEST_SERVER"
	envCountFile  = "TOOLING_TEST_COUNT_FILE"
	// envMethodsFile, when set, gets every message the server reads and
	// writes, one a line (mcp.LoggingTransport).
	envMethodsFile = "TOOLING_TEST_METHODS_FILE"
	// envPIDFile, in mode "host", gets the pid of the server it runs.
	envPIDFile = "TOOLING_TEST_PID_FILE"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(envServerMode); mode != "" {
		os.Exit(runTestServer(mode))
	}
	goleak.VerifyTestMain(m)
}

func runTestServer(mode string) int {
	if f := os.Getenv(envCountFile); f != "" {
		if fh, err := os.OpenFile(f, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
			fmt.Fprintln(fh, os.Getpid())
			fh.Close()
		}
	}
	fmt.Fprintf(os.Stderr, "test server starting, mode %s\n", mode)
	switch mode {
	case "exit":
		fmt.Fprintln(os.Stderr, "exiting at start")
		return 3
	case "stdio", "banner", "stubborn":
		ts := newTestServer(2)
		var transport mcp.Transport = &mcp.StdioTransport{}
		if f := os.Getenv(envMethodsFile); f != "" {
			// Every message as it is read, before any handling.
			fh, err := os.OpenFile(f, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			transport = &mcp.LoggingTransport{Transport: transport, Writer: fh}
		}
		if mode == "banner" {
			// What many real servers do before speaking JSON-RPC.
			fmt.Println("Example MCP server v0.1 listening on stdio")
			fmt.Println()
		}
		if mode == "stubborn" {
			// Ignores SIGTERM and stdin EOF: only SIGKILL ends it.
			signal.Ignore(syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT)
		}
		err := ts.Server.Run(context.Background(), transport)
		if mode == "stubborn" {
			for {
				time.Sleep(time.Hour) // (select{} would die as a deadlock)
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "server:", err)
			return 1
		}
		return 0
	case "host":
		return runTestHost()
	}
	fmt.Fprintln(os.Stderr, "unknown mode", mode)
	return 2
}

// runTestHost plays toolhostd: it runs a "stubborn" server through an MCP
// tooling, writes the server's pid to $TOOLING_TEST_PID_FILE and waits to
// be killed.
func runTestHost() int {
	exe, err := os.Executable()
	if err != nil {
		return 1
	}
	cfg := testConfig("host")
	cfg.Command, cfg.Args = exe, []string{"-test.run=^$"}
	cfg.Env = map[string]string{envServerMode: "stubborn"}
	m, err := mcpclient.New(cfg, zap.NewNop(), mcpclient.Options{})
	if err != nil {
		return 1
	}
	go func() { _ = m.Serve(context.Background(), nil) }()
	var pid string
	if testenv.Poll(time.Minute, func() bool {
		res, err := m.CallTool(context.Background(), "pid", nil)
		var v struct{ Content []struct{ Text string } }
		if err != nil || json.Unmarshal([]byte(res.Value), &v) != nil || len(v.Content) != 1 {
			return false
		}
		pid = v.Content[0].Text
		return true
	}) != nil {
		return 1
	}
	if err := os.WriteFile(os.Getenv(envPIDFile), []byte(pid), 0o600); err != nil {
		return 1
	}
	select {}
}

func dur(d time.Duration) config.Duration { return config.Duration{Duration: d} }

// testConfig is a tooling config with short timings for tests.
func testConfig(name string) *config.Tooling {
	return &config.Tooling{
		Name:      name,
		Kind:      "mcp",
		Transport: "stdio",
		Restart: config.Restart{
			InitialBackoff: dur(20 * time.Millisecond),
			MaxBackoff:     dur(200 * time.Millisecond),
			HealthyAfter:   dur(time.Second),
		},
		ToolingProcess: config.ToolingProcess{Command: "unused-with-a-dialer"},
		ToolingCalls:   config.ToolingCalls{ConnectTimeout: dur(5 * time.Second), CallTimeout: dur(20 * time.Second)},
	}
}

func newMCP(t testing.TB, cfg *config.Tooling, log *zap.Logger, o mcpclient.Options) *mcpclient.Client {
	t.Helper()
	if log == nil {
		log = zaptest.NewLogger(t)
	}
	m, err := mcpclient.New(cfg, log, o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func waitConnected(t testing.TB, m *mcpclient.Client) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, "a session", func() bool { return m.Status().Connected })
}

// recorder is an Observer that records into channels.
type recorder struct {
	updated     chan string
	listChanged chan struct{}
	resubFailed chan string
}

func newRecorder() *recorder {
	return &recorder{updated: make(chan string, 64), listChanged: make(chan struct{}, 64), resubFailed: make(chan string, 64)}
}

func (r *recorder) ResourceUpdated(uri string) { r.updated <- uri }
func (r *recorder) ResourceListChanged()       { r.listChanged <- struct{}{} }
func (r *recorder) ResubscribeFailed(uri string, _ error) {
	r.resubFailed <- uri
}

// wantCode fails unless err is a *tooling.Error with code.
func wantCode(t testing.TB, err error, code tooling.ErrorCode) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %v", code)
	}
	te, ok := err.(*tooling.Error)
	if !ok {
		t.Fatalf("got %T %v, want a *tooling.Error", err, err)
	}
	if te.Code != code {
		t.Fatalf("got code %v (%v), want %v", te.Code, te, code)
	}
}
