package host

import (
	"strings"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/testenv"
)

// Contract tests of the provider interface (toolhost:agent@0.2.0), on
// the probes that import it, through the scripted providers "fake" and
// "other" of the shared hub (testenv.Scripted says what each prompt does).

// providerGuests are the probes that import the provider interface: those
// built against 0.3.0 and the 0.2.0 fixtures.
var providerGuests = []guest{guestJS, guestGo, guestQJS, guestJS020, guestGo020, guestQJS020}

func userRequest(text string) map[string]any {
	return map[string]any{"messages": []map[string]any{
		{"role": "system", "content": "be brief"},
		{"role": "user", "content": text},
	}}
}

// chatResponse is a chat-response as the probe reports it.
type chatResponse struct {
	Message struct {
		Role      string
		Content   string
		ToolCalls []struct{ ID, Name, Arguments string }
	}
	FinishReason string
	Usage        struct{ InputTokens, OutputTokens uint32 }
	Model        string
}

// TestProviderGet: get of an unknown provider is not-found, of one not
// granted denied; a handle has its kind and name and drops.
func TestProviderGet(t *testing.T) {
	forGuestsOf(t, providerGuests, func(t *testing.T, g guest) {
		s := env(t)
		rs := s.probe(t, probeOpts{guest: g, providers: []string{"fake"}},
			step{"op": "get-provider", "name": "nope"},
			step{"op": "get-provider", "name": "other"},
			step{"op": "get-provider", "name": "fake", "as": "p"},
			step{"op": "kind", "h": "p"},
			step{"op": "name", "h": "p"},
			step{"op": "drop", "h": "p"},
		)
		checkSteps(t, rs, "err not-found", "err denied", `"p"`, `"scripted"`, `"fake"`, "true")
		if !strings.Contains(rs[1].Err.Message, `provider "other"`) {
			t.Errorf("denied message %q does not name the provider", rs[1].Err.Message)
		}
	})
}

// TestProviderChat: chat returns the whole response (text, finish reason,
// usage, model); the request's model, and tools taken from list-tools,
// reach the provider, whose tool calls name those tools; a request the
// contract refuses is invalid-argument.
func TestProviderChat(t *testing.T) {
	forGuestsOf(t, providerGuests, func(t *testing.T, g guest) {
		s := env(t)
		withModel := userRequest("echo hello, model")
		withModel["model"] = "big-1"
		withModel["maxTokens"] = 64
		withModel["temperature"] = 0.5
		withModel["stop"] = []string{"END"}
		tools := userRequest("tools")
		tools["toolChoice"] = map[string]any{"tag": "required"}
		rs := s.probe(t, probeOpts{guest: g},
			step{"op": "get-provider", "name": "fake", "as": "p"},
			step{"op": "get", "name": "mem", "as": "mem"},
			step{"op": "chat", "h": "p", "request": userRequest("echo hello, model")},
			step{"op": "chat", "h": "p", "request": withModel},
			step{"op": "chat", "h": "p", "request": tools, "tools-of": "mem"},
			step{"op": "chat", "h": "p", "request": map[string]any{"messages": []any{}}},
			step{"op": "chat", "h": "p", "request": map[string]any{"messages": []map[string]any{{"role": "tool", "content": "x"}}}},
			step{"op": "pending"},
		)
		checkSteps(t, rs, `"p"`, `"mem"`, "*", "*", "*", "err invalid-argument", "err invalid-argument", "0")
		r := okAs[chatResponse](t, rs[2])
		if r.Message.Role != "assistant" || r.Message.Content != "hello, model" || r.FinishReason != "stop" || r.Model != "scripted-1" ||
			r.Usage.InputTokens != uint32(len("be brief")+len("echo hello, model")) || r.Usage.OutputTokens != uint32(len("hello, model")) {
			t.Errorf("chat response %+v", r)
		}
		if r := okAs[chatResponse](t, rs[3]); r.Model != "big-1" {
			t.Errorf("model %q, want the request's big-1", r.Model)
		}
		r = okAs[chatResponse](t, rs[4])
		var names []string
		for _, tc := range r.Message.ToolCalls {
			names = append(names, tc.Name)
			if tc.Arguments != "{}" || tc.ID == "" {
				t.Errorf("tool call %+v", tc)
			}
		}
		if r.FinishReason != "tool-calls" || strings.Join(names, ",") != "echo,fail,gate,slow" {
			t.Errorf("tool calls %v (%s), want one per tool of mem", names, r.FinishReason)
		}
	})
}

// streamResult is what the probe's recv-stream reports.
type streamResult struct {
	Deltas  int
	Text    string
	End     *envelope
	Skipped []envelope
}

