package mcpclient_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/tooling"
	"github.com/toolhostd/toolhostd/internal/tooling/mcpclient"

	"github.com/toolhostd/toolhostd/internal/testenv"
)

func everythingStdio(t *testing.T) *config.Tooling {
	cfg := testConfig("everything")
	cfg.Command = "node"
	cfg.Args = []string{testenv.NPMServer(t, "server-everything"), "stdio"}
	cfg.ConnectTimeout = dur(30 * time.Second)
	return cfg
}

// everythingHTTP starts server-everything's streamable HTTP transport on a
// free port and returns its config.
func everythingHTTP(t *testing.T) *config.Tooling {
	entry := testenv.NPMServer(t, "server-everything")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command("node", entry, "streamableHttp")
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	listening := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		once := false
		for sc.Scan() {
			if !once && strings.Contains(sc.Text(), "listening on port") {
				close(listening)
				once = true
			}
		}
	}()
	testenv.Recv(t, listening, 30*time.Second, "server-everything to listen")
	cfg := testConfig("everything-http")
	cfg.Transport = "http"
	cfg.Command = ""
	cfg.URL = fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
	cfg.Headers = map[string]string{"X-Test": "${env:HOME}"}
	cfg.ConnectTimeout = dur(30 * time.Second)
	return cfg
}

func toolNames(t *testing.T, m *mcpclient.Client) map[string]tooling.Tool {
	t.Helper()
	tools, err := m.ListTools(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]tooling.Tool{}
	for _, tl := range tools {
		out[tl.Name] = tl
	}
	return out
}

func firstText(t *testing.T, value string) string {
	t.Helper()
	var v struct {
		Content []struct{ Type, Text string }
	}
	if err := json.Unmarshal([]byte(value), &v); err != nil || len(v.Content) == 0 {
		t.Fatalf("tool value %s: %v", value, err)
	}
	return v.Content[0].Text
}

