package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/testenv"
)

func testdata(name string) string { return filepath.Join("testdata", name) }

func TestRunExitCodes(t *testing.T) {
	inputFile := filepath.Join(t.TempDir(), "input.txt")
	if err := os.WriteFile(inputFile, []byte("from a file"), 0o600); err != nil {
		t.Fatal(err)
	}
	badConfig := writeConfigFile(t, t.TempDir(), "bad.toml", "version = 1\n[tooling.x]\ncomand = \"node\"\n")
	example := filepath.Join(testenv.Root(t), "configs", "example.toml")
	cases := []struct {
		name       string
		args       []string
		code       int
		stdout     string // exact, when code is 0
		stderrHas  string
		stdoutNone bool
	}{
		{name: "ok", args: []string{"run", testdata("echo.wat"), "--input", "hi there, ünïcode"}, code: 0, stdout: "hi there, ünïcode\n"},
		{name: "ok empty input", args: []string{"run", testdata("echo.wat")}, code: 0, stdout: "\n"},
		{name: "input file", args: []string{"run", testdata("echo.wat"), "--input-file", inputFile}, code: 0, stdout: "from a file\n"},
		{name: "err", args: []string{"run", testdata("says-no.wat")}, code: 1, stderrHas: "agent says no", stdoutNone: true},
		{name: "trap", args: []string{"run", testdata("traps.wat")}, code: 2, stderrHas: "`unreachable` instruction executed (in m!inner @ 0x55)\nguest backtrace:\n  0: m!inner @ 0x55\n  1: m!", stdoutNone: true},
		{name: "no run export", args: []string{"run", testdata("norun.wat")}, code: 2, stderrHas: "no export `run", stdoutNone: true},
		{name: "missing file", args: []string{"run", testdata("nope.wasm")}, code: 2, stderrHas: "nope.wasm", stdoutNone: true},
		{name: "no agent", args: []string{"run"}, code: 64, stderrHas: "accepts 1 arg", stdoutNone: true},
		{name: "unknown flag", args: []string{"run", testdata("echo.wat"), "--frobnicate"}, code: 64, stderrHas: "unknown flag", stdoutNone: true},
		{name: "both inputs", args: []string{"run", testdata("echo.wat"), "--input", "a", "--input-file", inputFile}, code: 64, stderrHas: "exclude each other", stdoutNone: true},
		{name: "bad env", args: []string{"run", testdata("echo.wat"), "--env", "NOEQUALS"}, code: 64, stderrHas: "KEY=VALUE", stdoutNone: true},
		{name: "unknown grant", args: []string{"--config", example, "run", testdata("echo.wat"), "--grant", "nope"}, code: 64, stderrHas: "no [tooling.nope]", stdoutNone: true},
		{name: "bad config", args: []string{"--config", badConfig, "run", testdata("echo.wat")}, code: 64, stderrHas: "bad.toml:3:1: tooling.x.comand", stdoutNone: true},
		{name: "missing config", args: []string{"--config", "/nonexistent/toolhostd.toml", "run", testdata("echo.wat")}, code: 64, stderrHas: "/nonexistent/toolhostd.toml", stdoutNone: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("TOOLHOSTD_CONFIG", "")
			code, out, errs := runCLI(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %q\nstderr: %s", code, tc.code, out, errs)
			}
			if tc.code == 0 && out != tc.stdout {
				t.Errorf("stdout = %q, want %q", out, tc.stdout)
			}
			if tc.stdoutNone && out != "" {
				t.Errorf("stdout = %q, want nothing", out)
			}
			if !strings.Contains(errs, tc.stderrHas) {
				t.Errorf("stderr lacks %q:\n%s", tc.stderrHas, errs)
			}
		})
	}
}

