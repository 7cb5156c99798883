package main

import (
	"compress/gzip"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/testenv"
)

// chatWait bounds each wait of the chat tests; a first start compiles the
// agent (seconds on a loaded machine).
const chatWait = 2 * time.Minute

// chatProc is `toolhostd run --chat` in a subprocess: its standard input is
// a pipe the test writes lines to.
type chatProc struct {
	cmd       *exec.Cmd
	stdin     io.WriteCloser
	out, errs *syncBuffer
	done      chan struct{} // closed once it exited, with err
	err       error
}

func startChat(t *testing.T, args ...string) *chatProc {
	t.Helper()
	p := &chatProc{cmd: exec.Command(os.Args[0], append([]string{"run"}, args...)...),
		out: &syncBuffer{}, errs: &syncBuffer{}, done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), envAsMain+"=1", "TOOLHOSTD_CONFIG=")
	p.cmd.Dir = t.TempDir() // no ./toolhostd.toml: no config
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.errs
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// say writes line and a newline to the chat's standard input.
func (p *chatProc) say(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
		t.Fatalf("writing %q: %v\n%s", line, err, p.errs.String())
	}
}

// waitOut waits until standard output is want.
func (p *chatProc) waitOut(t *testing.T, want string) {
	t.Helper()
	if err := testenv.Poll(chatWait, func() bool { return p.out.String() == want }); err != nil {
		t.Fatalf("%v waiting for stdout %q; it is %q\nstderr:\n%s", err, want, p.out.String(), p.errs.String())
	}
}

// exit closes standard input when eof, and returns the exit code.
func (p *chatProc) exit(t *testing.T, eof bool) int {
	t.Helper()
	if eof {
		p.stdin.Close()
	}
	testenv.Recv(t, p.done, chatWait, "run --chat to exit")
	var ee *exec.ExitError
	switch err := p.err; {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	default:
		t.Fatalf("run --chat: %v\n%s", err, p.errs.String())
		return -1
	}
}

