package mcpclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/thejerf/suture/v4"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/testenv"
	"github.com/toolhostd/toolhostd/internal/tooling"
	"github.com/toolhostd/toolhostd/internal/tooling/mcpclient"
)

// connected returns an MCP tooling served against ts in memory.
func connected(t *testing.T, ts *testenv.MCPServer) *mcpclient.Client {
	t.Helper()
	return observed(t, ts, nil)
}

// observed is connected, the notifications going to o.
func observed(t *testing.T, ts *testenv.MCPServer, o tooling.Observer) *mcpclient.Client {
	t.Helper()
	m := newMCP(t, testConfig("mem"), nil, mcpclient.Options{Dialer: ts.Dialer()})
	testenv.ServeTooling(t, m, o)
	waitConnected(t, m)
	return m
}

func TestListAndCallFollowPagination(t *testing.T) {
	ts := newTestServer(2)
	m := connected(t, ts)
	ctx := t.Context()

	tools, err := m.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]tooling.Tool{}
	for _, tl := range tools {
		names[tl.Name] = tl
	}
	for _, want := range []string{"echo", "fail", "wire-error", "invalid-params", "block", "blocked", "pid", "touch", "garbage", "big"} {
		if _, ok := names[want]; !ok {
			t.Errorf("tool %q missing from %d tools (page size 2)", want, len(tools))
		}
	}
	if len(tools) != 10 {
		t.Errorf("got %d tools, want 10", len(tools))
	}
	echo := names["echo"]
	if echo.Description == nil || !strings.HasPrefix(*echo.Description, "Echoes its text.") {
		t.Errorf("echo description = %v", echo.Description)
	}
	var schema map[string]any
	if err := json.Unmarshal([]byte(echo.InputSchema), &schema); err != nil || schema["type"] != "object" {
		t.Errorf("echo input schema %s: %v", echo.InputSchema, err)
	}
	if names["wire-error"].Description != nil {
		t.Errorf("wire-error has no description, got %q", *names["wire-error"].Description)
	}

	res, err := m.ListResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 12 {
		t.Errorf("got %d resources, want 12", len(res))
	}
	var sawText bool
	for _, r := range res {
		if r.URI == "test://text/3" {
			sawText = true
			if r.Name != "text-3" || r.MIMEType == nil || *r.MIMEType != "text/plain" || r.Description == nil || *r.Description != "text" {
				t.Errorf("resource %+v", r)
			}
		}
	}
	if !sawText {
		t.Error("test://text/3 missing")
	}

	out, err := m.CallTool(ctx, "echo", json.RawMessage(`{"text":"hi there"}`))
	if err != nil {
		t.Fatal(err)
	}
	if out.Name != "echo" || out.Arguments != `{"text":"hi there"}` {
		t.Errorf("result name/arguments = %q %q", out.Name, out.Arguments)
	}
	var v struct {
		Content []struct{ Type, Text string }
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal([]byte(out.Value), &v); err != nil {
		t.Fatalf("value %s: %v", out.Value, err)
	}
	if len(v.Content) != 1 || v.Content[0].Type != "text" || v.Content[0].Text != "hi there" || v.IsError {
		t.Errorf("value = %s", out.Value)
	}

	// isError is a success at this level.
	out, err = m.CallTool(ctx, "fail", nil)
	if err != nil {
		t.Fatalf("isError result must not be an error: %v", err)
	}
	if out.Arguments != "{}" || !strings.Contains(out.Value, `"isError":true`) || !strings.Contains(out.Value, `"text":"failed: "`) {
		t.Errorf("fail result = %+v", out)
	}

	st := m.Status()
	if !st.Connected || st.ServerName != "tooling-test-server" || st.ServerVersion != "1.2.3" || st.InFlight != 0 {
		t.Errorf("status = %+v", st)
	}
}

