//lint:file-ignore SA1019 the MCP 2025-11-25 features servers ask for (roots, sampling, logging) are deprecated only from protocol 2026-07-28, which toolhostd does not speak (DefaultProtocolVersion)

package mcpclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/testenv"
	"github.com/toolhostd/toolhostd/internal/tooling"
	"github.com/toolhostd/toolhostd/internal/tooling/mcpclient"
)

// capServer is a go-sdk server whose tools ask the client for what servers
// ask clients: roots, elicitation, sampling; and that sends log messages
// and progress. It records the client's capabilities and setLevel calls.
type capServer struct {
	srv *mcp.Server

	mu        sync.Mutex
	caps      []*mcp.ClientCapabilities // at each initialize
	setLevels []mcp.LoggingLevel
}

func newCapServer(t *testing.T) *capServer {
	t.Helper()
	cs := &capServer{}
	cs.srv = mcp.NewServer(&mcp.Implementation{Name: "caps", Version: "1"}, &mcp.ServerOptions{
		InitializedHandler: func(_ context.Context, req *mcp.InitializedRequest) {
			cs.mu.Lock()
			cs.caps = append(cs.caps, req.Session.InitializeParams().Capabilities)
			cs.mu.Unlock()
		},
	})
	cs.srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if p, ok := req.GetParams().(*mcp.SetLoggingLevelParams); ok && method == "logging/setLevel" {
				cs.mu.Lock()
				cs.setLevels = append(cs.setLevels, p.Level)
				cs.mu.Unlock()
			}
			return next(ctx, method, req)
		}
	})
	text := func(v any) *mcp.CallToolResult {
		b, _ := json.Marshal(v)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}
	}
	type none struct{}
	mcp.AddTool(cs.srv, &mcp.Tool{Name: "roots"}, func(ctx context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.ListRoots(ctx, nil)
		if err != nil {
			return nil, nil, err
		}
		return text(res.Roots), nil, nil
	})
	type elicitArgs struct {
		Schema map[string]any `json:"schema"`
	}
	mcp.AddTool(cs.srv, &mcp.Tool{Name: "elicit"}, func(ctx context.Context, req *mcp.CallToolRequest, a elicitArgs) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "your settings, please", RequestedSchema: a.Schema})
		if err != nil {
			return nil, nil, err
		}
		return text(res), nil, nil
	})
	mcp.AddTool(cs.srv, &mcp.Tool{Name: "sample"}, func(ctx context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
		_, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{
			MaxTokens: 10, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}},
		})
		var we *jsonrpc.Error
		if errors.As(err, &we) {
			return text(map[string]any{"code": we.Code, "message": we.Message}), nil, nil
		}
		return text(map[string]any{"unexpected": fmt.Sprint(err)}), nil, nil
	})
	type logArgs struct {
		Level mcp.LoggingLevel `json:"level"`
		Data  any              `json:"data"`
	}
	mcp.AddTool(cs.srv, &mcp.Tool{Name: "log"}, func(ctx context.Context, req *mcp.CallToolRequest, a logArgs) (*mcp.CallToolResult, any, error) {
		err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: a.Level, Data: a.Data, Logger: "caps-logger"})
		return text("logged"), nil, err
	})
	type progressArgs struct {
		Steps int `json:"steps"`
	}
	mcp.AddTool(cs.srv, &mcp.Tool{Name: "progress"}, func(ctx context.Context, req *mcp.CallToolRequest, a progressArgs) (*mcp.CallToolResult, any, error) {
		token := req.Params.GetProgressToken()
		if token == nil {
			return text("no progress token"), nil, nil
		}
		for i := 1; i <= a.Steps; i++ {
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
				ProgressToken: token, Progress: float64(i), Total: float64(a.Steps), Message: fmt.Sprintf("step %d", i),
			}); err != nil {
				return nil, nil, err
			}
		}
		return text(token), nil, nil
	})
	return cs
}

func (cs *capServer) lastCaps(t *testing.T) *mcp.ClientCapabilities {
	t.Helper()
	var c *mcp.ClientCapabilities
	testenv.Eventually(t, 10*time.Second, "the initialized notification", func() bool {
		cs.mu.Lock()
		defer cs.mu.Unlock()
		if len(cs.caps) == 0 {
			return false
		}
		c = cs.caps[len(cs.caps)-1]
		return true
	})
	return c
}

