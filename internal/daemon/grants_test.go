package daemon

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

// policyServerMode is $TOOLHOSTD_TEST_MCP_SERVER for runPolicyServer.
const policyServerMode = "policy"

// runPolicyServer is the go-sdk MCP server of the grant tests. It appends
// one line per tool call, resource read and subscription it receives to
// $TOOLHOSTD_TEST_CALLLOG ("call TOOL ARGS", "read URI", "subscribe URI"):
// the proof of what reached it. Tools: read_file, read_secret, list_dir,
// write_file (all echo their arguments), slow (blocks until cancelled),
// add_resources (adds mem://data/new.txt and mem://secret/new.txt: a list
// change), wait_file (blocks until the file at path exists). Resources:
// mem://data/a.txt, mem://data/sub/b.txt, mem://secret/key.
func runPolicyServer() int {
	logf, err := os.OpenFile(os.Getenv("TOOLHOSTD_TEST_CALLLOG"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer logf.Close()
	note := func(format string, args ...any) { fmt.Fprintf(logf, format+"\n", args...) }
	srv := mcp.NewServer(&mcp.Implementation{Name: "policy-test", Version: "1.0.0"}, &mcp.ServerOptions{
		SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
			note("subscribe %s", req.Params.URI)
			return nil
		},
		UnsubscribeHandler: func(_ context.Context, req *mcp.UnsubscribeRequest) error { return nil },
	})
	// Raw tools with the smallest schema: the probe's output reaches the
	// test through a debug log line of bounded length.
	type in struct {
		Path string `json:"path,omitempty"`
	}
	add := func(name string, h func(ctx context.Context, a in) (*mcp.CallToolResult, error)) {
		srv.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				var a in
				_ = json.Unmarshal(req.Params.Arguments, &a)
				note("call %s %s", name, req.Params.Arguments)
				return h(ctx, a)
			})
	}
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	for _, name := range []string{"read_file", "read_secret", "list_dir", "write_file"} {
		add(name, func(context.Context, in) (*mcp.CallToolResult, error) { return text(name), nil })
	}
	add("slow", func(ctx context.Context, _ in) (*mcp.CallToolResult, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	addRes := func(uri string) {
		srv.AddResource(&mcp.Resource{URI: uri, Name: "r"},
			func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				note("read %s", req.Params.URI)
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "c"}}}, nil
			})
	}
	for _, uri := range []string{"mem://data/a.txt", "mem://data/sub/b.txt", "mem://secret/key"} {
		addRes(uri)
	}
	add("add_resources", func(context.Context, in) (*mcp.CallToolResult, error) {
		addRes("mem://data/new.txt")
		addRes("mem://secret/new.txt")
		return text("added"), nil
	})
	add("wait_file", func(ctx context.Context, a in) (*mcp.CallToolResult, error) {
		for {
			if _, err := os.Stat(a.Path); err == nil {
				return text("there"), nil
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(10 * time.Millisecond):
			}
		}
	})
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, err)
	}
	return 0
}

// policyTooling is a [tooling.<name>] running runPolicyServer with its
// call log at calllog.
func policyTooling(name, calllog string) string {
	return fmt.Sprintf(`[tooling.%s]
command = %q
env = { %s = %q, TOOLHOSTD_TEST_CALLLOG = %q }
connect_timeout = "30s"
`, name, os.Args[0], serverEnv, policyServerMode, calllog)
}

// step is one probe step's outcome.
type step struct {
	Op  string          `json:"op"`
	OK  json.RawMessage `json:"ok"`
	Err *struct {
		Code, Message string
	} `json:"err"`
	Thrown string `json:"thrown"`
}

func probeSteps(t *testing.T, r *running, agent string) []step {
	t.Helper()
	out, ok := r.output(agent)
	if !ok {
		t.Fatalf("agent %s: no output", agent)
	}
	var steps []step
	if err := json.Unmarshal([]byte(out), &steps); err != nil {
		t.Fatalf("agent %s output %q: %v", agent, out, err)
	}
	return steps
}

