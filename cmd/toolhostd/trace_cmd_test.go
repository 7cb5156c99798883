package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/message"
	"github.com/toolhostd/toolhostd/internal/provider/providertest"
	"github.com/toolhostd/toolhostd/internal/testenv"
	"github.com/toolhostd/toolhostd/internal/tracing"
)

// spanNamed is tr's last span called name (the zero Span when none is).
func spanNamed(tr tracing.Trace, name string) tracing.Span {
	var out tracing.Span
	for _, s := range tr.Spans {
		if s.Name == name {
			out = s
		}
	}
	return out
}

// spansByName are spans by name (the last of each name).
func spansByName(spans []*tracepb.Span) map[string]*tracepb.Span {
	out := map[string]*tracepb.Span{}
	for _, s := range spans {
		out[s.Name] = s
	}
	return out
}

// tracedTools is an MCP server over streamable HTTP whose echo tool keeps
// the traceparent of each call's _meta, and which keeps every traceparent
// header it was sent.
type tracedTools struct {
	srv *httptest.Server

	mu      sync.Mutex
	meta    []string
	headers []string
}

func newTracedTools(t *testing.T) *tracedTools {
	tt := &tracedTools{}
	s := mcp.NewServer(&mcp.Implementation{Name: "traced", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "echoes text"},
		func(_ context.Context, req *mcp.CallToolRequest, in testenv.EchoIn) (*mcp.CallToolResult, any, error) {
			tp, _ := req.Params.GetMeta()["traceparent"].(string)
			tt.mu.Lock()
			tt.meta = append(tt.meta, tp)
			tt.mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	tt.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tp := r.Header.Get("traceparent"); tp != "" {
			tt.mu.Lock()
			tt.headers = append(tt.headers, tp)
			tt.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(tt.srv.Close)
	t.Cleanup(func() { // a daemon killed at the end never closed its session
		for ss := range s.Sessions() {
			_ = ss.Close()
		}
	})
	return tt
}

func (tt *tracedTools) seen() (meta, headers []string) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	return append([]string(nil), tt.meta...), append([]string(nil), tt.headers...)
}

// tracedConfig is a serve config of the router and assistant-service
// examples: the router asks the assistant, which asks the fake model,
// calls the tool it asks for on tools, and answers.
func tracedConfig(t *testing.T, dir, sock, traces string, gpt *providertest.Server, tools *tracedTools) string {
	pc := gpt.Config(t)
	return fmt.Sprintf(`version = 1
[host]
control_socket = %q
state_dir = %q
cache_dir = %q
audit_log = %q
traces = %s

[tooling.tools]
url = %q

[provider.gpt]
kind = %q
base_url = %q
api_key = %q
model = %q
max_retries = 0

[agent.router]
component = %q
input = '{"agents":["assistant-service"],"timeout":60}'
sends_to = ["assistant-service"]

[agent.assistant-service]
component = %q
toolings = ["tools"]
providers = ["gpt"]
accepts = ["agent:router"]
input = '{"provider":"gpt","toolings":["tools"]}'
`, sock, filepath.Join(dir, "state"), filepath.Join(testenv.Root(t), "build", "test-cache"), filepath.Join(dir, "audit.jsonl"), traces,
		tools.srv.URL, pc.Kind, pc.BaseURL, pc.APIKey, pc.Model,
		testenv.Agent(t, "agents", "router"), testenv.Agent(t, "agents", "assistant-service"))
}

// startTraced serves cfg and returns a client of its control socket.
func startTraced(t *testing.T, dir, sock, cfg string, env ...string) (*control.Client, *serveProc) {
	p := startServe(t, writeConfigFile(t, dir, "toolhostd.toml", cfg), append([]string{"OTEL_BSP_SCHEDULE_DELAY=50"}, env...)...)
	var c *control.Client
	waitFor(t, 60*time.Second, func() bool {
		cc, err := control.Dial(sock)
		if err != nil {
			return false
		}
		if ok, _ := cc.Ready(t.Context()); !ok {
			cc.Close()
			return false
		}
		c = cc
		return true
	}, p.out)
	t.Cleanup(func() { c.Close() })
	return c, p
}

// sendWait sends content to agent under ctx and waits for the reply.
func sendWait(t *testing.T, ctx context.Context, c *control.Client, agent, content string) control.MessageStatus {
	t.Helper()
	return sendWaitWith(t, ctx, c, agent, content, control.SendOptions{})
}

// sendWaitWith is sendWait with options (a session).
func sendWaitWith(t *testing.T, ctx context.Context, c *control.Client, agent, content string, o control.SendOptions) control.MessageStatus {
	t.Helper()
	st, err := c.Send(ctx, agent, content, o)
	for err == nil && (st.Status == message.StatusQueued || st.Status == message.StatusWorking) {
		st, err = c.WaitMessage(ctx, agent, st.ID, control.MaxMessageWait)
	}
	if err != nil || st.Status != message.StatusDone {
		t.Fatalf("send to %s: %+v, %v", agent, st, err)
	}
	return st
}

// TestTraces: one message from a caller with a traceparent, to the router
// example, which asks the assistant-service example, which asks the fake
// model (OpenAI's wire format, then Anthropic's), calls the tool it asks
// for on a real MCP server over streamable HTTP and asks the model again,
// is one trace at an OTLP/HTTP
// receiver: the caller's span is the parent of the router's invoke_agent,
// whose child is the assistant's, whose children are its chat and
// execute_tool spans, and the MCP client's tools/call is execute_tool's
// child, and the assistant's key-value reads and writes and both agents'
// waits in recv are spans of their messages. The MCP server got the trace
// context in _meta and in headers,
// the model API in headers; no span has content; the audit lines carry
// the trace id; send --json prints it; GET /v1/traces and toolhostd trace
// have the trace.
// It runs against the fake of each model API's wire format.
func TestTraces(t *testing.T) {
	noConfig(t)
	for _, api := range []providertest.API{providertest.OpenAI, providertest.Anthropic} {
		t.Run(api.String(), func(t *testing.T) { testTraces(t, api) })
	}
}

func testTraces(t *testing.T, api providertest.API) {
	dir := shortTempDir(t, "traces")
	sock := filepath.Join(dir, "c.sock")
	rcv := testenv.NewOTLPReceiver(t)
	tools := newTracedTools(t)
	gpt := providertest.New(t, api)
	gpt.Script(
		providertest.Reply{ToolCalls: []providertest.ToolCall{{ID: "call_1", Name: "echo", Arguments: []string{`{"text":"hi from the tool"}`}}}, InputTokens: 20, OutputTokens: 8},
		providertest.Reply{Text: []string{"The tool said: hi from the tool"}, InputTokens: 40, OutputTokens: 6},
	)
	gpt.SetDefault(providertest.Reply{Text: []string{"again"}, InputTokens: 3, OutputTokens: 1})
	c, p := startTraced(t, dir, sock, tracedConfig(t, dir, sock,
		fmt.Sprintf(`{ endpoint = %q }`, rcv.URL), gpt, tools))

	caller := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
		TraceFlags: trace.FlagsSampled, Remote: true,
	})
	st := sendWaitWith(t, trace.ContextWithRemoteSpanContext(t.Context(), caller), c, "router", "use the echo tool", control.SendOptions{Session: "t1"})
	tid := caller.TraceID().String()
	if st.TraceID != tid || !strings.Contains(st.Reply, "The tool said: hi from the tool") {
		t.Fatalf("reply %+v, want trace %s", st, tid)
	}

	names := []string{"invoke_agent router", "invoke_agent assistant-service", "chat " + providertest.DefaultModel, "execute_tool echo", "tools/call echo",
		"kv get", "kv set", "recv"}
	var spans map[string]*tracepb.Span
	if err := testenv.Poll(30*time.Second, func() bool {
		spans = spansByName(rcv.Spans(tid))
		for _, n := range names {
			if spans[n] == nil {
				return false
			}
		}
		return true
	}); err != nil {
		got := []string{}
		for n := range spans {
			got = append(got, n)
		}
		kept, _ := c.Traces(t.Context(), tracing.Filter{})
		t.Fatalf("%v waiting for the spans %q at the receiver: it has %q; the daemon keeps %+v\n%s", err, names, got, kept, p.out.String())
	}
	id := func(n string) string { return hex.EncodeToString(spans[n].SpanId) }
	parent := func(n string) string { return hex.EncodeToString(spans[n].ParentSpanId) }
	for child, want := range map[string]string{
		"invoke_agent router":               caller.SpanID().String(),
		"invoke_agent assistant-service":    id("invoke_agent router"),
		"chat " + providertest.DefaultModel: id("invoke_agent assistant-service"),
		"execute_tool echo":                 id("invoke_agent assistant-service"),
		"tools/call echo":                   id("execute_tool echo"),
	} {
		if got := parent(child); got != want {
			t.Errorf("%s: parent %s, want %s", child, got, want)
		}
	}
	// The assistant's key-value reads and writes and the waits in recv of
	// both agents are spans of their messages.
	for _, n := range []string{"kv get", "kv set"} {
		if got, want := parent(n), id("invoke_agent assistant-service"); got != want {
			t.Errorf("%s: parent %s, want the assistant's message %s", n, got, want)
		}
		if b := testenv.AttrStrings(spans[n].Attributes)["toolhost.kv.bucket"]; b != "conversations" {
			t.Errorf("%s: bucket %q", n, b)
		}
	}
	waits := map[string]int{}
	for _, s := range rcv.Spans(tid) {
		if s.Name != "recv" {
			continue
		}
		waits[hex.EncodeToString(s.ParentSpanId)+" "+testenv.AttrStrings(s.Attributes)["toolhost.inbox.received"]]++
	}
	for _, w := range []string{id("invoke_agent assistant-service") + " chat-done", id("invoke_agent router") + " reply"} {
		if waits[w] == 0 {
			t.Errorf("no recv span %q (parent, received) among %v", w, waits)
		}
	}
	for w := range waits {
		if strings.HasSuffix(w, "-delta") {
			t.Errorf("a recv span of each delta of a stream: %q", w)
		}
	}
	attrs := func(n string) map[string]string { return testenv.AttrStrings(spans[n].Attributes) }
	checks := []struct {
		span string
		want map[string]string
	}{
		{"invoke_agent assistant-service", map[string]string{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "assistant-service",
			"toolhost.message.sender": "agent:router", "toolhost.outcome": "ok"}},
		{"invoke_agent router", map[string]string{"toolhost.message.id": st.ID, "toolhost.message.sender": "api", "gen_ai.conversation.id": "t1"}},
		{"chat " + providertest.DefaultModel, map[string]string{"gen_ai.operation.name": "chat", "gen_ai.provider.name": api.String(),
			"gen_ai.request.model": providertest.DefaultModel, "gen_ai.response.model": providertest.DefaultModel}},
		{"execute_tool echo", map[string]string{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "echo", "toolhost.tooling": "tools", "toolhost.outcome": "ok"}},
		{"tools/call echo", map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "echo", "network.transport": "tcp"}},
	}
	for _, c := range checks {
		got := attrs(c.span)
		for k, v := range c.want {
			if got[k] != v {
				t.Errorf("%s: %s = %q, want %q (all: %v)", c.span, k, got[k], v, got)
			}
		}
	}
	if a := attrs("tools/call echo"); a["mcp.session.id"] == "" {
		t.Errorf("tools/call has no mcp.session.id: %v", a)
	}
	if a := attrs("execute_tool echo"); a["gen_ai.tool.call.id"] == "" {
		t.Errorf("execute_tool has no gen_ai.tool.call.id: %v", a)
	}
	// Both model calls are in the trace, with their tokens and finish
	// reasons; by name the map keeps one, so count them.
	chats, tokens := 0, map[string]bool{}
	for _, s := range rcv.Spans("") {
		if hex.EncodeToString(s.TraceId) == tid && s.Name == "chat "+providertest.DefaultModel {
			chats++
			a := testenv.AttrStrings(s.Attributes)
			tokens[a["gen_ai.usage.input_tokens"]+"/"+a["gen_ai.usage.output_tokens"]+" "+a["gen_ai.response.finish_reasons"]] = true
		}
		for _, kv := range s.Attributes {
			if strings.HasPrefix(kv.Key, "gen_ai.input") || strings.HasPrefix(kv.Key, "gen_ai.output") || kv.Key == "gen_ai.tool.call.arguments" || kv.Key == "gen_ai.tool.call.result" {
				t.Errorf("span %s records content (%s) without capture_content", s.Name, kv.Key)
			}
		}
	}
	res := rcv.Resources()[0]
	if chats != 2 || !tokens["20/8 tool_calls"] || !tokens["40/6 stop"] {
		t.Errorf("%d chat spans, tokens and reasons %v", chats, tokens)
	}
	if res["service.name"] != "toolhostd" || res["host.name"] == "" {
		t.Errorf("resource %v", res)
	}

	// The trace context went to the MCP server (the tools/call span is the
	// parent it names) and to the model API (the chat spans).
	meta, headers := tools.seen()
	wantTP := "00-" + tid + "-" + id("tools/call echo") + "-01"
	if len(meta) != 1 || meta[0] != wantTP || !contains(headers, wantTP) {
		t.Errorf("the MCP server saw _meta traceparent %q and headers %q, want %q", meta, headers, wantTP)
	}
	for i, r := range gpt.Requests()[:2] {
		if tp := r.Header.Get("traceparent"); !strings.HasPrefix(tp, "00-"+tid+"-") {
			t.Errorf("model request %d: traceparent %q", i, tp)
		}
	}

	// The in-memory store and toolhostd trace have the same trace.
	kept, err := c.Traces(t.Context(), tracing.Filter{Message: st.ID})
	if err != nil || len(kept) != 1 || kept[0].TraceID != tid {
		t.Fatalf("GET /v1/traces?message=: %+v, %v", kept, err)
	}
	var out, errb bytes.Buffer
	if code := execute([]string{"trace", st.ID, "--socket", sock}, &out, &errb); code != 0 {
		t.Fatalf("trace: exit %d: %s", code, errb.String())
	}
	tree := out.String()
	for _, line := range []string{"trace " + tid + ": ", "\ninvoke_agent router  ", "\n  invoke_agent assistant-service  ",
		"\n    chat " + providertest.DefaultModel + "  ", "[tokens 20 in, 8 out", "\n    execute_tool echo  ", "\n      tools/call echo  "} {
		if !strings.Contains(tree, line) {
			t.Errorf("trace printed no %q:\n%s", line, tree)
		}
	}
	if code := execute([]string{"trace", "0123456789abcdef0123456789abcdef", "--socket", sock}, &out, &errb); code != 1 {
		t.Errorf("trace of an unknown id: exit %d, want 1", code)
	}

	// A message sent without a traceparent starts a trace of its own,
	// whose id send --json prints.
	out.Reset()
	if code := execute([]string{"send", "router", "again", "--json", "--socket", sock}, &out, &errb); code != 0 {
		t.Fatalf("send --json: exit %d: %s", code, errb.String())
	}
	var sent control.MessageStatus
	if err := json.Unmarshal(out.Bytes(), &sent); err != nil || len(sent.TraceID) != 32 || sent.TraceID == tid {
		t.Fatalf("send --json printed %s (%v)", out.String(), err)
	}

	// The audit lines of the first message carry its trace.
	p.cmd.Process.Signal(os.Interrupt)
	_ = p.wait(t, 60*time.Second)
	f, err := os.Open(filepath.Join(dir, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ops := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l struct{ Op, Agent, TraceID, SpanID string }
		var raw map[string]any
		_ = json.Unmarshal(sc.Bytes(), &raw)
		l.Op, _ = raw["op"].(string)
		l.Agent, _ = raw["agent"].(string)
		l.TraceID, _ = raw["trace_id"].(string)
		l.SpanID, _ = raw["span_id"].(string)
		if l.TraceID == tid && l.SpanID != "" {
			ops[l.Agent+" "+l.Op] = true
		}
	}
	for _, want := range []string{"router message", "assistant-service message", "assistant-service call-tool", "assistant-service chat-stream"} {
		if !ops[want] {
			t.Errorf("no audit line %q with the trace id; lines with it: %v", want, ops)
		}
	}
}