func TestRunHelloAgainstExampleConfig(t *testing.T) {
	hello := testenv.Agent(t, "agents", "hello")
	example := filepath.Join(testenv.Root(t), "configs", "example.toml")
	code, out, errs := runCLI(t, "--config", example, "run", hello)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	for _, want := range []string{
		"everything (mcp): ", " tools: echo,",
		"filesystem (mcp): ", "list_allowed_directories",
		`everything.echo({"message":"hello from a WebAssembly agent"}) -> Echo: hello from a WebAssembly agent`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if !strings.HasSuffix(out, "\n") || strings.HasSuffix(out, "\n\n") {
		t.Errorf("stdout must end in exactly one newline: %q", out)
	}
	if !strings.Contains(errs, "hello agent finished") || !strings.Contains(errs, `"agent": "hello"`) {
		t.Errorf("the guest's log line with its agent name is missing from stderr:\n%s", errs)
	}

	t.Run("grant", func(t *testing.T) {
		code, out, errs := runCLI(t, "--config", example, "run", hello, "--grant", "everything")
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, errs)
		}
		if !strings.Contains(out, "filesystem: denied: ") || !strings.Contains(out, "everything (mcp): ") {
			t.Errorf("with --grant everything, filesystem must be denied:\n%s", out)
		}
	})
	t.Run("configured agent", func(t *testing.T) {
		// An [agent.X] whose component is the file run: run applies its
		// toolings list and its grants as serve would, under its name.
		root := testenv.Root(t)
		b, err := os.ReadFile(example)
		if err != nil {
			t.Fatal(err)
		}
		cfg := strings.ReplaceAll(string(b), `cwd = ".."`, fmt.Sprintf("cwd = %q", root)) + fmt.Sprintf(
			"\n[agent.greeter]\ncomponent = %q\ntoolings = [\"everything\"]\n\n[agent.greeter.grants.everything]\ntools = [\"get-*\"]\n", hello)
		path := writeConfigFile(t, t.TempDir(), "toolhostd.toml", cfg)
		code, out, errs := runCLI(t, "--config", path, "run", hello)
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, errs)
		}
		for _, want := range []string{"filesystem: denied: ", "everything (mcp): ", "everything.echo failed: denied: "} {
			if !strings.Contains(out, want) {
				t.Errorf("stdout lacks %q (the agent's toolings and grants must apply):\n%s", want, out)
			}
		}
		if strings.Contains(out, " echo,") {
			t.Errorf("the grant's tools pattern must hide echo from list-tools:\n%s", out)
		}
		if !strings.Contains(errs, `"agent": "greeter"`) {
			t.Errorf("the agent must run under its configured name:\n%s", errs)
		}
	})
	t.Run("no config", func(t *testing.T) {
		t.Chdir(t.TempDir())
		t.Setenv("TOOLHOSTD_CONFIG", "")
		code, out, errs := runCLI(t, "run", hello)
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, errs)
		}
		if !strings.Contains(out, "everything: not-found: ") || !strings.Contains(out, "filesystem: not-found: ") {
			t.Errorf("without a config every tooling must be not-found:\n%s", out)
		}
	})
}

// TestRunSignal runs toolhostd in a subprocess with the watch agent waiting
// for updates, interrupts it, and checks that the agent got its shutdown
// envelope (it returns normally), the exit status is 0 and no MCP server
// process outlives toolhostd.
func TestRunSignal(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			watch := testenv.Agent(t, "agents", "watch")
			cmd := exec.Command(os.Args[0], "--config", debugExample(t), "run", watch,
				"--input", `{"count": 1000, "toggle": false}`, "--grace", "5s")
			cmd.Env = append(os.Environ(), envAsMain+"=1")
			var stdout bytes.Buffer
			stderr := &syncBuffer{}
			cmd.Stdout, cmd.Stderr = &stdout, stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			// Both servers up and the agent running, its subscription made
			// (its recv comes next: the shutdown envelope will wait for it).
			waitFor(t, 60*time.Second, func() bool {
				s := stderr.String()
				return sessionUp(s, "everything") && sessionUp(s, "filesystem") && strings.Contains(s, "agent started") &&
					strings.Contains(s, "\tsubscribed\t") && len(children(cmd.Process.Pid)) >= 2
			}, stderr)
			kids := children(cmd.Process.Pid)
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("toolhostd exited with %v\n%s", err, stderr.String())
				}
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("toolhostd did not exit after %v\n%s", sig, stderr.String())
			}
			if got := stdout.String(); got != "0 updates of demo://resource/static/document/features.md\n" {
				t.Errorf("stdout = %q; the agent should have returned after its shutdown envelope", got)
			}
			for _, pid := range kids {
				waitFor(t, 5*time.Second, func() bool { return !alive(pid) }, stderr)
			}
		})
	}
}

// sessionUp reports whether log has a "session up" line of the tooling
// called name (a reconnect under load may add more).
func sessionUp(log, name string) bool {
	for line := range strings.Lines(log) {
		if strings.Contains(line, "\tsession up\t") && strings.Contains(line, fmt.Sprintf(`"tooling": %q`, name)) {
			return true
		}
	}
	return false
}