// startCaps serves a tooling with cfg on a fresh capServer, logging to an
// observer at debug as well as to the test.
func startCaps(t *testing.T, cfg *config.Tooling) (*mcpclient.Client, *capServer, *observer.ObservedLogs) {
	t.Helper()
	cs := newCapServer(t)
	core, logs := observer.New(zapcore.DebugLevel)
	m := newMCP(t, cfg, zap.New(core), mcpclient.Options{Dialer: testenv.InMemoryDialer(cs.srv)})
	testenv.ServeTooling(t, m, nil)
	waitConnected(t, m)
	return m, cs, logs
}

// callText calls tool and returns the text of its first content.
func callText(t *testing.T, ctx context.Context, m *mcpclient.Client, tool, args string) string {
	t.Helper()
	res, err := m.CallTool(ctx, tool, json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if strings.Contains(res.Value, `"isError":true`) {
		t.Fatalf("%s: tool error %s", tool, res.Value)
	}
	return firstText(t, res.Value)
}

func TestRootsAdvertisedAndListed(t *testing.T) {
	cfg := testConfig("roots")
	cfg.Roots = []string{"file:///srv/data", "file:///home/me/notes"}
	m, cs, _ := startCaps(t, cfg)
	caps := cs.lastCaps(t)
	if caps.RootsV2 == nil {
		t.Fatalf("the client did not advertise roots: %+v", caps)
	}
	if caps.RootsV2.ListChanged {
		t.Errorf("roots.listChanged advertised for a fixed list")
	}
	var roots []mcp.Root
	if err := json.Unmarshal([]byte(callText(t, t.Context(), m, "roots", `{}`)), &roots); err != nil {
		t.Fatal(err)
	}
	got := []string{}
	for _, r := range roots {
		got = append(got, r.URI+" "+r.Name)
	}
	slices.Sort(got)
	if want := []string{"file:///home/me/notes notes", "file:///srv/data data"}; !slices.Equal(got, want) {
		t.Errorf("roots/list = %v, want %v", got, want)
	}
}

func TestNoRootsNoCapability(t *testing.T) {
	_, cs, _ := startCaps(t, testConfig("noroots"))
	if caps := cs.lastCaps(t); caps.RootsV2 != nil {
		t.Errorf("roots advertised without configured roots: %+v", caps.RootsV2)
	}
}

func TestElicitationPolicies(t *testing.T) {
	const withDefaults = `{"type":"object","properties":{
		"name":{"type":"string","default":"Ada"},
		"age":{"type":"integer","default":36},
		"color":{"type":"string","enum":["red","blue"],"default":"blue"},
		"ok":{"type":"boolean","default":true},
		"note":{"type":"string"}},"required":["name"]}`
	const requiredNoDefault = `{"type":"object","properties":{"token":{"type":"string"}},"required":["token"]}`
	for _, tc := range []struct {
		name, policy, schema, wantAction, wantLog string
		wantContent                               map[string]any
	}{
		{"default declines", "", withDefaults, "decline", "elicitation declined", nil},
		{"decline", config.ElicitationDecline, withDefaults, "decline", "elicitation declined", nil},
		{"accept-defaults", config.ElicitationAcceptDefaults, withDefaults, "accept", "elicitation accepted with defaults",
			map[string]any{"name": "Ada", "age": float64(36), "color": "blue", "ok": true}},
		{"accept-defaults, a required field without default", config.ElicitationAcceptDefaults, requiredNoDefault, "decline", "elicitation declined", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig("elicit")
			cfg.Elicitation = tc.policy
			m, cs, logs := startCaps(t, cfg)
			if caps := cs.lastCaps(t); caps.Elicitation == nil || caps.Elicitation.Form == nil {
				t.Errorf("elicitation (form) not advertised: %+v", caps.Elicitation)
			}
			args, _ := json.Marshal(map[string]json.RawMessage{"schema": json.RawMessage(tc.schema)})
			var res mcp.ElicitResult
			if err := json.Unmarshal([]byte(callText(t, t.Context(), m, "elicit", string(args))), &res); err != nil {
				t.Fatal(err)
			}
			if res.Action != tc.wantAction {
				t.Errorf("action = %q, want %q", res.Action, tc.wantAction)
			}
			if tc.wantContent != nil {
				got, _ := json.Marshal(res.Content)
				want, _ := json.Marshal(tc.wantContent)
				if string(got) != string(want) {
					t.Errorf("content = %s, want %s", got, want)
				}
			} else if len(res.Content) != 0 {
				t.Errorf("content on %s: %v", res.Action, res.Content)
			}
			entries := logs.FilterMessage(tc.wantLog).All()
			if len(entries) != 1 {
				t.Fatalf("want one %q log entry, got %d (all: %v)", tc.wantLog, len(entries), logs.All())
			}
			f := entries[0].ContextMap()
			if f["tooling"] != "elicit" || f["message"] != "your settings, please" || f["mode"] != "form" {
				t.Errorf("log fields = %v", f)
			}
		})
	}
}