func TestToolListCachedAndRefreshedOnListChanged(t *testing.T) {
	ts := newTestServer(3)
	m := connected(t, ts)
	ctx := t.Context()

	first, err := m.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lists := ts.Requests("tools/list")
	if _, err := m.ListTools(ctx); err != nil {
		t.Fatal(err)
	}
	if got := ts.Requests("tools/list"); got != lists {
		t.Errorf("second ListTools hit the server (%d → %d tools/list requests): not cached", lists, got)
	}

	ts.Server.AddTool(&mcp.Tool{Name: "added-later", InputSchema: objectSchema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	testenv.Eventually(t, 10*time.Second, "the tool list to include added-later", func() bool {
		tools, err := m.ListTools(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range tools {
			if tl.Name == "added-later" {
				return len(tools) == len(first)+1
			}
		}
		return false
	})
	if ts.Requests("tools/list") <= lists {
		t.Error("list_changed did not lead to a new tools/list")
	}

	ts.Server.RemoveTools("added-later")
	testenv.Eventually(t, 10*time.Second, "added-later to disappear", func() bool {
		tools, _ := m.ListTools(ctx)
		return len(tools) == len(first)
	})
}

func TestReadResourceEncoding(t *testing.T) {
	ts := newTestServer(0)
	m := connected(t, ts)
	ptr := func(s string) *string { return &s }
	tests := []struct {
		uri  string
		want tooling.ResourceContent
	}{
		{"test://text/1", tooling.ResourceContent{URI: "test://text/1", MIMEType: ptr("text/plain"), Content: "hello test://text/1"}},
		{"test://blob/text", tooling.ResourceContent{URI: "test://blob/text", MIMEType: ptr("text/plain"), Content: "blob as text"}},
		{"test://json", tooling.ResourceContent{URI: "test://json", MIMEType: ptr("application/json"), Content: "eyJhIjoxfQ=="}},
		{"test://png", tooling.ResourceContent{URI: "test://png", MIMEType: ptr("image/png"), Content: "iVBORwD/"}},
		{"test://nomime", tooling.ResourceContent{URI: "test://nomime", Content: "plain"}},
		{"test://multi", tooling.ResourceContent{URI: "test://multi", MIMEType: ptr("text/plain"), Content: "mine"}},
		{"test://multi-none", tooling.ResourceContent{URI: "test://x/first", MIMEType: ptr("text/plain"), Content: "first"}},
	}
	for _, tt := range tests {
		t.Run(tt.uri, func(t *testing.T) {
			got, err := m.ReadResource(t.Context(), tt.uri)
			if err != nil {
				t.Fatal(err)
			}
			if got.URI != tt.want.URI || got.Content != tt.want.Content || !eqPtr(got.MIMEType, tt.want.MIMEType) {
				t.Errorf("got %+v (mime %v), want %+v (mime %v)", got, deref(got.MIMEType), tt.want, deref(tt.want.MIMEType))
			}
		})
	}
}

func eqPtr(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
func deref(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

func TestErrorMapping(t *testing.T) {
	ts := newTestServer(0)
	m := connected(t, ts)
	ctx := t.Context()
	tests := []struct {
		name string
		op   func() error
		want tooling.ErrorCode
	}{
		{"unknown tool", func() error { _, err := m.CallTool(ctx, "no-such-tool", nil); return err }, tooling.CodeNotFound},
		{"invalid params from server", func() error { _, err := m.CallTool(ctx, "invalid-params", nil); return err }, tooling.CodeInvalidArgument},
		{"other wire error", func() error { _, err := m.CallTool(ctx, "wire-error", nil); return err }, tooling.CodeProtocol},
		{"arguments not an object", func() error { _, err := m.CallTool(ctx, "echo", json.RawMessage(`[1]`)); return err }, tooling.CodeInvalidArgument},
		{"arguments not JSON", func() error { _, err := m.CallTool(ctx, "echo", json.RawMessage(`{nope`)); return err }, tooling.CodeInvalidArgument},
		{"unknown resource", func() error { _, err := m.ReadResource(ctx, "test://nope"); return err }, tooling.CodeNotFound},
		{"resource handler error", func() error { _, err := m.ReadResource(ctx, "test://broken"); return err }, tooling.CodeProtocol},
		{"caller deadline", func() error {
			c, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			defer cancel()
			_, err := m.CallTool(c, "block", nil)
			<-ts.SlowStarts()
			return err
		}, tooling.CodeTimeout},
		{"caller cancel", func() error {
			c, cancel := context.WithCancel(ctx)
			go func() { <-ts.SlowStarts(); cancel() }()
			_, err := m.CallTool(c, "block", nil)
			return err
		}, tooling.CodeCancelled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantCode(t, tt.op(), tt.want)
		})
	}
}

func TestCallTimeout(t *testing.T) {
	ts := newTestServer(0)
	cfg := testConfig("slow")
	cfg.CallTimeout = dur(200 * time.Millisecond)
	m := newMCP(t, cfg, nil, mcpclient.Options{Dialer: ts.Dialer()})
	testenv.ServeTooling(t, m, nil)
	waitConnected(t, m)
	_, err := m.CallTool(t.Context(), "block", nil)
	wantCode(t, err, tooling.CodeTimeout)
	// The server hears about it too.
	testenv.Recv(t, ts.SlowCancels(), 10*time.Second, "the server handler to be cancelled")
}

func TestCancelReachesServer(t *testing.T) {
	ts := newTestServer(0)
	m := connected(t, ts)
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := m.CallTool(ctx, "block", nil)
		errc <- err
	}()
	testenv.Recv(t, ts.SlowStarts(), 10*time.Second, "the call to start on the server")
	cancel()
	wantCode(t, testenv.Recv(t, errc, 10*time.Second, "CallTool to return"), tooling.CodeCancelled)
	// The handler's context is cancelled only by notifications/cancelled.
	testenv.Recv(t, ts.SlowCancels(), 10*time.Second, "notifications/cancelled to reach the server")
	if _, err := m.CallTool(t.Context(), "echo", json.RawMessage(`{"text":"still fine"}`)); err != nil {
		t.Fatalf("session unusable after a cancel: %v", err)
	}
}

func TestSubscriptionsAndObserver(t *testing.T) {
	ts := newTestServer(0)
	rec := newRecorder()
	m := observed(t, ts, rec)
	ctx := t.Context()
	if !m.SupportsSubscribe() {
		t.Fatal("SupportsSubscribe = false for a server with a SubscribeHandler")
	}
	if err := m.Subscribe(ctx, "test://text/1"); err != nil {
		t.Fatal(err)
	}
	if err := ts.Server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "test://text/1"}); err != nil {
		t.Fatal(err)
	}
	if got := testenv.Recv(t, rec.updated, 10*time.Second, "resources/updated"); got != "test://text/1" {
		t.Errorf("updated %q", got)
	}
	// Through a tool, as the subprocess tests do.
	if _, err := m.CallTool(ctx, "touch", json.RawMessage(`{"uri":"test://text/1"}`)); err != nil {
		t.Fatal(err)
	}
	testenv.Recv(t, rec.updated, 10*time.Second, "resources/updated via touch")

	ts.Server.AddResource(&mcp.Resource{URI: "test://new", Name: "new"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "test://new", Text: "n"}}}, nil
		})
	testenv.Recv(t, rec.listChanged, 10*time.Second, "resources/list_changed")

	if err := m.Unsubscribe(ctx, "test://text/1"); err != nil {
		t.Fatal(err)
	}
	if err := ts.Server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "test://text/1"}); err != nil {
		t.Fatal(err)
	}
	// A sentinel update on another subscribed uri orders the check.
	if err := m.Subscribe(ctx, "test://text/2"); err != nil {
		t.Fatal(err)
	}
	if err := ts.Server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "test://text/2"}); err != nil {
		t.Fatal(err)
	}
	if got := testenv.Recv(t, rec.updated, 10*time.Second, "the sentinel update"); got != "test://text/2" {
		t.Errorf("got an update for %q after unsubscribing", got)
	}
}