func names(t *testing.T, raw json.RawMessage, field string) []string {
	t.Helper()
	var items []map[string]any
	if err := json.Unmarshal(raw, &items); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	var out []string
	for _, it := range items {
		s, _ := it[field].(string)
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// wantErr checks that step i failed with code and a message containing
// every one of has.
func wantErr(t *testing.T, steps []step, i int, code string, has ...string) {
	t.Helper()
	s := steps[i]
	if s.Err == nil || s.Err.Code != code {
		t.Errorf("step %d (%s): %+v, want %s", i, s.Op, s, code)
		return
	}
	for _, h := range has {
		if !strings.Contains(s.Err.Message, h) {
			t.Errorf("step %d (%s): message %q lacks %q", i, s.Op, s.Err.Message, h)
		}
	}
}

func wantOK(t *testing.T, steps []step, i int) {
	t.Helper()
	if s := steps[i]; s.OK == nil || s.Err != nil || s.Thrown != "" {
		t.Errorf("step %d (%s) failed: %+v", i, s.Op, s)
	}
}

func readAudit(t *testing.T, path string) ([]map[string]any, string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out, string(b)
}

// TestGrants runs probes with different grants on one tooling (one MCP
// session) and checks what each could see and do, what reached the server
// (its own call log), the audit log field by field and the metrics. The
// three "reader" agents share one grant (split for the length of their
// output, which comes through a bounded log line).
func TestGrants(t *testing.T) {
	dir := t.TempDir()
	calllog := filepath.Join(dir, "calls.log")
	auditPath := filepath.Join(dir, "audit.jsonl")
	probe := testenv.Agent(t, "test-agents", "probe")
	const secretArg, writerArg = "SECRET-ARGUMENT-VALUE", "WRITER-ARGUMENT-VALUE"
	see := probeInput(t,
		map[string]any{"op": "get", "name": "srv", "as": "s"},
		map[string]any{"op": "list-tools", "h": "s"},
		map[string]any{"op": "list-resources", "h": "s"},
		map[string]any{"op": "subscribe-list", "h": "s", "as": "l"},
		map[string]any{"op": "call-tool-blocking", "h": "s", "tool": "add_resources"},
		map[string]any{"op": "recv-until", "id": "l", "timeout": 30000},
		map[string]any{"op": "unsubscribe-list", "h": "s", "id": "l"},
	)
	deny := probeInput(t,
		map[string]any{"op": "get", "name": "srv", "as": "s"},
		map[string]any{"op": "call-tool-blocking", "h": "s", "tool": "write_file", "args": map[string]any{"path": "/x", "text": secretArg}},
		map[string]any{"op": "call-tool", "h": "s", "tool": "read_secret", "args": map[string]any{"path": secretArg}},
		map[string]any{"op": "read-resource", "h": "s", "uri": "mem://secret/key"},
		map[string]any{"op": "subscribe", "h": "s", "uri": "mem://data/sub/b.txt"},
	)
	do := probeInput(t,
		map[string]any{"op": "get", "name": "srv", "as": "s"},
		map[string]any{"op": "read-resource", "h": "s", "uri": "mem://data/a.txt"},
		map[string]any{"op": "subscribe", "h": "s", "uri": "mem://data/a.txt", "as": "u"},
		map[string]any{"op": "call-tool", "h": "s", "tool": "slow", "as": "c1"},
		map[string]any{"op": "call-tool", "h": "s", "tool": "slow", "as": "c2"},
		map[string]any{"op": "call-tool-blocking", "h": "s", "tool": "slow"},
		map[string]any{"op": "cancel", "h": "s", "id": "c1"},
		map[string]any{"op": "cancel", "h": "s", "id": "c2"},
		map[string]any{"op": "call-tool-blocking", "h": "s", "tool": "read_file", "args": map[string]any{"path": secretArg}},
		map[string]any{"op": "unsubscribe", "h": "s", "id": "u"},
	)
	writer := probeInput(t,
		map[string]any{"op": "get", "name": "srv", "as": "s"},
		map[string]any{"op": "list-tools", "h": "s"},
		map[string]any{"op": "call-tool-blocking", "h": "s", "tool": "write_file", "args": map[string]any{"path": "/w", "text": writerArg}},
	)
	limited := probeInput(t,
		map[string]any{"op": "get", "name": "srv", "as": "s"},
		map[string]any{"op": "call-tool-blocking", "h": "s", "tool": "read_file", "args": map[string]any{"path": "first"}},
		map[string]any{"op": "call-tool-blocking", "h": "s", "tool": "read_file", "args": map[string]any{"path": "second"}},
		map[string]any{"op": "get", "name": "other", "as": "o"},
	)
	readerGrant := `grants.srv = { tools = ["read_*", "list_*", "slow", "add_resources"], deny_tools = ["read_secret"], resources = ["mem://data/*"], max_concurrent_calls = 2 }`
	agentConf := func(name, input, extra string) string {
		return fmt.Sprintf("\n[agent.%s]\ncomponent = %q\ntoolings = [\"srv\"]\ninput = %q\nrestart = \"never\"\n%s\n", name, probe, input, extra)
	}
	cfg := strings.Replace(header(t), "[host]\n", fmt.Sprintf("[host]\naudit_log = %q\n", auditPath), 1) + policyTooling("srv", calllog) + policyTooling("other", filepath.Join(dir, "other.log")) +
		agentConf("see", see, readerGrant) + agentConf("deny", deny, readerGrant) + agentConf("do", do, readerGrant) +
		agentConf("writer", writer, `grants.srv = { audit_arguments = true }`) +
		agentConf("limited", limited, `grants.srv = { calls_per_second = 0.01 }`)
	r := serve(t, writeConfig(t, dir, cfg), Options{Metrics: true})
	m := r.d.Metrics()
	for _, a := range []string{"see", "deny", "do", "writer", "limited"} {
		r.waitAgent(t, a, "exited", func(s control.AgentStatus) bool { return s.State == "exited" })
	}

	st := probeSteps(t, r, "see")
	if len(st) != 7 {
		t.Fatalf("see: %d steps: %+v", len(st), st)
	}
	if got, want := names(t, st[1].OK, "name"), []string{"add_resources", "list_dir", "read_file", "slow"}; !slices.Equal(got, want) {
		t.Errorf("list-tools: %v, want %v", got, want)
	}
	if got, want := names(t, st[2].OK, "uri"), []string{"mem://data/a.txt"}; !slices.Equal(got, want) {
		t.Errorf("list-resources: %v, want %v (* does not cross '/')", got, want)
	}
	for i := 3; i <= 6; i++ {
		wantOK(t, st, i)
	}
	var until struct {
		Got struct {
			Tag string
			Val json.RawMessage
		}
	}
	if err := json.Unmarshal(st[5].OK, &until); err != nil || until.Got.Tag != "resource-list-updated" {
		t.Fatalf("list update: %s (%v)", st[5].OK, err)
	}
	if got, want := names(t, until.Got.Val, "uri"), []string{"mem://data/a.txt", "mem://data/new.txt"}; !slices.Equal(got, want) {
		t.Errorf("resource-list-updated: %v, want %v", got, want)
	}

	st = probeSteps(t, r, "deny")
	if len(st) != 5 {
		t.Fatalf("deny: %d steps: %+v", len(st), st)
	}
	wantErr(t, st, 1, "denied", `"write_file"`, `agent.deny.grants.srv.tools ["read_*", "list_*", "slow", "add_resources"] has no match`)
	wantErr(t, st, 2, "denied", `"read_secret"`, `agent.deny.grants.srv.deny_tools has "read_secret"`)
	wantErr(t, st, 3, "denied", `"mem://secret/key"`, `agent.deny.grants.srv.resources ["mem://data/*"] has no match`)
	wantErr(t, st, 4, "denied", `"mem://data/sub/b.txt"`)

	st = probeSteps(t, r, "do")
	if len(st) != 10 {
		t.Fatalf("do: %d steps: %+v", len(st), st)
	}
	for _, i := range []int{1, 2, 3, 4, 6, 7, 8, 9} {
		wantOK(t, st, i)
	}
	wantErr(t, st, 5, "busy", "max_concurrent_calls = 2")

	ws := probeSteps(t, r, "writer")
	if got := names(t, ws[1].OK, "name"); !slices.Equal(got, []string{"add_resources", "list_dir", "read_file", "read_secret", "slow", "wait_file", "write_file"}) {
		t.Errorf("writer's list-tools (no narrowing): %v", got)
	}
	wantOK(t, ws, 2)
	ls := probeSteps(t, r, "limited")
	wantOK(t, ls, 1)
	wantErr(t, ls, 2, "busy", "calls_per_second = 0.01")
	wantErr(t, ls, 3, "denied", `agent "limited" is not granted tooling "other"`)

	// The server's own log: no denied or refused operation reached it.
	b, err := os.ReadFile(calllog)
	if err != nil {
		t.Fatal(err)
	}
	log := string(b)
	for _, never := range []string{"read_secret", "mem://secret/key", "subscribe mem://data/sub/b.txt", "second", "/x"} {
		if strings.Contains(log, never) {
			t.Errorf("the server saw %q:\n%s", never, log)
		}
	}
	if n := strings.Count(log, "call write_file"); n != 1 {
		t.Errorf("write_file reached the server %d times, want once (the writer's):\n%s", n, log)
	}
	if n := strings.Count(log, "call slow"); n > 2 {
		t.Errorf("slow reached the server %d times, at most 2 were admitted:\n%s", n, log)
	}

	// The audit log, once every line is written (the daemon stopped).
	r.stop(t)
	lines, text := readAudit(t, auditPath)
	if strings.Contains(text, secretArg) {
		t.Errorf("an argument value is in the audit log:\n%s", text)
	}
	if !strings.Contains(text, writerArg) {
		t.Errorf("the writer's arguments (audit_arguments = true) are not in the audit log:\n%s", text)
	}
	find := func(agent, op, key, val, outcome string) map[string]any {
		t.Helper()
		for _, l := range lines {
			if l["agent"] == agent && l["op"] == op && l[key] == val && l["outcome"] == outcome {
				return l
			}
		}
		t.Errorf("no audit line agent=%s op=%s %s=%s outcome=%s in\n%s", agent, op, key, val, outcome, text)
		return nil
	}
	sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	deniedArgs := fmt.Sprintf(`{"path":"/x","text":%q}`, secretArg)
	if l := find("deny", "call-tool-blocking", "tool", "write_file", "denied"); l != nil {
		if _, err := time.Parse(time.RFC3339Nano, l["time"].(string)); err != nil {
			t.Errorf("time %v: %v", l["time"], err)
		}
		if l["tooling"] != "srv" || l["args_bytes"] != float64(len(deniedArgs)) || l["args_sha256"] != sum(deniedArgs) || l["arguments"] != nil {
			t.Errorf("denied line: %v (want args_bytes %d, sha %s)", l, len(deniedArgs), sum(deniedArgs))
		}
		if _, ok := l["duration_ms"].(float64); !ok {
			t.Errorf("denied line without duration_ms: %v", l)
		}
		if msg, _ := l["message"].(string); !strings.Contains(msg, "agent.deny.grants.srv.tools") {
			t.Errorf("denied line's message: %v", l)
		}
	}
	find("deny", "call-tool", "tool", "read_secret", "denied")
	find("deny", "read-resource", "uri", "mem://secret/key", "denied")
	find("deny", "subscribe-resource", "uri", "mem://data/sub/b.txt", "denied")
	find("do", "read-resource", "uri", "mem://data/a.txt", "ok")
	if l := find("do", "subscribe-resource", "uri", "mem://data/a.txt", "ok"); l != nil && l["sub_id"] == nil {
		t.Errorf("subscribe line without sub_id: %v", l)
	}
	find("do", "unsubscribe-resource", "uri", "mem://data/a.txt", "ok")
	find("see", "subscribe-resource-list", "outcome", "ok", "ok")
	find("see", "unsubscribe-resource-list", "outcome", "ok", "ok")
	find("do", "call-tool-blocking", "tool", "slow", "busy")
	if l := find("do", "call-tool", "tool", "slow", "cancelled"); l != nil && l["call_id"] == nil {
		t.Errorf("call line without call_id: %v", l)
	}
	okArgs := fmt.Sprintf(`{"path":%q}`, secretArg)
	if l := find("do", "call-tool-blocking", "tool", "read_file", "ok"); l != nil {
		if l["args_sha256"] != sum(okArgs) || l["call_id"] == nil || l["duration_ms"].(float64) <= 0 {
			t.Errorf("ok call line: %v", l)
		}
	}
	if l := find("writer", "call-tool-blocking", "tool", "write_file", "ok"); l != nil {
		if a, _ := l["arguments"].(map[string]any); a["text"] != writerArg {
			t.Errorf("writer's line has arguments %v", l["arguments"])
		}
	}
	find("limited", "call-tool-blocking", "tool", "read_file", "busy")
	find("limited", "get", "tooling", "other", "denied")

	for _, c := range []struct {
		name   string
		labels map[string]string
	}{
		{"toolhostd_policy_denied_total", map[string]string{"agent": "deny", "tooling": "srv", "op": "call-tool-blocking"}},
		{"toolhostd_policy_denied_total", map[string]string{"agent": "deny", "tooling": "srv", "op": "call-tool"}},
		{"toolhostd_policy_denied_total", map[string]string{"agent": "deny", "tooling": "srv", "op": "read-resource"}},
		{"toolhostd_policy_denied_total", map[string]string{"agent": "deny", "tooling": "srv", "op": "subscribe-resource"}},
		{"toolhostd_policy_denied_total", map[string]string{"agent": "limited", "tooling": "other", "op": "get"}},
		{"toolhostd_agent_limited_total", map[string]string{"agent": "do", "tooling": "srv", "limit": "max_concurrent_calls"}},
		{"toolhostd_agent_limited_total", map[string]string{"agent": "limited", "tooling": "srv", "limit": "calls_per_second"}},
	} {
		if got, ok := metricValue(t, m, c.name, c.labels); !ok || got != 1 {
			t.Errorf("%s%v = %v (found %v), want 1", c.name, c.labels, got, ok)
		}
	}
}

// TestGrantsReload changes only an agent's grants while it runs: the
// reload applies them without a restart, the log says so, and the agent's
// next list-tools and call see the new policy.
func TestGrantsReload(t *testing.T) {
	dir := t.TempDir()
	calllog := filepath.Join(dir, "calls.log")
	const gate = "gate" // in the server's cwd: the output stays short
	probe := testenv.Agent(t, "test-agents", "probe")
	input := probeInput(t,
		map[string]any{"op": "get", "name": "srv", "as": "s"},
		map[string]any{"op": "list-tools", "h": "s"},
		map[string]any{"op": "call-tool-blocking", "h": "s", "tool": "write_file", "args": map[string]any{"path": "before"}},
		map[string]any{"op": "call-tool-blocking", "h": "s", "tool": "wait_file", "args": map[string]any{"path": gate}},
		map[string]any{"op": "list-tools", "h": "s"},
		map[string]any{"op": "call-tool-blocking", "h": "s", "tool": "write_file", "args": map[string]any{"path": "after"}},
	)
	conf := func(tools string) string {
		return header(t) + policyTooling("srv", calllog) + fmt.Sprintf("cwd = %q\n", dir) + fmt.Sprintf(`
[agent.live]
component = %q
toolings = ["srv"]
input = %q
restart = "never"

[agent.live.grants.srv]
tools = %s
`, probe, input, tools)
	}
	path := writeConfig(t, dir, conf(`["read_*", "wait_file"]`))
	r := serve(t, path)
	testenv.Eventually(t, 60*time.Second, "the agent waiting on the gate", func() bool {
		b, _ := os.ReadFile(calllog)
		return strings.Contains(string(b), "call wait_file")
	})
	writeConfig(t, dir, conf(`["read_*", "wait_file", "write_*"]`))
	if err := r.d.Reload(); err != nil {
		t.Fatal(err)
	}
	if n := r.logs.FilterMessage("reload: grants applied to the running agents without a restart").Len(); n != 1 {
		t.Errorf("%d 'grants applied' log lines, want 1", n)
	}
	if err := os.WriteFile(filepath.Join(dir, gate), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	got := r.waitAgent(t, "live", "exited", func(s control.AgentStatus) bool { return s.State == "exited" })
	if got.Restarts != 0 {
		t.Errorf("the agent was restarted: %+v", got)
	}
	st := probeSteps(t, r, "live")
	if len(st) != 6 {
		t.Fatalf("steps: %+v", st)
	}
	if got := names(t, st[1].OK, "name"); !slices.Equal(got, []string{"read_file", "read_secret", "wait_file"}) {
		t.Errorf("list-tools before: %v", got)
	}
	wantErr(t, st, 2, "denied", `"write_file"`)
	wantOK(t, st, 3)
	if got := names(t, st[4].OK, "name"); !slices.Equal(got, []string{"read_file", "read_secret", "wait_file", "write_file"}) {
		t.Errorf("list-tools after the reload: %v", got)
	}
	wantOK(t, st, 5)
	b, _ := os.ReadFile(calllog)
	if strings.Contains(string(b), "before") || !strings.Contains(string(b), "after") {
		t.Errorf("server call log:\n%s", b)
	}
}