// TestTracesWithoutCollector: with capture_content and a collector that
// does not answer, the agent answers as ever, serve says once that it
// cannot export, the in-memory trace has the content, the spans the
// collector did not take are counted in metrics, and the start of a
// per-session instance and of an on-message agent is a span of the message
// that caused it.
func TestTracesWithoutCollector(t *testing.T) {
	noConfig(t)
	dir := shortTempDir(t, "tracesoff")
	sock := filepath.Join(dir, "c.sock")
	tools := newTracedTools(t)
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close() // a port nobody answers on
	gpt := providertest.New(t, providertest.OpenAI)
	gpt.SetDefault(providertest.Reply{Text: []string{"plain answer"}, InputTokens: 3, OutputTokens: 2})
	cfg := tracedConfig(t, dir, sock, fmt.Sprintf(`{ endpoint = "%s/v1/traces", capture_content = true }`, gone.URL), gpt, tools) +
		fmt.Sprintf("\n[agent.echo]\ncomponent = %q\ninstances = \"per-session\"\n\n[agent.late]\ncomponent = %q\nstart = \"on-message\"\n",
			testenv.Agent(t, "agents", "echo"), testenv.Agent(t, "agents", "echo"))
	c, p := startTraced(t, dir, sock, cfg,
		"OTEL_EXPORTER_OTLP_TIMEOUT=300") // an export, its retries included, gives up after 0.3 s
	st := sendWait(t, t.Context(), c, "router", "a secret-free question")
	if !strings.Contains(st.Reply, "plain answer") || st.TraceID == "" {
		t.Fatalf("reply %+v", st)
	}
	tr, err := c.Trace(t.Context(), st.TraceID)
	if err != nil {
		t.Fatal(err)
	}
	var captured []string
	for _, s := range tr.Spans {
		for k, v := range s.Attributes {
			if strings.HasPrefix(k, "gen_ai.input.messages") && strings.Contains(fmt.Sprint(v), "a secret-free question") {
				captured = append(captured, s.Name)
			}
		}
	}
	if len(captured) < 2 { // the router's message and the assistant's (and its chat's prompt)
		t.Errorf("spans with the message content: %v", captured)
	}
	// A per-session instance's start is a span under the message that
	// caused it; the session's next message finds the instance running.
	for i, wantStart := range []bool{true, false} {
		st := sendWaitWith(t, t.Context(), c, "echo", "hi", control.SendOptions{Session: "s1"})
		tr, err := c.Trace(t.Context(), st.TraceID)
		if err != nil {
			t.Fatal(err)
		}
		msg, start := spanNamed(tr, "invoke_agent echo"), spanNamed(tr, "start_instance echo")
		if got := start.SpanID != ""; got != wantStart || msg.SpanID == "" {
			t.Fatalf("message %d of session s1: start_instance span %v, want %v; spans %+v", i+1, got, wantStart, tr.Spans)
		}
		if wantStart && (start.ParentID != msg.SpanID || start.Attributes["gen_ai.conversation.id"] != "s1" ||
			start.Attributes["toolhost.instance.instantiate_ms"] == nil || start.Status != "") {
			t.Fatalf("start_instance: %+v, want a child of %s with the session and instantiate_ms", start, msg.SpanID)
		}
	}

	// An on-message agent woken by a message: its start, the component's
	// load included, is a span of that message.
	st = sendWaitWith(t, t.Context(), c, "late", "wake up", control.SendOptions{})
	tr, err = c.Trace(t.Context(), st.TraceID)
	if err != nil {
		t.Fatal(err)
	}
	msg, start := spanNamed(tr, "invoke_agent late"), spanNamed(tr, "start_instance late")
	if start.SpanID == "" || start.ParentID != msg.SpanID || start.Attributes["toolhost.component.cached"] == nil ||
		start.Attributes["toolhost.component.load_ms"] == nil || start.Attributes["toolhost.instance.instantiate_ms"] == nil {
		t.Fatalf("on-message start: %+v, want a child of %+v with the load and the instantiation", start, msg)
	}

	waitFor(t, 60*time.Second, func() bool { return strings.Contains(p.out.String(), "cannot export traces") }, p.out)
	if n := strings.Count(p.out.String(), "cannot export traces"); n != 1 {
		t.Errorf("serve said %d times that it cannot export", n)
	}
	// The spans the collector did not take are counted.
	waitFor(t, 30*time.Second, func() bool {
		return metricValue(t, c, "toolhostd_trace_spans_dropped_total") >= 3 && metricValue(t, c, "toolhostd_trace_spans_total") >= 3
	}, p.out)
	if n := metricValue(t, c, "toolhostd_trace_spans_exported_total"); n != 0 {
		t.Errorf("%v spans exported to a collector that is not there", n)
	}
}