func TestSamplingRefused(t *testing.T) {
	m, cs, logs := startCaps(t, testConfig("sampling"))
	if caps := cs.lastCaps(t); caps.Sampling != nil {
		t.Errorf("sampling advertised: %+v", caps.Sampling)
	}
	var got struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	}
	out := callText(t, t.Context(), m, "sample", `{}`)
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if got.Code != jsonrpc.CodeMethodNotFound || !strings.Contains(got.Message, `method not found: "sampling/createMessage"`) {
		t.Errorf("sampling/createMessage answered %s, want code %d, method not found", out, jsonrpc.CodeMethodNotFound)
	}
	if n := logs.FilterMessageSnippet("asked for sampling").Len(); n != 1 {
		t.Errorf("%d log entries about the sampling request, want 1", n)
	}
}

func TestServerLogMessages(t *testing.T) {
	cfg := testConfig("logs")
	cfg.LogLevel = "info"
	m, cs, logs := startCaps(t, cfg)
	testenv.Eventually(t, 10*time.Second, "logging/setLevel", func() bool {
		cs.mu.Lock()
		defer cs.mu.Unlock()
		return slices.Equal(cs.setLevels, []mcp.LoggingLevel{"info"})
	})
	for _, tc := range []struct {
		level mcp.LoggingLevel
		data  string
		want  zapcore.Level
		msg   string
	}{
		{"warning", `"disk almost full"`, zapcore.WarnLevel, "disk almost full"},
		{"notice", `"rotated"`, zapcore.InfoLevel, "rotated"},
		{"critical", `{"code":7}`, zapcore.ErrorLevel, `{"code":7}`},
		{"debug", `"below the level asked for"`, 0, ""},
	} {
		callText(t, t.Context(), m, "log", fmt.Sprintf(`{"level":%q,"data":%s}`, tc.level, tc.data))
		if tc.msg == "" {
			continue
		}
		var entries []observer.LoggedEntry
		testenv.Eventually(t, 10*time.Second, "the server log message "+tc.msg, func() bool {
			entries = logs.FilterLoggerName("tooling.server").FilterMessage(tc.msg).All()
			return len(entries) > 0
		})
		e := entries[0]
		f := e.ContextMap()
		if e.Level != tc.want || f["tooling"] != "logs" || f["level_mcp"] != string(tc.level) || f["server_logger"] != "caps-logger" {
			t.Errorf("%s: logged at %v with %v", tc.level, e.Level, f)
		}
	}
	// The server filters by the level asked for: the debug message never came.
	if n := logs.FilterMessage("below the level asked for").Len(); n != 0 {
		t.Errorf("a debug message got through log_level info")
	}
}

func TestLogLevelNotAskedWithoutIt(t *testing.T) {
	m, cs, logs := startCaps(t, testConfig("nolevel"))
	callText(t, t.Context(), m, "log", `{"level":"error","data":"never sent"}`)
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if len(cs.setLevels) != 0 {
		t.Errorf("logging/setLevel sent without log_level: %v", cs.setLevels)
	}
	// go-sdk servers send nothing until a level is set.
	if n := logs.FilterLoggerName("tooling.server").Len(); n != 0 {
		t.Errorf("%d server log entries", n)
	}
}