// exerciseEverything runs the checks shared by both transports.
func exerciseEverything(t *testing.T, m *mcpclient.Client) {
	ctx := t.Context()
	rec := newRecorder()
	testenv.ServeTooling(t, m, rec)
	waitConnected(t, m)

	tools := toolNames(t, m)
	for _, want := range []string{"echo", "trigger-long-running-operation", "toggle-subscriber-updates", "gzip-file-as-resource"} {
		if _, ok := tools[want]; !ok {
			t.Fatalf("server-everything lacks tool %q", want)
		}
	}
	if !strings.Contains(tools["echo"].InputSchema, `"message"`) {
		t.Errorf("echo input schema %s", tools["echo"].InputSchema)
	}

	t.Run("echo", func(t *testing.T) {
		res, err := m.CallTool(ctx, "echo", json.RawMessage(`{"message":"hello from go"}`))
		if err != nil {
			t.Fatal(err)
		}
		if got := firstText(t, res.Value); got != "Echo: hello from go" {
			t.Errorf("echo = %q", got)
		}
	})

	t.Run("long-running cancelled", func(t *testing.T) {
		c, cancel := context.WithCancel(ctx)
		errc := make(chan error, 1)
		go func() {
			_, err := m.CallTool(c, "trigger-long-running-operation", json.RawMessage(`{"duration":60,"steps":60}`))
			errc <- err
		}()
		testenv.Eventually(t, 10*time.Second, "the call in flight", func() bool { return m.Status().InFlight >= 1 })
		// server-everything gives no sign that it runs the operation: the
		// pause only makes it likely that the cancel finds it running.
		time.Sleep(500 * time.Millisecond)
		cancel()
		wantCode(t, testenv.Recv(t, errc, 10*time.Second, "the cancelled call to return"), tooling.CodeCancelled)
		res, err := m.CallTool(ctx, "echo", json.RawMessage(`{"message":"after"}`))
		if err != nil || firstText(t, res.Value) != "Echo: after" {
			t.Fatalf("session unusable after a cancel: %v", err)
		}
	})

	t.Run("blob with text mime reads as text", func(t *testing.T) {
		rc, err := m.ReadResource(ctx, "demo://resource/dynamic/blob/7")
		if err != nil {
			t.Fatal(err)
		}
		if rc.MIMEType == nil || *rc.MIMEType != "text/plain" || !strings.HasPrefix(rc.Content, "Resource 7: This is a base64 blob") {
			t.Errorf("read = %+v", rc)
		}
	})

	t.Run("subscribe with updates", func(t *testing.T) {
		if !m.SupportsSubscribe() {
			t.Fatal("server-everything offers resources.subscribe")
		}
		res, err := m.ListResources(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(res) == 0 {
			t.Fatal("no resources")
		}
		uri := res[0].URI
		if err := m.Subscribe(ctx, uri); err != nil {
			t.Fatal(err)
		}
		// Updates start when toggle-subscriber-updates is called: one at
		// once, then every 5s.
		if _, err := m.CallTool(ctx, "toggle-subscriber-updates", nil); err != nil {
			t.Fatal(err)
		}
		defer func() { _, _ = m.CallTool(context.Background(), "toggle-subscriber-updates", nil) }()
		if got := testenv.Recv(t, rec.updated, 15*time.Second, "resources/updated"); got != uri {
			t.Errorf("updated %q, want %q", got, uri)
		}
		if got := testenv.Recv(t, rec.updated, 15*time.Second, "a second resources/updated"); got != uri {
			t.Errorf("updated %q, want %q", got, uri)
		}
		if err := m.Unsubscribe(ctx, uri); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("list_changed after gzip-file-as-resource", func(t *testing.T) {
		for len(rec.listChanged) > 0 {
			<-rec.listChanged
		}
		data := "data:text/plain;base64," + base64.StdEncoding.EncodeToString([]byte("hello gzip"))
		args, _ := json.Marshal(map[string]string{"name": "hello.txt.gz", "data": data, "outputType": "resourceLink"})
		if _, err := m.CallTool(ctx, "gzip-file-as-resource", args); err != nil {
			t.Fatal(err)
		}
		testenv.Recv(t, rec.listChanged, 10*time.Second, "resources/list_changed")
		res, err := m.ListResources(ctx)
		if err != nil {
			t.Fatal(err)
		}
		const uri = "demo://resource/session/hello.txt.gz"
		found := false
		for _, r := range res {
			found = found || r.URI == uri
		}
		if !found {
			t.Fatalf("%s not listed after list_changed", uri)
		}
		rc, err := m.ReadResource(ctx, uri)
		if err != nil {
			t.Fatal(err)
		}
		if rc.MIMEType == nil || *rc.MIMEType != "application/gzip" {
			t.Fatalf("mime %v", rc.MIMEType)
		}
		raw, err := base64.StdEncoding.DecodeString(rc.Content)
		if err != nil {
			t.Fatalf("content is not base64: %v", err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		plain, err := io.ReadAll(zr)
		if err != nil || string(plain) != "hello gzip" {
			t.Fatalf("gunzip = %q, %v", plain, err)
		}
	})
}

func TestEverythingStdio(t *testing.T) {
	exerciseEverything(t, newMCP(t, everythingStdio(t), nil, mcpclient.Options{}))
}

func TestEverythingStreamableHTTP(t *testing.T) {
	exerciseEverything(t, newMCP(t, everythingHTTP(t), nil, mcpclient.Options{}))
}

func TestFilesystemServer(t *testing.T) {
	entry := testenv.NPMServer(t, "server-filesystem")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "note.txt"), []byte("a note\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig("fs")
	cfg.Command = "node"
	cfg.Args = []string{entry, dir}
	cfg.ConnectTimeout = dur(30 * time.Second)
	m := newMCP(t, cfg, nil, mcpclient.Options{})
	testenv.ServeTooling(t, m, nil)
	waitConnected(t, m)
	tools := toolNames(t, m)
	for _, want := range []string{"read_text_file", "list_directory", "write_file"} {
		if _, ok := tools[want]; !ok {
			t.Errorf("server-filesystem lacks tool %q", want)
		}
	}
	args, _ := json.Marshal(map[string]string{"path": filepath.Join(dir, "note.txt")})
	res, err := m.CallTool(t.Context(), "read_text_file", args)
	if err != nil {
		t.Fatal(err)
	}
	if got := firstText(t, res.Value); got != "a note\n" {
		t.Errorf("read_text_file = %q", got)
	}
	// Outside the allowed directory: a tool error, which is a success here.
	args, _ = json.Marshal(map[string]string{"path": "/etc/hostname"})
	res, err = m.CallTool(t.Context(), "read_text_file", args)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Value, `"isError":true`) {
		t.Errorf("reading outside the root: %s", res.Value)
	}
}
