package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/supervisor"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

// The tests run `serve` end to end: a config in a temp dir, real MCP
// servers as subprocesses (server-everything from node_modules, and this
// test binary itself as a go-sdk server when $TOOLHOSTD_TEST_MCP_SERVER is
// set), real wasmtime, the JS agents from build/ and small WAT agents from
// testdata/. Every daemon shares the compile cache build/test-cache, so the
// 12 MB JS components compile once per checkout.

const serverEnv = "TOOLHOSTD_TEST_MCP_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(serverEnv) == "1" {
		os.Exit(runTestServer())
	}
	if os.Getenv(serverEnv) == policyServerMode {
		os.Exit(runPolicyServer())
	}
	// Configs that set no state_dir (and New's of the key-value store)
	// get a temporary one, never the user's.
	state, err := os.MkdirTemp("", "toolhostd-daemon-test-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_STATE_HOME", state)
	os.Unsetenv("STATE_DIRECTORY")
	code := m.Run()
	os.RemoveAll(state)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// runTestServer is the go-sdk MCP server the tests configure as a stdio
// tooling: tools echo and slow (blocks until its request is cancelled). It
// writes its pid to $TOOLHOSTD_TEST_PIDFILE.
func runTestServer() int {
	if f := os.Getenv("TOOLHOSTD_TEST_PIDFILE"); f != "" {
		if err := os.WriteFile(f, []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	type in struct {
		Text string `json:"text,omitempty"`
		Tag  string `json:"tag,omitempty"`
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "daemon-test", Version: "1.0.0"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "echoes text"},
		func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "slow", Description: "blocks until cancelled"},
		func(ctx context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, err)
	}
	return 0
}

// ---- fixtures ----

