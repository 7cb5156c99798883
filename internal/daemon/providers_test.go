package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/control"
	"github.com/toolhostd/toolhostd/internal/provider/providertest"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

// providerTable is a [provider.<name>] for a fake server.
func providerTable(t testing.TB, name string, srv *providertest.Server) string {
	c := srv.Config(t)
	return fmt.Sprintf("[provider.%s]\nkind = %q\nbase_url = %q\napi_key = %q\nmodel = %q\ntimeout = \"30s\"\nmax_retries = 0\n\n",
		name, c.Kind, c.BaseURL, c.APIKey, c.Model)
}

// TestServeProviders: JS agents of a daemon chat through the real openai
// kind against a fake Chat Completions server. The assistant example runs
// the tool loop with chat-stream (the model asks for gosrv's echo, the
// agent calls it and sends the result back, the model answers); a probe
// cancels a stream whose first token is slow and the server sees the
// request aborted; an agent without the provider in its providers is
// denied, and one asking for a model its grant does not allow is denied
// before anything is sent. The audit log and the metrics have the model
// requests.
func TestServeProviders(t *testing.T) {
	dir := t.TempDir()
	auditPath := filepath.Join(dir, "audit.jsonl")
	gpt := providertest.New(t, providertest.OpenAI)
	gpt.Script(
		providertest.Reply{ToolCalls: []providertest.ToolCall{{ID: "call_1", Name: "echo", Arguments: []string{`{"text":`, `"hi from the tool"}`}}}, InputTokens: 20, OutputTokens: 8},
		providertest.Reply{Text: []string{"The tool ", "said: hi ", "from the tool"}, InputTokens: 40, OutputTokens: 6},
	)
	slow := providertest.New(t, providertest.OpenAI)
	slow.SetDefault(providertest.Reply{Text: []string{"late"}, Delay: time.Minute})

	cfg := strings.Replace(headerState(t, filepath.Join(dir, "state")), "[host]\n", fmt.Sprintf("[host]\naudit_log = %q\n", auditPath), 1) +
		goTooling("gosrv", filepath.Join(dir, "gosrv.pid"), "") + providerTable(t, "gpt", gpt) + providerTable(t, "slow", slow) +
		fmt.Sprintf(`
[agent.assistant]
component = %q
toolings = ["gosrv"]
providers = ["gpt"]
input = %q
restart = "never"

[agent.assistant.grants.gpt]
audit_arguments = true
models = ["fake-*"]

[agent.picky]
component = %q
providers = ["gpt"]
input = %q
restart = "never"

[agent.picky.grants.gpt]
models = ["fake-*"]

[agent.canceller]
component = %q
providers = ["slow"]
input = %q
restart = "never"

[agent.outsider]
component = %q
toolings = ["gosrv"]
input = %q
restart = "never"
`,
			testenv.Agent(t, "agents", "assistant"),
			`{"provider":"gpt","toolings":["gosrv"],"prompt":"echo hi for me","stream":true}`,
			testenv.Agent(t, "test-agents", "probe"),
			probeInput(t,
				map[string]any{"op": "get-provider", "name": "gpt", "as": "p"},
				map[string]any{"op": "chat", "h": "p", "request": map[string]any{"model": "forbidden-1", "messages": []map[string]any{{"role": "user", "content": "hi"}}}},
			),
			testenv.Agent(t, "test-agents", "probe"),
			probeInput(t,
				map[string]any{"op": "get-provider", "name": "slow", "as": "p"},
				map[string]any{"op": "chat-stream", "h": "p", "request": map[string]any{"messages": []map[string]any{{"role": "user", "content": "take your time"}}}, "as": "s"},
				map[string]any{"op": "spin", "ms": 500},
				map[string]any{"op": "is-open", "h": "p", "id": "s"},
				map[string]any{"op": "cancel", "h": "p", "id": "s"},
				map[string]any{"op": "recv", "timeout": 300},
			),
			testenv.Agent(t, "agents", "assistant"),
			`{"provider":"gpt","toolings":["gosrv"]}`,
		)
	r := serve(t, writeConfig(t, dir, cfg), Options{Metrics: true})
	m := r.d.Metrics()

	r.waitAgent(t, "assistant", "exited", func(a control.AgentStatus) bool { return a.State == "exited" })
	if out, _ := r.output("assistant"); out != "The tool said: hi from the tool" {
		t.Fatalf("assistant said %q", out)
	}
	reqs := gpt.Requests()
	if len(reqs) != 2 || !reqs[0].Stream || !reqs[0].IncludeUsage || strings.Join(reqs[0].Tools, ",") != "echo,slow" ||
		!strings.Contains(string(reqs[1].Body), "hi from the tool") || reqs[1].APIKey() != providertest.DefaultKey {
		t.Fatalf("the fake saw %d requests: %+v", len(reqs), reqs)
	}

	r.waitAgent(t, "picky", "exited", func(a control.AgentStatus) bool { return a.State == "exited" })
	if out, _ := r.output("picky"); !strings.Contains(out, `"err":{"code":"denied"`) || !strings.Contains(out, "forbidden-1") {
		t.Errorf("picky said %s", out)
	}
	if n := len(gpt.Requests()); n != 2 {
		t.Errorf("the fake saw %d requests, want the assistant's 2 only", n)
	}

	r.waitAgent(t, "canceller", "exited", func(a control.AgentStatus) bool { return a.State == "exited" })
	if out, _ := r.output("canceller"); !strings.Contains(out, `{"op":"is-open","ok":true},{"op":"cancel","ok":true},{"op":"recv","ok":null}`) {
		t.Fatalf("canceller said %s", out)
	}
	testenv.Eventually(t, 10*time.Second, "the fake to have the slow request", func() bool { return slow.Last() != nil })
	select {
	case <-slow.Last().Aborted():
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled stream's HTTP request was not aborted")
	}

	out := r.waitAgent(t, "outsider", "failed", func(a control.AgentStatus) bool { return a.State == "failed" })
	if !strings.Contains(out.LastError, "provider gpt: denied") {
		t.Errorf("outsider: %+v", out)
	}

	r.stop(t)
	var chats []map[string]any
	f, err := os.Open(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l map[string]any
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		if l["provider"] != nil {
			chats = append(chats, l)
		}
	}
	byOutcome := map[string]int{}
	for _, l := range chats {
		byOutcome[fmt.Sprint(l["agent"], " ", l["op"], " ", l["outcome"])]++
	}
	want := map[string]int{"assistant chat-stream ok": 2, "canceller chat-stream cancelled": 1, "outsider get-provider denied": 1, "picky chat denied": 1}
	if fmt.Sprint(byOutcome) != fmt.Sprint(want) {
		t.Errorf("audited model requests %v, want %v", byOutcome, want)
	}
	timed := 0 // the text turn has a first token; the tool-call turn streamed no text
	for _, l := range chats {
		if l["agent"] != "assistant" {
			continue
		}
		if l["model"] != providertest.DefaultModel || l["request"] == nil || l["request_sha256"] == nil {
			t.Errorf("assistant's audit line %v", l)
		}
		if l["first_token_ms"] != nil {
			timed++
		}
	}
	if timed != 1 {
		t.Errorf("%d of the assistant's lines have first_token_ms, want 1", timed)
	}
	if got, _ := metricValue(t, m, "toolhostd_provider_tokens_total", map[string]string{"agent": "assistant", "provider": "gpt", "direction": "input"}); got != 60 {
		t.Errorf("input tokens = %v, want 60", got)
	}
	if got, _ := metricValue(t, m, "toolhostd_provider_requests_total", map[string]string{"agent": "canceller", "outcome": "cancelled"}); got != 1 {
		t.Errorf("cancelled requests = %v, want 1", got)
	}
}

