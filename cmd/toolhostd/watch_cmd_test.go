package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/gateway"
	"github.com/toolhostd/toolhostd/internal/tooling"
	"github.com/toolhostd/toolhostd/internal/tooling/mcpclient"

	"github.com/toolhostd/toolhostd/internal/testenv"
)

func TestWatchUsage(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfigFile(t, dir, "toolhostd.toml", "version = 1\n[tooling.a]\ncommand = \"x\"\n")
	for _, args := range [][]string{
		{"watch"},
		{"watch", "a"},
		{"watch", "a", "--list", "extra"},
		{"watch", "a", "b", "c"},
		{"watch", "nope", "--list"},
	} {
		code, _, errs := runCLI(t, append([]string{"--config", cfg}, args...)...)
		if code != exitUsage {
			t.Errorf("%v: exit %d, want %d (%s)", args, code, exitUsage, errs)
		}
	}
}

// lineWriter collects written JSON lines and signals each.
type lineWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	lines chan string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	for {
		line, err := w.buf.ReadString('\n')
		if err != nil {
			w.buf.WriteString(line)
			return len(p), nil
		}
		w.lines <- strings.TrimSuffix(line, "\n")
	}
}

// TestWatch runs watch against a go-sdk server in-process: each update and
// list change is one JSON line; cancelling ends it with no error.
func TestWatch(t *testing.T) {
	subscribed := make(chan string, 4)
	srv := mcp.NewServer(&mcp.Implementation{Name: "watch-test", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
			subscribed <- req.Params.URI
			return nil
		},
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	var mu sync.Mutex
	text := "one"
	srv.AddResource(&mcp.Resource{URI: "test://doc", Name: "doc", MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			mu.Lock()
			defer mu.Unlock()
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: text}}}, nil
		})
	m, err := mcpclient.New(&config.Tooling{Name: "mem", Kind: "mcp", Transport: "stdio", ToolingProcess: config.ToolingProcess{Command: "unused"}}, zap.NewNop(),
		mcpclient.Options{Dialer: testenv.InMemoryDialer(srv)})
	if err != nil {
		t.Fatal(err)
	}
	// The two watches run one after the other: the tooling is served by one
	// hub at a time.
	t.Run("uri", func(t *testing.T) {
		w := &lineWriter{lines: make(chan string, 16)}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- watch(ctx, w, []gateway.Entry{{Tooling: m}}, zap.NewNop(), "mem", "test://doc") }()
		defer func() { cancel(); <-done }()
		select {
		case <-subscribed:
		case err := <-done:
			t.Fatalf("watch returned before subscribing: %v", err)
		case <-time.After(10 * time.Second):
			t.Fatal("no subscription within 10s")
		}
		mu.Lock()
		text = "two"
		mu.Unlock()
		// The server records the subscription after its handler ran: notify
		// until the first line shows the update got through.
		var ev watchEvent
		deadline := time.After(10 * time.Second)
		for ev.Event == "" {
			if err := srv.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: "test://doc"}); err != nil {
				t.Fatal(err)
			}
			select {
			case line := <-w.lines:
				if err := json.Unmarshal([]byte(line), &ev); err != nil {
					t.Fatalf("line %q: %v", line, err)
				}
			case <-time.After(100 * time.Millisecond):
			case <-deadline:
				t.Fatal("no resource-updated line within 10s")
			}
		}
		if ev.Event != "resource-updated" || ev.Content == nil || ev.Content.Content != "two" || ev.Content.URI != "test://doc" || len(ev.ID) != 36 {
			t.Fatalf("line %+v", ev)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("watch after cancel: %v", err)
		}
		done <- nil // for the deferred wait
	})
	t.Run("list", func(t *testing.T) {
		w := &lineWriter{lines: make(chan string, 16)}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- watch(ctx, w, []gateway.Entry{{Tooling: m}}, zap.NewNop(), "mem", "") }()
		defer func() { cancel(); <-done }()
		// The subscription is local; add resources until one change is seen
		// after the watch is up.
		deadline := time.After(10 * time.Second)
		var ev watchEvent
		for i := 0; ; i++ {
			srv.AddResource(&mcp.Resource{URI: fmt.Sprintf("test://new/%d", i), Name: "new"},
				func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) { return nil, nil })
			select {
			case line := <-w.lines:
				if err := json.Unmarshal([]byte(line), &ev); err != nil {
					t.Fatal(err)
				}
			case <-time.After(100 * time.Millisecond):
				continue
			case <-deadline:
				t.Fatal("no resource-list-updated line within 10s")
			}
			break
		}
		if ev.Event != "resource-list-updated" || len(ev.Resources) < 2 || ev.Resources[0].URI == "" {
			t.Fatalf("line %+v", ev)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("watch after cancel: %v", err)
		}
		done <- nil // for the deferred wait
	})
}

// TestWatchInterrupt runs `toolhostd watch everything --list` against the
// npm server-everything in a subprocess and stops it with SIGINT: exit 0.
func TestWatchInterrupt(t *testing.T) {
	entry := testenv.NPMServer(t, "server-everything")
	cfg := writeConfigFile(t, t.TempDir(), "toolhostd.toml", fmt.Sprintf(
		"version = 1\n[host]\nlog_level = \"info\"\n[tooling.everything]\ncommand = \"node\"\nargs = [%q, \"stdio\"]\nconnect_timeout = \"30s\"\n", entry))
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "--config", cfg, "watch", "everything", "--list")
	cmd.Env = append(os.Environ(), envAsMain+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	watching := make(chan struct{})
	var logs bytes.Buffer
	go func() {
		sc := bufio.NewScanner(stderr)
		seen := false
		for sc.Scan() {
			logs.WriteString(sc.Text() + "\n")
			if !seen && strings.Contains(sc.Text(), "watching") {
				seen = true
				close(watching)
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	select {
	case <-watching:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("watch did not start within 60s:\n%s", logs.String())
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	waitErr := make(chan error, 1)
	go func() { waitErr <- cmd.Wait() }()
	select {
	case err := <-waitErr:
		if err != nil {
			t.Fatalf("watch after SIGINT: %v\n%s", err, logs.String())
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("watch did not exit within 30s of SIGINT")
	}
}

// TestWatchListUnsupported: watch --list on a server that does not offer
// resources.listChanged fails with unsupported at once instead of waiting
// for changes that are never announced.
func TestWatchListUnsupported(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "no-list-changed", Version: "1"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Resources: &mcp.ResourceCapabilities{ListChanged: false}},
	})
	srv.AddResource(&mcp.Resource{URI: "test://doc", Name: "doc"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) { return nil, nil })
	m, err := mcpclient.New(&config.Tooling{Name: "mem", Kind: "mcp", Transport: "stdio", ToolingProcess: config.ToolingProcess{Command: "unused"}}, zap.NewNop(),
		mcpclient.Options{Dialer: testenv.InMemoryDialer(srv)})
	if err != nil {
		t.Fatal(err)
	}
	w := &lineWriter{lines: make(chan string, 16)}
	done := make(chan error, 1)
	go func() { done <- watch(t.Context(), w, []gateway.Entry{{Tooling: m}}, zap.NewNop(), "mem", "") }()
	select {
	case err := <-done:
		if tooling.CodeOf(err) != tooling.CodeUnsupported || !strings.Contains(err.Error(), "listChanged") {
			t.Fatalf("watch --list = %v, want unsupported naming resources.listChanged", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("watch --list still waiting after 20s")
	}
}
