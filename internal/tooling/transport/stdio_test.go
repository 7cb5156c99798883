package transport

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"
)

// command is a Command running this test binary as a server in mode.
func command(t *testing.T, mode string, log *zap.Logger) *Command {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), envServer+"="+mode)
	stderr := &LineLogger{Log: log.Named("stderr")}
	cmd.Stderr = stderr
	cmd.SysProcAttr = ServerProcAttr()
	return &Command{
		Cmd: cmd, Terminate: 100 * time.Millisecond, MaxMessage: 1 << 20,
		Tooling: "t", Log: log.Named("stdout"), Track: NewTracker(true), Stderr: stderr,
	}
}

func connect(t *testing.T, c *Command) *stdioConn {
	t.Helper()
	conn, err := c.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn.(*stdioConn)
}

func read(t *testing.T, c *stdioConn) (jsonrpc.Message, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return c.Read(ctx)
}

func TestCommandRoundTrip(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	c := connect(t, command(t, "echo", zap.New(core)))
	id, _ := jsonrpc.MakeID(int64(7))
	for _, msg := range []jsonrpc.Message{
		&jsonrpc.Request{ID: id, Method: "tools/list"},
		&jsonrpc.Request{Method: MethodCancelled},
	} {
		if err := c.Write(context.Background(), msg); err != nil {
			t.Fatalf("Write: %v", err)
		}
		got, err := read(t, c)
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		want, _ := jsonrpc.EncodeMessage(msg)
		if b, _ := jsonrpc.EncodeMessage(got); string(b) != string(want) {
			t.Errorf("read %s, want %s", b, want)
		}
	}
	if n := logs.FilterMessage("skipping a line of the server's stdout that is not JSON-RPC").Len(); n != 2 {
		t.Errorf("%d warnings of a skipped line, want 2", n)
	}
	// The cancellation notice written counts against the notices owed.
	if _, pending := c.t.Track.Counts(); pending != -1 {
		t.Errorf("pending notices %d after writing one unowed, want -1", pending)
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, err := read(t, c); !errors.Is(err, io.EOF) {
		t.Errorf("Read after Close: %v, want EOF", err)
	}
}

func TestCommandExitReason(t *testing.T) {
	c := connect(t, command(t, "exit", zaptest.NewLogger(t)))
	_, err := read(t, c)
	if !errors.Is(err, io.EOF) {
		t.Fatalf("Read: %v, want one wrapping EOF", err)
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Errorf("Read: %v, want one wrapping exit status 3", err)
	}
	if !strings.Contains(err.Error(), `"fatal: boom"`) {
		t.Errorf("Read: %v, want the last stderr line", err)
	}
	if err := c.Write(context.Background(), &jsonrpc.Request{Method: "x"}); err == nil {
		t.Error("Write to an exited server succeeded")
	}
}

func TestCommandCloseKillsStubbornServer(t *testing.T) {
	c := connect(t, command(t, "stubborn", zaptest.NewLogger(t)))
	if _, err := read(t, c); err != nil { // it is up, its SIGTERM ignored
		t.Fatal(err)
	}
	start := time.Now()
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case <-c.exited:
	default:
		t.Fatal("Close returned before the process was waited for")
	}
	if ws := c.t.Cmd.ProcessState.Sys().(interface{ Signaled() bool }); !ws.Signaled() {
		t.Errorf("the server exited by itself (%v), want killed", c.t.Cmd.ProcessState)
	}
	// stdin EOF and SIGTERM each get Terminate, then SIGKILL.
	if d := time.Since(start); d < 2*c.t.Terminate {
		t.Errorf("Close took %v, want at least two Terminate steps", d)
	}
}

func TestCommandStartFails(t *testing.T) {
	cmd := &Command{Cmd: exec.Command("/nonexistent/server"), Log: zap.NewNop()}
	if _, err := cmd.Connect(context.Background()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Connect: %v, want ErrNotExist", err)
	}
}