// TestServeSampling: a tooling whose sampling names a provider gets its
// server's sampling requests answered by that provider's model: the
// daemon's server-everything offers trigger-sampling-request and the
// fake's answer comes back in its result, maxTokens capped by the table.
// The request is logged, audited (op sampling, agent tooling:everything)
// and counted in the provider metrics under that agent name.
func TestServeSampling(t *testing.T) {
	dir := t.TempDir()
	auditPath := filepath.Join(dir, "audit.jsonl")
	gpt := providertest.New(t, providertest.OpenAI)
	gpt.SetDefault(providertest.Reply{Text: []string{"sampled ", "through gpt"}, InputTokens: 11, OutputTokens: 4})
	cfg := strings.Replace(header(t), "[host]\n", fmt.Sprintf("[host]\naudit_log = %q\n", auditPath), 1) +
		providerTable(t, "gpt", gpt) + fmt.Sprintf(`
[tooling.everything]
command = "node"
args = [%q, "stdio"]
connect_timeout = "30s"
sampling = { provider = "gpt", max_tokens = 32 }
`, everythingEntry(t))
	r := serve(t, writeConfig(t, dir, cfg), Options{Metrics: true})
	m := r.d.Metrics()
	testenv.Eventually(t, 60*time.Second, "the tooling connected", r.d.Ready)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := r.d.g.Toolings["everything"].CallTool(ctx, "trigger-sampling-request", json.RawMessage(`{"prompt": "hello", "maxTokens": 500}`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Value, "sampled through gpt") {
		t.Errorf("result %s lacks the model's answer", res.Value)
	}
	if last := gpt.Last(); last == nil || last.MaxTokens != 32 || last.System != "You are a helpful test server." {
		t.Errorf("model request %+v", last)
	}

	logged := r.logs.FilterMessage("sampling request").AllUntimed()
	if len(logged) != 1 {
		t.Fatalf("%d sampling log lines, want 1", len(logged))
	}
	if f := logged[0].ContextMap(); f["tooling"] != "everything" || f["provider"] != "gpt" || f["model"] != providertest.DefaultModel || f["outcome"] != "ok" || f["duration"] == nil {
		t.Errorf("sampling log line %v", f)
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"toolhostd_provider_tokens_total", map[string]string{"agent": "tooling:everything", "provider": "gpt", "model": providertest.DefaultModel, "direction": "input"}, 11},
		{"toolhostd_provider_tokens_total", map[string]string{"agent": "tooling:everything", "provider": "gpt", "model": providertest.DefaultModel, "direction": "output"}, 4},
		{"toolhostd_provider_requests_total", map[string]string{"agent": "tooling:everything", "provider": "gpt", "outcome": "ok"}, 1},
		{"toolhostd_provider_request_duration_seconds", map[string]string{"provider": "gpt", "model": providertest.DefaultModel}, 1},
	} {
		if got, _ := metricValue(t, m, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}

	r.stop(t)
	b, err := os.ReadFile(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var v map[string]any
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("audit line %q: %v", l, err)
		}
		if v["op"] == "sampling" {
			lines = append(lines, v)
		}
	}
	if len(lines) != 1 {
		t.Fatalf("%d sampling audit lines in:\n%s", len(lines), b)
	}
	l := lines[0]
	for k, want := range map[string]any{
		"agent": "tooling:everything", "tooling": "everything", "provider": "gpt", "model": providertest.DefaultModel,
		"outcome": "ok", "input_tokens": 11.0, "output_tokens": 4.0,
	} {
		if l[k] != want {
			t.Errorf("audit %s = %v, want %v (line %v)", k, l[k], want, l)
		}
	}
	if l["request_sha256"] == nil || l["request_bytes"] == nil || l["duration_ms"] == nil {
		t.Errorf("audit line lacks the request's size, sha256 or duration: %v", l)
	}
	if l["request"] != nil {
		t.Errorf("audit line carries the request's text: %v", l["request"])
	}
}