// TestProviderChatStream: chat-stream returns an id at once; chat-delta
// envelopes with that id follow, whose text concatenates to the response's,
// then exactly one chat-done; the stream is then closed and nothing more
// arrives. A failing stream ends with one error envelope after its deltas.
func TestProviderChatStream(t *testing.T) {
	forGuestsOf(t, providerGuests, func(t *testing.T, g guest) {
		s := env(t)
		const text = "a stream of text long enough to come in many deltas"
		rs := s.probe(t, probeOpts{guest: g},
			step{"op": "get-provider", "name": "fake", "as": "p"},
			step{"op": "chat-stream", "h": "p", "request": userRequest("echo " + text), "as": "s"},
			step{"op": "recv-stream", "id": "s", "timeout": 20000},
			step{"op": "is-open", "h": "p", "id": "s"},
			step{"op": "cancel", "h": "p", "id": "s"},
			step{"op": "chat-stream", "h": "p", "request": userRequest("fail"), "as": "f"},
			step{"op": "recv-stream", "id": "f", "timeout": 20000},
			step{"op": "recv", "timeout": 100},
		)
		checkSteps(t, rs, `"p"`, `"s"`, "*", "false", "false", `"f"`, "*", "null")
		ok := okAs[streamResult](t, rs[2])
		if ok.Text != text || ok.Deltas == 0 || ok.End == nil || envSummary(*ok.End) != "s chat-done stop "+text || len(ok.Skipped) != 0 {
			t.Errorf("stream: %+v", ok)
		}
		bad := okAs[streamResult](t, rs[6])
		if bad.Text != "partial" || bad.End == nil || envSummary(*bad.End) != "f error unavailable" {
			t.Errorf("failing stream: %+v", bad)
		}
	})
}

// TestProviderCancel: cancel of an open stream is true once and aborts
// the request (the provider sees its context end); is-open is then false
// and no envelope of the stream is received, its undelivered delta
// included. Dropping the handle does the same to its streams.
func TestProviderCancel(t *testing.T) {
	forGuestsOf(t, providerGuests, func(t *testing.T, g guest) {
		s := env(t)
		tag := "cancel-" + g.String()
		a := s.startProbe(t, probeOpts{guest: g},
			step{"op": "get-provider", "name": "fake", "as": "p"},
			step{"op": "chat-stream", "h": "p", "request": userRequest("hang " + tag), "as": "s"},
			step{"op": "is-open", "h": "p", "id": "s"},
			step{"op": "spin", "ms": 200}, // its "wait" delta is enqueued
			step{"op": "pending"},
			step{"op": "cancel", "h": "p", "id": "s"},
			step{"op": "cancel", "h": "p", "id": "s"},
			step{"op": "is-open", "h": "p", "id": "s"},
			step{"op": "chat-stream", "h": "p", "request": userRequest("hang drop-" + tag), "as": "d"},
			step{"op": "drop", "h": "p"},
			step{"op": "recv", "timeout": 300},
			step{"op": "pending"},
		)
		rs := finish(t, a)
		checkSteps(t, rs, `"p"`, `"s"`, "true", "true", "1", "true", "false", "false", `"d"`, "true", "null", "0")
		testenv.Recv(t, s.scripted.Cancelled(tag), 20*time.Second, "the provider to see the cancelled request end")
		testenv.Recv(t, s.scripted.Cancelled("drop-"+tag), 20*time.Second, "the provider to see the dropped handle's request end")
	})
}

// TestProviderStreamIDs: a tooling's is-open and cancel know nothing of stream ids,
// nor a provider's is-open and cancel of call ids: each ends only its own.
func TestProviderStreamIDs(t *testing.T) {
	forGuestsOf(t, providerGuests, func(t *testing.T, g guest) {
		s := env(t)
		rs := s.probe(t, probeOpts{guest: g},
			step{"op": "get-provider", "name": "fake", "as": "p"},
			step{"op": "get", "name": "mem", "as": "mem"},
			step{"op": "chat-stream", "h": "p", "request": userRequest("hang ids-" + g.String()), "as": "s"},
			step{"op": "call-tool", "h": "mem", "tool": "slow", "args": map[string]any{"tag": "ids-" + g.String()}, "as": "c"},
			step{"op": "is-open", "h": "mem", "id": "s"},
			step{"op": "cancel", "h": "mem", "id": "s"},
			step{"op": "cancel", "h": "p", "id": "c"},
			step{"op": "is-open", "h": "p", "id": "c"},
			step{"op": "cancel", "h": "p", "id": "s"},
			step{"op": "cancel", "h": "mem", "id": "c"},
		)
		checkSteps(t, rs, `"p"`, `"mem"`, `"s"`, `"c"`, "false", "false", "false", "false", "true", "true")
	})
}

// TestProviderChatStop: a blocking chat waiting on its model when the
// agent is stopped fails with cancelled, and its request is aborted.
func TestProviderChatStop(t *testing.T) {
	forGuestsOf(t, providerGuests, func(t *testing.T, g guest) {
		s := env(t)
		tag := "stop-" + g.String()
		a := s.startProbe(t, probeOpts{guest: g},
			step{"op": "get-provider", "name": "fake", "as": "p"},
			step{"op": "chat", "h": "p", "request": userRequest("hang " + tag)},
		)
		testenv.Recv(t, s.scripted.Started(tag), 20*time.Second, "the chat to reach the provider")
		a.Stop()
		testenv.Recv(t, s.scripted.Cancelled(tag), 20*time.Second, "the provider to see the request end")
		checkSteps(t, finish(t, a), `"p"`, "err cancelled")
	})
}
