package contract_test

import (
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/contract"
	"github.com/toolhostd/toolhostd/internal/inbox"
	"github.com/toolhostd/toolhostd/internal/policy"
	"github.com/toolhostd/toolhostd/internal/provider"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

// TestToolSpans: each tool call is an execute_tool span whose outcome is
// its status: ok with the MCP client's tools/call as its child, a tool
// error, a call the grant denies (a span of its own, with the refusal as
// an event, and no MCP request), a cancelled call (its event).
func TestToolSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
	e := newEnv(t, envOptions{tracer: tp})
	pol := policy.New("a", map[string]policy.Rules{"mem": {DenyTools: []string{"secret"}}}, policy.Options{})
	in := inbox.New(8)
	a := contract.NewAgent(e.hub, "a", in, contract.Options{Policy: pol, Tracer: tp})
	t.Cleanup(a.Close)
	h, err := a.Get("mem")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.CallToolBlocking(t.Context(), "echo", `{"text":"hi"}`); err != nil {
		t.Fatal(err)
	}
	if _, err := h.CallToolBlocking(t.Context(), "fail", `{"text":"no"}`); err != nil {
		t.Fatal(err)
	}
	if _, err := h.CallToolBlocking(t.Context(), "secret", `{}`); err == nil {
		t.Fatal("a denied tool was called")
	}
	id, err := h.CallTool("slow", `{"tag":"s1"}`)
	if err != nil {
		t.Fatal(err)
	}
	testenv.Recv(t, e.srv.SlowStarts(), 10*time.Second, "the slow tool to start")
	h.Cancel(id)

	byName := func(name string) []sdktrace.ReadOnlySpan {
		var out []sdktrace.ReadOnlySpan
		for _, s := range rec.Ended() {
			if s.Name() == name {
				out = append(out, s)
			}
		}
		return out
	}
	testenv.Eventually(t, 10*time.Second, "the cancelled call's span", func() bool { return len(byName("execute_tool slow")) == 1 })
	attr := func(s sdktrace.ReadOnlySpan, key string) string {
		for _, kv := range s.Attributes() {
			if string(kv.Key) == key {
				return kv.Value.String()
			}
		}
		return ""
	}
	hasEvent := func(s sdktrace.ReadOnlySpan, name string) bool {
		for _, ev := range s.Events() {
			if ev.Name == name {
				return true
			}
		}
		return false
	}
	for _, tc := range []struct {
		span, outcome, event string
		status               codes.Code
		mcpChild             bool
	}{
		{"execute_tool echo", "ok", "", codes.Unset, true},
		{"execute_tool fail", "tool-error", "", codes.Error, true},
		{"execute_tool secret", "denied", "toolhost.refused", codes.Error, false},
		{"execute_tool slow", "cancelled", "toolhost.cancelled", codes.Error, true},
	} {
		t.Run(tc.span, func(t *testing.T) {
			spans := byName(tc.span)
			if len(spans) != 1 {
				t.Fatalf("%d spans", len(spans))
			}
			s := spans[0]
			if got := attr(s, "toolhost.outcome"); got != tc.outcome {
				t.Errorf("outcome %q, want %q", got, tc.outcome)
			}
			if s.Status().Code != tc.status {
				t.Errorf("status %v %q, want %v", s.Status().Code, s.Status().Description, tc.status)
			}
			if attr(s, "gen_ai.operation.name") != "execute_tool" || attr(s, "toolhost.tooling") != "mem" {
				t.Errorf("attributes %v", s.Attributes())
			}
			if tc.event != "" && !hasEvent(s, tc.event) {
				t.Errorf("no event %s: %v", tc.event, s.Events())
			}
			var child sdktrace.ReadOnlySpan
			for _, c := range rec.Ended() {
				if c.Parent().SpanID() == s.SpanContext().SpanID() {
					child = c
				}
			}
			if (child != nil) != tc.mcpChild {
				t.Fatalf("MCP child %v, want %v", child != nil, tc.mcpChild)
			}
			if child != nil && (child.Name() != "tools/call "+tc.span[len("execute_tool "):] || attr(child, "mcp.method.name") != "tools/call" ||
				child.SpanKind().String() != "client") {
				t.Errorf("child %s kind %s attributes %v", child.Name(), child.SpanKind(), child.Attributes())
			}
		})
	}
}

// TestChatSpans: each model request is a chat {model} span with its
// provider, tokens and
// finish reason; a model the grant does not allow and a request over the
// token budget are spans with their code as error.type, and nothing of the
// prompt is recorded without content capture.
func TestChatSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
	e := newEnv(t, envOptions{})
	lim, err := provider.NewLimited(testenv.NewScripted("fake"), "thinker",
		&config.ProviderGrant{Models: []string{"scripted-*"}, TokensPerHour: 1}, provider.LimitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a := contract.NewAgent(e.hub, "thinker", inbox.New(8), contract.Options{
		Providers:      func(name string) (provider.Provider, bool) { return lim, name == "fake" },
		ProviderAccess: contract.ProviderAccess{Granted: func(string) bool { return true }},
		Tracer:         tp,
	})
	t.Cleanup(a.Close)
	ph, err := a.GetProvider("fake")
	if err != nil {
		t.Fatal(err)
	}
	req := func(model, text string) provider.Request {
		r := userReq(text)
		r.Model = model
		return r
	}
	for _, r := range []provider.Request{req("scripted-1", "echo hi"), req("other-model", "echo hi"), req("scripted-1", "echo again")} {
		_, _ = ph.Chat(t.Context(), r)
	}
	spans := rec.Ended()
	if len(spans) != 3 {
		t.Fatalf("%d spans, want 3", len(spans))
	}
	for i, want := range []struct {
		name, model, errType string
	}{
		{"chat scripted-1", "scripted-1", ""},
		{"chat other-model", "other-model", "denied"},
		{"chat scripted-1", "scripted-1", "busy"},
	} {
		s := spans[i]
		got := map[string]string{}
		for _, kv := range s.Attributes() {
			got[string(kv.Key)] = kv.Value.String()
		}
		if s.Name() != want.name || got["gen_ai.request.model"] != want.model || got["gen_ai.provider.name"] != "scripted" ||
			got["gen_ai.operation.name"] != "chat" || got["error.type"] != want.errType {
			t.Errorf("span %d: %s %v, want %+v", i, s.Name(), got, want)
		}
		if want.errType == "" && (got["gen_ai.usage.input_tokens"] == "" || got["gen_ai.response.finish_reasons"] != `["stop"]` || s.Status().Code != codes.Unset) {
			t.Errorf("span %d: %v status %v", i, got, s.Status())
		}
		if want.errType != "" && s.Status().Code != codes.Error {
			t.Errorf("span %d: status %v", i, s.Status())
		}
		if _, ok := got["gen_ai.input.messages"]; ok {
			t.Errorf("span %d records the prompt without capture", i)
		}
	}
}