// pipeConn is a stdioConn reading stream through a 16-byte bufio.Reader
// (the smallest: lines span many ReadSlice fragments); its writes go to w.
func pipeConn(max int64, log *zap.Logger, w io.WriteCloser) *stdioConn {
	return &stdioConn{
		t:     &Command{MaxMessage: max, Tooling: "t", Log: log},
		stdin: w,
		warn:  &rateLimitedWarn{log: log, every: 10 * time.Second, burst: 5},
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// messages reads every message of stream as nextMessages frames them.
func messages(c *stdioConn, stream string) ([]string, error) {
	r := bufio.NewReaderSize(strings.NewReader(stream), 16)
	var out []string
	for {
		msgs, err := c.nextMessages(r)
		if err != nil {
			return out, err
		}
		for _, m := range msgs {
			b, err := jsonrpc.EncodeMessage(m)
			if err != nil {
				return out, err
			}
			out = append(out, string(b))
		}
	}
}

func TestNextMessages(t *testing.T) {
	const max = 64
	big := strings.Repeat("x", 100)
	tooLarge := func(id string, size int) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32090,"message":"the server sent a message of ` +
			strconv.Itoa(size) + ` bytes, over this tooling's max_message_bytes (64): raise max_message_bytes in [tooling.t]"}}`
	}
	bigResp := `{"jsonrpc":"2.0","id":3,"result":{"text":"` + big + `"}}`
	tests := []struct {
		name   string
		stream string
		want   []string
	}{
		{"one per line", `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n" + `{"jsonrpc":"2.0","method":"m"}` + "\n",
			[]string{`{"jsonrpc":"2.0","id":1,"result":{}}`, `{"jsonrpc":"2.0","method":"m"}`}},
		{"blank lines, CRLF and spaces", "\n\r\n  " + `{"jsonrpc":"2.0","method":"m"}` + " \r\n",
			[]string{`{"jsonrpc":"2.0","method":"m"}`}},
		{"a batch", `[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","id":1}]` + "\n",
			[]string{`{"jsonrpc":"2.0","method":"a"}`, `{"jsonrpc":"2.0","id":1}`}},
		{"lines that are not JSON-RPC are skipped", "hello\n[]\n[1]\n{\"jsonrpc\":\"2.0\"\n" + `{"jsonrpc":"2.0","method":"m"}` + "\n",
			[]string{`{"jsonrpc":"2.0","method":"m"}`}},
		{"a partial last line is dropped", `{"jsonrpc":"2.0","method":"m"}` + "\n" + `{"jsonrpc":"2.0","method":"n"}`,
			[]string{`{"jsonrpc":"2.0","method":"m"}`}},
		{"a response over the limit fails its request", bigResp + "\n" + `{"jsonrpc":"2.0","method":"m"}` + "\n",
			[]string{tooLarge("3", len(bigResp)), `{"jsonrpc":"2.0","method":"m"}`}},
		{"a line one byte over the limit", bigResp[:max+1] + "\n",
			[]string{tooLarge("3", max+1)}},
		{"a notification over the limit is dropped", `{"jsonrpc":"2.0","method":"m","params":"` + big + `"}` + "\n",
			nil},
		{"a string id over the limit", `{"jsonrpc":"2.0","result":"` + big + `","id":"a\"b"}` + "\n",
			[]string{tooLarge(`"a\"b"`, len(`{"jsonrpc":"2.0","result":"`+big+`","id":"a\"b"}`))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := messages(pipeConn(max, zaptest.NewLogger(t), nopWriteCloser{io.Discard}), tt.stream)
			if !errors.Is(err, io.EOF) {
				t.Fatalf("err %v, want EOF", err)
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// A request from the server over the limit is answered with an error and
// reading goes on.
func TestNextMessagesAnswersOversizedRequest(t *testing.T) {
	pr, pw := io.Pipe()
	c := pipeConn(32, zaptest.NewLogger(t), pw)
	stream := `{"jsonrpc":"2.0","id":9,"method":"sampling/createMessage","params":{"x":"` + strings.Repeat("y", 32) + `"}}` + "\n" +
		`{"jsonrpc":"2.0","method":"m"}` + "\n"
	got, err := messages(c, stream)
	if !errors.Is(err, io.EOF) || len(got) != 1 || got[0] != `{"jsonrpc":"2.0","method":"m"}` {
		t.Fatalf("messages: %q %v", got, err)
	}
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"jsonrpc":"2.0","id":9,"error":{"code":-32600,"message":"request too large for the client"}}` + "\n"
	if line != want {
		t.Errorf("answer %s, want %s", line, want)
	}
}