// metricValue is the value of an unlabelled metric in c's /metrics (-1
// when absent).
func metricValue(t *testing.T, c *control.Client, name string) float64 {
	t.Helper()
	b, err := c.Metrics(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			var f float64
			if _, err := fmt.Sscan(v, &f); err == nil {
				return f
			}
		}
	}
	return -1
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// TestObservabilityDocConfigs: each [host] traces config
// docs/observability.md shows is one config validate takes.
func TestObservabilityDocConfigs(t *testing.T) {
	noConfig(t)
	t.Setenv("OTLP_KEY", "k")
	blocks := docBlocks(t, "docs/observability.md", "## Traces")["toml"]
	if len(blocks) != 2 {
		t.Fatalf("docs/observability.md's traces: %d toml blocks, want 2", len(blocks))
	}
	for i, b := range blocks {
		if !strings.Contains(b, "traces = {") {
			t.Fatalf("block %d sets no traces: %s", i, b)
		}
		path := writeConfigFile(t, t.TempDir(), "toolhostd.toml", "version = 1\n"+b)
		if code, out, errOut := runCLI(t, "--config", path, "config", "validate"); code != 0 {
			t.Errorf("block %d: config validate: exit %d, %s%s\n%s", i, code, out, errOut, b)
		}
	}
}