// TestRunChat talks to real agents line by line: each reply is on stdout
// before the next line is written (so it streamed, not at exit), in order;
// errors go to stderr and the chat goes on; end of input ends it cleanly.
func TestRunChat(t *testing.T) {
	echo := testenv.Agent(t, "agents", "echo")
	hello := testenv.Agent(t, "agents", "hello")
	probe := testenv.Agent(t, "test-agents", "probe")
	type exchange struct{ say, stdout string } // stdout: all of it after the reply
	cases := []struct {
		name      string
		args      []string
		talk      []exchange
		stderrHas []string
	}{
		{name: "echo", args: []string{echo, "--chat"}, talk: []exchange{
			{"hello there", "echo: hello there\n"},
			{"  second   line ", "echo: hello there\necho:   second   line \n"},
		}, stderrHas: []string{`"output": "echoed 2 messages"`}},
		{name: "echo session", args: []string{echo, "--chat", "--session", "s-42"}, talk: []exchange{
			{"hi", "echo: hi (session s-42)\n"},
			{"", "echo: hi (session s-42)\n"}, // an empty line is no message
			{"again", "echo: hi (session s-42)\necho: again (session s-42)\n"},
		}, stderrHas: []string{`"output": "echoed 2 messages"`}},
		{name: "echo input", args: []string{echo, "--chat", "--input", "> "}, talk: []exchange{
			{"a b c", "> a b c\n"},
		}},
		{name: "hello", args: []string{hello, "--chat", "--input", `{"toolings": [], "call": null, "every": 600}`}, talk: []exchange{
			{"hi", "hello, api\n"},
		}, stderrHas: []string{`"output": "stopped after 1 rounds"`}},
		{name: "probe serves an error then deltas",
			args: []string{probe, "--chat", "--input", `{"steps": [{"op": "serve", "mode": "error", "count": 1}, {"op": "serve", "mode": "deltas"}]}`},
			talk: []exchange{
				{"not this one", ""},
				{"one two three", "one two three\n"},
			}, stderrHas: []string{"error: reply-error: not this one\n"}},
		{name: "probe sends to another agent and to itself",
			args: []string{probe, "--chat", "--input", `{"steps": [{"op": "send", "to": "other", "content": "x"}, {"op": "send", "to": "probe", "content": "y"}, {"op": "serve", "mode": "upper"}]}`},
			talk: []exchange{{"shout", "SHOUT\n"}},
			stderrHas: []string{`\"code\":\"not-found\",\"message\":\"no agent \\\"other\\\": run --chat runs only agent \\\"probe\\\"\"`,
				`\"code\":\"denied\"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := startChat(t, tc.args...)
			for _, x := range tc.talk {
				p.say(t, x.say)
				p.waitOut(t, x.stdout)
			}
			if code := p.exit(t, true); code != 0 {
				t.Fatalf("exit %d, want 0\nstderr:\n%s", code, p.errs.String())
			}
			errs := p.errs.String()
			for _, s := range tc.stderrHas {
				if !strings.Contains(errs, s) {
					t.Errorf("stderr lacks %s:\n%s", s, errs)
				}
			}
		})
	}
}

// TestRunChatStreams: a delta is on stdout while its reply is still open,
// and SIGTERM then gives the agent its shutdown and grace: the probe ends
// the reply on its shutdown envelope and returns (exit 0).
func TestRunChatStreams(t *testing.T) {
	probe := testenv.Agent(t, "test-agents", "probe")
	p := startChat(t, probe, "--chat", "--grace", "30s", "--input", `{"steps": [
		{"op": "recv-message", "as": "m"}, {"op": "reply-delta", "id": "m", "text": "partial "},
		{"op": "recv"}, {"op": "reply", "id": "m", "content": "rest"}]}`)
	p.say(t, "question")
	p.waitOut(t, "partial ") // the reply is open until the probe's recv gets the shutdown
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.exit(t, false); code != 0 {
		t.Fatalf("exit %d, want 0\nstderr:\n%s", code, p.errs.String())
	}
	if got := p.out.String(); got != "partial rest\n" {
		t.Errorf("stdout = %q, want %q", got, "partial rest\n")
	}
	if errs := p.errs.String(); !strings.Contains(errs, `"signal": "terminated"`) || !strings.Contains(errs, `\"tag\":\"shutdown\"`) {
		t.Errorf("stderr lacks the signal and the shutdown the probe received:\n%s", errs)
	}
}

// TestRunChatRefusesOldContracts: a 0.2.0 component cannot receive
// messages: --chat fails at once (exit 2) and says why; usage errors exit 64.
func TestRunChatRefusesOldContracts(t *testing.T) {
	old := gunzip(t, filepath.Join(testenv.Root(t), "internal", "host", "testdata", "v0.2.0", "probe-test-agents.wasm.gz"))
	t.Setenv("TOOLHOSTD_CONFIG", "")
	cases := []struct {
		name      string
		args      []string
		code      int
		stderrHas string
	}{
		{name: "0.2.0", args: []string{"run", old, "--chat"}, code: 2,
			stderrHas: old + " cannot receive messages: its component was built against toolhost:agent 0.1.0 or 0.2.0"},
		{name: "session without chat", args: []string{"run", old, "--session", "s"}, code: 64, stderrHas: "--session is for --chat"},
		{name: "input from stdin", args: []string{"run", old, "--chat", "--input-file", "-"}, code: 64, stderrHas: "--input-file - excludes it"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCLI(t, tc.args...)
			if code != tc.code || out != "" || !strings.Contains(errs, tc.stderrHas) {
				t.Fatalf("exit %d (want %d), stdout %q (want none), stderr lacks %q:\n%s", code, tc.code, out, tc.stderrHas, errs)
			}
		})
	}
}

// gunzip writes the gzip file at path, uncompressed, into a temporary
// directory and returns its path there.
func gunzip(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), strings.TrimSuffix(filepath.Base(path), ".gz"))
	if err := os.WriteFile(out, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}