func TestProgress(t *testing.T) {
	m, _, logs := startCaps(t, testConfig("progress"))
	var mu sync.Mutex
	var got []tooling.Progress
	ctx := tooling.WithProgress(tooling.WithCallID(t.Context(), "call-1"), func(p tooling.Progress) {
		mu.Lock()
		got = append(got, p)
		mu.Unlock()
	})
	token := callText(t, ctx, m, "progress", `{"steps":3}`)
	if token == `"no progress token"` {
		t.Fatal("the call carried no progress token")
	}
	// A second call has a token of its own.
	if token2 := callText(t, t.Context(), m, "progress", `{"steps":2}`); token2 == token {
		t.Errorf("two calls share progress token %s", token)
	}
	testenv.Eventually(t, 10*time.Second, "5 progress notifications counted, 3 reported", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return m.Status().ProgressNotifications == 5 && len(got) == 3
	})
	mu.Lock()
	defer mu.Unlock()
	want := []tooling.Progress{
		{CallID: "call-1", Tool: "progress", Progress: 1, Total: 3, Message: "step 1"},
		{CallID: "call-1", Tool: "progress", Progress: 2, Total: 3, Message: "step 2"},
		{CallID: "call-1", Tool: "progress", Progress: 3, Total: 3, Message: "step 3"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("progress = %+v\nwant %+v", got, want)
	}
	entries := logs.FilterMessage("progress").FilterLevelExact(zapcore.DebugLevel).All()
	if len(entries) != 5 {
		t.Fatalf("%d progress log entries at debug, want 5", len(entries))
	}
	if f := entries[0].ContextMap(); f["call_id"] != "call-1" || f["tool"] != "progress" || f["progress"] != float64(1) {
		t.Errorf("progress log fields = %v", f)
	}
}

// TestFilesystemFollowsRoots: server-filesystem's allowed directories are
// the configured roots (relative ones resolved like cwd), not the
// directory on its command line; without roots it keeps its own and is
// told nothing.
func TestFilesystemFollowsRoots(t *testing.T) {
	entry := testenv.NPMServer(t, "server-filesystem")
	argDir, rootDir := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(rootDir, "in-root.txt"), []byte("root\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		roots     bool
		wantDir   string
		wantLog   string
		forbidLog string
	}{
		{"with roots", true, rootDir, "Updated allowed directories from MCP roots: 1 valid directories", "No valid root directories"},
		{"without roots", false, argDir, "Client does not support MCP Roots", "No valid root directories"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The roots go through config like a user's toolhostd.toml:
			// a path relative to the config file's directory.
			dir := filepath.Dir(rootDir)
			toml := fmt.Sprintf("version = 1\n[tooling.fs]\ncommand = \"node\"\nargs = [%q, %q]\nconnect_timeout = \"30s\"\n", entry, argDir)
			if tc.roots {
				toml += fmt.Sprintf("roots = [%q]\n", filepath.Base(rootDir))
			}
			c, err := config.Parse(filepath.Join(dir, "toolhostd.toml"), []byte(toml))
			if err != nil {
				t.Fatal(err)
			}
			cfg := c.Tooling["fs"]
			cfg.Name = "fs"
			core, logs := observer.New(zapcore.DebugLevel)
			m := newMCP(t, cfg, zap.New(core), mcpclient.Options{})
			testenv.ServeTooling(t, m, nil)
			waitConnected(t, m)
			// The server asks for the roots after initialization, on its own time.
			testenv.Eventually(t, 20*time.Second, "the server's startup message "+tc.wantLog, func() bool {
				for _, e := range logs.FilterMessage("server stderr").All() {
					if strings.Contains(fmt.Sprint(e.ContextMap()["line"]), tc.wantLog) {
						return true
					}
				}
				return false
			})
			for _, e := range logs.FilterMessage("server stderr").All() {
				if line := fmt.Sprint(e.ContextMap()["line"]); strings.Contains(line, tc.forbidLog) {
					t.Errorf("server-filesystem: %s", line)
				}
			}
			got := callText(t, t.Context(), m, "list_allowed_directories", `{}`)
			want, _ := filepath.EvalSymlinks(tc.wantDir)
			other := argDir
			if !tc.roots {
				other = rootDir
			}
			if !strings.Contains(got, want) || strings.Contains(got, other) {
				t.Errorf("list_allowed_directories = %q, want %s only", got, want)
			}
		})
	}
}