func TestSubscribeUnsupported(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "nosub", Version: "1"}, nil)
	srv.AddResource(&mcp.Resource{URI: "test://a", Name: "a"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "test://a", Text: "a"}}}, nil
		})
	m := newMCP(t, testConfig("nosub"), nil, mcpclient.Options{Dialer: testenv.InMemoryDialer(srv)})
	testenv.ServeTooling(t, m, nil)
	waitConnected(t, m)
	if m.SupportsSubscribe() {
		t.Error("SupportsSubscribe = true for a server without subscriptions")
	}
	wantCode(t, m.Subscribe(t.Context(), "test://a"), tooling.CodeUnsupported)
}

func TestNoSessionFailsUnavailableWithLastError(t *testing.T) {
	cfg := testConfig("down")
	cfg.ConnectTimeout = dur(300 * time.Millisecond)
	m := newMCP(t, cfg, nil, mcpclient.Options{Dialer: func(context.Context) (mcp.Transport, error) {
		return nil, errors.New("server room flooded")
	}})
	testenv.ServeTooling(t, m, nil)
	_, err := m.CallTool(t.Context(), "echo", nil)
	wantCode(t, err, tooling.CodeUnavailable)
	if !strings.Contains(err.Error(), "server room flooded") {
		t.Errorf("error %q lacks the last connection error", err)
	}
	_, err = m.ListTools(t.Context())
	wantCode(t, err, tooling.CodeUnavailable)
	// The calls failed at once; the attempts go on.
	testenv.Eventually(t, 10*time.Second, "a reconnection attempt", func() bool { return m.Status().Restarts > 0 })
	if st := m.Status(); st.Connected || !strings.Contains(st.LastError, "server room flooded") || st.Restarts == 0 {
		t.Errorf("status = %+v", st)
	}
}

func TestServeRejectsUnrunnableConfig(t *testing.T) {
	tests := []struct {
		name string
		kind string
		tr   string
		cmd  string
		url  string
	}{
		{name: "unknown transport", kind: "mcp", tr: "carrier-pigeon", cmd: "x"},
		{name: "unknown kind", kind: "smoke-signals", tr: "stdio", cmd: "x"},
		{name: "stdio without command", kind: "mcp", tr: "stdio"},
		{name: "http without url", kind: "mcp", tr: "http"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig("bad")
			cfg.Kind, cfg.Transport, cfg.Command, cfg.URL = tt.kind, tt.tr, tt.cmd, tt.url
			m := newMCP(t, cfg, nil, mcpclient.Options{})
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			err := m.Serve(ctx, nil)
			if !errors.Is(err, suture.ErrDoNotRestart) {
				t.Fatalf("Serve = %v, want suture.ErrDoNotRestart", err)
			}
			if ctx.Err() != nil {
				t.Fatal("Serve waited for its context")
			}
		})
	}
}

func TestDefaultsForZeroConfig(t *testing.T) {
	// Zero durations mean the defaults, not "no time at all": without a
	// session an operation waits up to the default connect timeout (10s),
	// so a 300ms caller deadline is what ends it.
	m := newMCP(t, &config.Tooling{Name: "zero", Kind: "mcp", Transport: "stdio", ToolingProcess: config.ToolingProcess{Command: "x"}}, nil,
		mcpclient.Options{Dialer: func(context.Context) (mcp.Transport, error) { return nil, errors.New("nope") }})
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	_, err := m.ListTools(ctx)
	wantCode(t, err, tooling.CodeTimeout)
}