// wat is testdata/<name>.wat as an absolute path.
func wat(t testing.TB, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", name+".wat"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func everythingEntry(t testing.TB) string { return testenv.NPMServer(t, "server-everything") }

// header is the start of every test config: the shared compile cache and
// a state directory of the test's own (the key-value store's bbolt file is
// one process's: two daemons sharing the default one would refuse to start).
func header(t testing.TB) string { return headerState(t, t.TempDir()) }

// headerState is header with the state directory state.
func headerState(t testing.TB, state string) string {
	return fmt.Sprintf("version = 1\n[host]\ncache_dir = %q\nlog_level = \"debug\"\nstate_dir = %q\n\n", filepath.Join(testenv.Root(t), "build", "test-cache"), state)
}

// goTooling is a [tooling.<name>] running this test binary as a go-sdk
// server that writes its pid to pidfile.
func goTooling(name, pidfile, extra string) string {
	return fmt.Sprintf(`[tooling.%s]
command = %q
env = { %s = "1", TOOLHOSTD_TEST_PIDFILE = %q }
connect_timeout = "30s"
restart = { initial_backoff = "20ms", max_backoff = "200ms", healthy_after = "1s" }
%s
`, name, os.Args[0], serverEnv, pidfile, extra)
}

// writeConfig writes text as dir/toolhostd.toml and returns its path.
func writeConfig(t testing.TB, dir, text string) string {
	t.Helper()
	p := filepath.Join(dir, "toolhostd.toml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// running is a daemon being served.
type running struct {
	d      *Daemon
	logs   *observer.ObservedLogs
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

// The agent states as ps shows them.
var (
	stateRunning  = supervisor.Running.String()
	stateIdle     = supervisor.Idle.String()
	stateFailed   = supervisor.Failed.String()
	stateExited   = supervisor.Exited.String()
	stateStopped  = supervisor.Stopped.String()
	stateStopping = supervisor.Stopping.String()
)

// serve loads the config at path, builds a daemon and serves it until the
// test ends (or stop).
func serve(t testing.TB, path string, opts ...Options) *running {
	t.Helper()
	r := build(t, path, opts...)
	r.start(t)
	return r
}

// build loads the config at path and builds a daemon, not served yet.
func build(t testing.TB, path string, opts ...Options) *running {
	t.Helper()
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	obs, logs := observer.New(zapcore.DebugLevel)
	stderr := zapcore.NewCore(zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig()), zapcore.Lock(os.Stderr), zapcore.ErrorLevel)
	log := zap.New(zapcore.NewTee(obs, stderr))
	var o Options // opts: at most one
	for _, oo := range opts {
		o = oo
	}
	o.Log = log
	d, err := New(path, cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	// Every state change the daemon made, shutdown included (this cleanup
	// runs after start's stop), was one the state machine allows.
	t.Cleanup(func() {
		for _, e := range logs.FilterMessage("illegal agent state transition").All() {
			t.Errorf("agent %v: illegal state transition %v -> %v", e.ContextMap()["agent"], e.ContextMap()["from"], e.ContextMap()["to"])
		}
	})
	return &running{d: d, logs: logs, done: make(chan error, 1)}
}

// start serves r until the test ends (or stop).
func (r *running) start(t testing.TB) {
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- r.d.Serve(ctx) }()
	t.Cleanup(func() { r.stop(t) })
}

// stop ends Serve and returns how long that took.
func (r *running) stop(t testing.TB) time.Duration {
	t.Helper()
	var took time.Duration
	r.once.Do(func() {
		start := time.Now()
		r.cancel()
		select {
		case err := <-r.done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(90 * time.Second):
			t.Fatal("Serve did not return within 90s of its context ending")
		}
		took = time.Since(start)
	})
	return took
}

func (r *running) agent(t testing.TB, name string) control.AgentStatus {
	t.Helper()
	for _, a := range r.d.Agents() {
		if a.Name == name {
			return a
		}
	}
	t.Fatalf("no agent %q in Agents()", name)
	return control.AgentStatus{}
}

func (r *running) hasAgent(name string) bool {
	for _, a := range r.d.Agents() {
		if a.Name == name {
			return true
		}
	}
	return false
}

func (r *running) tooling(t testing.TB, name string) control.ToolingStatus {
	t.Helper()
	for _, ts := range r.d.Toolings() {
		if ts.Name == name {
			return ts
		}
	}
	t.Fatalf("no tooling %q in Toolings()", name)
	return control.ToolingStatus{}
}

// waitAgent waits until the agent's status satisfies cond.
func (r *running) waitAgent(t testing.TB, name, what string, cond func(control.AgentStatus) bool) control.AgentStatus {
	t.Helper()
	var last control.AgentStatus
	if err := testenv.Poll(60*time.Second, func() bool {
		last = r.agent(t, name)
		return cond(last)
	}); err != nil {
		t.Fatalf("%v waiting for agent %s: %s (last: %+v)", err, name, what, last)
	}
	return last
}

// output is the last output the agent's run returned, from the debug log.
func (r *running) output(name string) (string, bool) {
	entries := r.logs.FilterMessage("agent output").All()
	for i := len(entries) - 1; i >= 0; i-- {
		f := entries[i].ContextMap()
		if f["agent"] == name {
			s, _ := f["output"].(string)
			return s, true
		}
	}
	return "", false
}

// readPID reads a pid file the test server wrote.
func readPID(t testing.TB, path string) int {
	t.Helper()
	var pid int
	testenv.Eventually(t, 30*time.Second, "pid file "+path, func() bool {
		b, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	})
	return pid
}

// alive reports whether pid is a live (not zombie) process.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...: the state follows the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z'
}

// children lists the live processes whose parent is this test process.
func children(t testing.TB) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	me := os.Getpid()
	var out []string
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 || f[0] == "Z" {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); ppid == me {
			cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			out = append(out, fmt.Sprintf("%d %s", pid, strings.ReplaceAll(string(cmd), "\x00", " ")))
		}
	}
	return out
}

func kill(t testing.TB, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill %d: %v", pid, err)
	}
}