// debugExample is configs/example.toml at log level debug (the contract
// logs "subscribed" at debug), written to a temporary directory with its
// servers' cwd the repository's root.
func debugExample(t *testing.T) string {
	t.Helper()
	root := testenv.Root(t)
	b, err := os.ReadFile(filepath.Join(root, "configs", "example.toml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.ReplaceAll(string(b), `log_level = "info"`, `log_level = "debug"`)
	cfg = strings.ReplaceAll(cfg, `cwd = ".."`, fmt.Sprintf("cwd = %q", root))
	return writeConfigFile(t, t.TempDir(), "toolhostd.toml", cfg)
}

// children lists the pids whose parent is pid.
func children(pid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so cut at the last ')'.
		s := string(stat)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	s := string(stat)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z"
}

func waitFor(t *testing.T, d time.Duration, cond func() bool, log *syncBuffer) {
	t.Helper()
	if err := testenv.Poll(d, cond); err != nil {
		t.Fatalf("%v waiting for a condition\n%s", err, log.String())
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// count counts sub in the whole lines written from offset from on, and
// returns where the next count is to start: a poll reads only what is new.
func (s *syncBuffer) count(sub string, from int) (n, next int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.b.Bytes()[from:]
	end := bytes.LastIndexByte(b, '\n') + 1
	return bytes.Count(b[:end], []byte(sub)), from + end
}

// TestRunStartsOnlyGrantedToolings: with --grant, the other toolings'
// servers are never started.
func TestRunStartsOnlyGrantedToolings(t *testing.T) {
	dir := t.TempDir()
	marker := func(name string) string { return filepath.Join(dir, name+".started") }
	// Each "server" records its start and then stays silent.
	tooling := func(name string) string {
		return fmt.Sprintf("[tooling.%s]\ncommand = \"sh\"\nargs = [\"-c\", \"echo started >> %s; exec sleep 30\"]\nconnect_timeout = \"30s\"\n", name, marker(name))
	}
	cfg := writeConfigFile(t, dir, "toolhostd.toml", "version = 1\n"+tooling("granted")+tooling("other"))
	// The agent spins until its run timeout: time enough for every tooling
	// that is started to start.
	_, _, errs := runCLI(t, "--config", cfg, "run", testdata("spin.wat"), "--grant", "granted", "--timeout", "2s")
	if _, err := os.Stat(marker("granted")); err != nil {
		t.Fatalf("the granted tooling did not start: %v\n%s", err, errs)
	}
	if _, err := os.Stat(marker("other")); err == nil {
		t.Errorf("the tooling not granted was started\n%s", errs)
	}
}

// serveProc is `toolhostd serve` run as a subprocess of the test binary.
type serveProc struct {
	cmd    *exec.Cmd
	out    *syncBuffer // its stdout and stderr
	exited chan struct{}
	err    error // cmd.Wait's, once exited is closed
}

// startServe starts `toolhostd --config cfgPath serve` with env added to
// the test's environment; the test's cleanup kills it if it still runs.
func startServe(t testing.TB, cfgPath string, env ...string) *serveProc {
	t.Helper()
	return startToolhostd(t, env, "--config", cfgPath, "serve")
}

// startToolhostd starts `toolhostd ARGS...` with env added to the test's
// environment; the test's cleanup kills it if it still runs.
func startToolhostd(t testing.TB, env []string, args ...string) *serveProc {
	t.Helper()
	return startToolhostdIn(t, env, nil, args...)
}

// startToolhostdIn is startToolhostd with stdin as its standard input
// (nil: none).
func startToolhostdIn(t testing.TB, env []string, stdin io.Reader, args ...string) *serveProc {
	t.Helper()
	p := &serveProc{cmd: exec.Command(os.Args[0], args...), out: &syncBuffer{}, exited: make(chan struct{})}
	p.cmd.Env = append(append(os.Environ(), envAsMain+"=1"), env...)
	p.cmd.Stdin = stdin
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
	})
	return p
}

// wait returns serve's exit error, failing t if it has not exited within d.
func (p *serveProc) wait(t *testing.T, d time.Duration) error {
	t.Helper()
	select {
	case <-p.exited:
		return p.err
	case <-time.After(d):
		t.Fatalf("toolhostd serve did not exit within %v\n%s", d, p.out.String())
		return nil
	}
}
