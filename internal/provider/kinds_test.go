package provider_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/provider"
	"github.com/toolhostd/toolhostd/internal/provider/providertest"
	"github.com/toolhostd/toolhostd/internal/testenv"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

var apis = []providertest.API{providertest.OpenAI, providertest.Anthropic}

// open opens the real kind of srv's API against it; mut edits the config
// first.
func open(t *testing.T, srv *providertest.Server, mut func(*config.Provider)) provider.Provider {
	t.Helper()
	cfg := srv.Config(t)
	if mut != nil {
		mut(&cfg)
	}
	p, err := provider.Open("fake", cfg, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.(interface{ Close() error }).Close() })
	return p
}

// chat runs req through Chat or ChatStream and returns the response, the
// deltas (streamed) and the error.
func chat(ctx context.Context, p provider.Provider, stream bool, req provider.Request) (provider.Response, []string, error) {
	if !stream {
		r, err := p.Chat(ctx, req)
		return r, nil, err
	}
	var deltas []string
	r, err := p.ChatStream(ctx, req, func(s string) { deltas = append(deltas, s) })
	return r, deltas, err
}

func modes(t *testing.T, f func(t *testing.T, api providertest.API, stream bool)) {
	for _, api := range apis {
		for _, stream := range []bool{false, true} {
			name := api.String() + "/chat"
			if stream {
				name = api.String() + "/chat-stream"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				f(t, api, stream)
			})
		}
	}
}

func u32(n uint32) *uint32   { return &n }
func f32(x float32) *float32 { return &x }
func str(s string) *string   { return &s }

var apiToolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// TestChat: a conversation with a system prompt, tools whose MCP names the
// APIs would refuse, an earlier tool call and its result, through the real
// kind; the answer's text, tool calls (mapped back to the MCP names, the
// streamed arguments merged), finish reason, usage and model; and what
// the API received.
func TestChat(t *testing.T) {
	modes(t, func(t *testing.T, api providertest.API, stream bool) {
		srv := providertest.New(t, api)
		p := open(t, srv, func(c *config.Provider) {
			c.Headers = map[string]string{"X-Fake-Trace": "t-1"}
			c.MaxTokens = 1000
		})
		readName := "fs/read.file" // neither API accepts it as it is
		long := strings.Repeat("x", 80)
		req := provider.Request{
			Messages: []provider.Message{
				{Role: provider.RoleSystem, Content: "You are terse."},
				{Role: provider.RoleUser, Content: "Read /a."},
				{Role: provider.RoleAssistant, ToolCalls: []provider.ToolCall{{ID: "call_0", Name: long, Arguments: `{}`}}},
				{Role: provider.RoleTool, ToolCallID: "call_0", Content: "nothing"},
				{Role: provider.RoleUser, Content: "Again, both."},
			},
			Tools: []tooling.Tool{
				{Name: readName, Description: str("reads a file"), InputSchema: `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`},
				{Name: "echo", InputSchema: `{"type":"object","properties":{"text":{"type":"string"}}}`},
				{Name: long, InputSchema: `{"type":"object"}`},
			},
			ToolChoice:  &provider.ToolChoice{Mode: provider.ToolChoiceAuto},
			MaxTokens:   u32(100000), // capped by max_tokens = 1000
			Temperature: f32(0.5),
		}
		// The API name of readName is what the fake must answer with: learn
		// it from a first request, then script the answer.
		srv.SetDefault(providertest.Reply{Text: []string{"probe"}})
		if _, _, err := chat(context.Background(), p, false, provider.Request{Messages: req.Messages, Tools: req.Tools}); err != nil {
			t.Fatalf("probe: %v", err)
		}
		first := srv.Requests()[0]
		if len(first.Tools) != 3 || first.Tools[1] != "echo" || first.Tools[0] == readName {
			t.Fatalf("tools offered = %q", first.Tools)
		}
		for _, n := range first.Tools {
			if !apiToolName.MatchString(n) {
				t.Errorf("tool name %q is not acceptable to the API", n)
			}
		}
		srv.Script(providertest.Reply{
			Text: []string{"Let me ", "read ", "both."},
			ToolCalls: []providertest.ToolCall{
				{ID: "call_1", Name: first.Tools[0], Arguments: []string{`{"pa`, `th":"/a`, `"}`}},
				{ID: "call_2", Name: "echo", Arguments: []string{`{"text"`, `:"hi"}`}},
			},
			InputTokens: 31, OutputTokens: 17, Model: "fake-model-1-2026",
		})

		resp, deltas, err := chat(context.Background(), p, stream, req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Message.Role != provider.RoleAssistant || resp.Message.Content != "Let me read both." {
			t.Errorf("message = %+v", resp.Message)
		}
		if stream && strings.Join(deltas, "") != resp.Message.Content {
			t.Errorf("deltas %q do not make the text %q", deltas, resp.Message.Content)
		}
		if stream && len(deltas) != 3 {
			t.Errorf("deltas = %q, want the 3 pieces", deltas)
		}
		want := []provider.ToolCall{{ID: "call_1", Name: readName, Arguments: `{"path":"/a"}`}, {ID: "call_2", Name: "echo", Arguments: `{"text":"hi"}`}}
		if fmt.Sprint(resp.Message.ToolCalls) != fmt.Sprint(want) {
			t.Errorf("tool calls = %+v\nwant %+v", resp.Message.ToolCalls, want)
		}
		if resp.FinishReason != provider.FinishToolCalls || resp.Usage != (provider.Usage{InputTokens: 31, OutputTokens: 17}) || resp.Model != "fake-model-1-2026" {
			t.Errorf("finish %v, usage %+v, model %q", resp.FinishReason, resp.Usage, resp.Model)
		}

		got := srv.Last()
		if got.System != "You are terse." || got.MaxTokens != 1000 || got.Model != providertest.DefaultModel || got.Stream != stream {
			t.Errorf("request: system %q, max_tokens %d, model %q, stream %v", got.System, got.MaxTokens, got.Model, got.Stream)
		}
		if got.Header.Get("X-Fake-Trace") != "t-1" {
			t.Errorf("configured header not sent: %v", got.Header)
		}
		if got.Header.Get("Authorization") != "Bearer "+srv.Key {
			t.Errorf("Authorization = %q, want the key as a bearer token", got.Header.Get("Authorization"))
		}
		if api == providertest.OpenAI && stream && !got.IncludeUsage {
			t.Error("the stream did not ask for the usage chunk")
		}
		if api == providertest.OpenAI && (got.Temperature == nil || *got.Temperature != 0.5) {
			t.Errorf("temperature = %v", got.Temperature)
		}
		if api == providertest.Anthropic && got.Header.Get("Anthropic-Version") == "" {
			t.Error("no anthropic-version header")
		}
		// The history went out with the long name mapped as in the tools,
		// and the tool result attached to its call.
		body := string(got.Body)
		if !strings.Contains(body, `"call_0"`) || strings.Contains(body, long) || !strings.Contains(body, first.Tools[2]) || !strings.Contains(body, "nothing") {
			t.Errorf("history not sent as expected: %s", body)
		}
		if api == providertest.Anthropic && strings.Contains(body, `"role":"system"`) {
			t.Errorf("the system prompt went as a message: %s", body)
		}
	})
}

// TestFinishAndDefaults: finish reasons map to the contract's, and a
// request's max_tokens below the cap is kept, none gets the default.
func TestFinishAndDefaults(t *testing.T) {
	type tc struct {
		finish map[providertest.API]string
		want   provider.FinishReason
	}
	cases := []tc{
		{map[providertest.API]string{providertest.OpenAI: "stop", providertest.Anthropic: "end_turn"}, provider.FinishStop},
		{map[providertest.API]string{providertest.OpenAI: "length", providertest.Anthropic: "max_tokens"}, provider.FinishLength},
		{map[providertest.API]string{providertest.OpenAI: "content_filter", providertest.Anthropic: "refusal"}, provider.FinishContentFilter},
		{map[providertest.API]string{providertest.OpenAI: "weird", providertest.Anthropic: "pause_turn"}, provider.FinishOther},
	}
	modes(t, func(t *testing.T, api providertest.API, stream bool) {
		srv := providertest.New(t, api)
		p := open(t, srv, nil)
		for i, c := range cases {
			srv.Script(providertest.Reply{Text: []string{"x"}, Finish: c.finish[api]})
			mt := []*uint32{nil, u32(7)}[i%2]
			r, _, err := chat(context.Background(), p, stream, provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Content: "hi"}}, MaxTokens: mt, Model: "other-model"})
			if err != nil {
				t.Fatal(err)
			}
			if r.FinishReason != c.want {
				t.Errorf("%q: finish %v, want %v", c.finish[api], r.FinishReason, c.want)
			}
			wantMax := config.DefaultProviderMaxTokens
			if mt != nil {
				wantMax = 7
			}
			if got := srv.Last(); got.MaxTokens != wantMax || got.Model != "other-model" {
				t.Errorf("max_tokens %d (want %d), model %q", got.MaxTokens, wantMax, got.Model)
			}
		}
	})
}

func codeOf(t *testing.T, err error) tooling.ErrorCode {
	t.Helper()
	var te *tooling.Error
	if !errors.As(err, &te) {
		t.Fatalf("error %v (%T) is not a *tooling.Error", err, err)
	}
	return te.Code
}

// TestFaults: every fault the fake plays, through both kinds, whole and
// streamed, gives the contract's code, no response and no secret.
func TestFaults(t *testing.T) {
	type fault struct {
		name     string
		replies  []providertest.Reply // scripted; then the default
		def      *providertest.Reply
		mut      func(*config.Provider)
		wrongKey bool
		want     tooling.ErrorCode
		requests int      // how many the server must have seen (0: not checked)
		msg      []string // in the message
		ok       bool     // succeeds
		check    func(t *testing.T, reqs []*providertest.Request)
		// streamOnly: a fault of streams (whole replies are not run)
		streamOnly bool
	}
	faults := []fault{
		{name: "429 with Retry-After, then success", replies: []providertest.Reply{{Status: 429, RetryAfter: "1"}},
			mut: func(c *config.Provider) { c.MaxRetries = 1 }, ok: true, requests: 2,
			check: func(t *testing.T, reqs []*providertest.Request) {
				if gap := reqs[1].Time.Sub(reqs[0].Time); gap < 900*time.Millisecond {
					t.Errorf("retried after %v, before the Retry-After of 1s", gap)
				}
			}},
		{name: "429 past max_retries", def: &providertest.Reply{Status: 429, RetryAfter: "0"},
			mut: func(c *config.Provider) { c.MaxRetries = 1 }, want: tooling.CodeBusy, requests: 2, msg: []string{"429", "after 1 retry"}},
		{name: "500 always", def: &providertest.Reply{Status: 500},
			mut: func(c *config.Provider) { c.MaxRetries = 2 }, want: tooling.CodeUnavailable, requests: 3, msg: []string{"500", "after 2 retries", "scripted failure 500"}},
		{name: "401", wrongKey: true, want: tooling.CodeDenied, requests: 1, msg: []string{`provider "fake"`, "provider.fake.api_key", "401"}},
		{name: "stream cut mid-way", replies: []providertest.Reply{{Text: []string{"a", "b", "c"}, Fault: providertest.Fault{Cut: true}}}, want: tooling.CodeUnavailable, requests: 1},
		{name: "malformed chunk", replies: []providertest.Reply{{Text: []string{"a", "b"}, Fault: providertest.Fault{Malformed: true}}}, want: tooling.CodeProtocol, requests: 1, msg: []string{"malformed"}},
		{name: "first token later than the timeout", replies: []providertest.Reply{{Text: []string{"late"}, Delay: 10 * time.Second}},
			mut: func(c *config.Provider) { c.Timeout = config.Duration{Duration: 300 * time.Millisecond} }, want: tooling.CodeTimeout, requests: 1, msg: []string{"provider.fake.timeout"}},
		{name: "error event mid-stream", replies: []providertest.Reply{{Text: []string{"a", "b"}, Fault: providertest.Fault{ErrorEvent: true}}}, want: tooling.CodeUnavailable, requests: 1, streamOnly: true, msg: []string{"overloaded"}},
		{name: "400", replies: []providertest.Reply{{Status: 400}}, want: tooling.CodeInvalidArgument, requests: 1, msg: []string{"scripted failure 400"}},
	}
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			modes(t, func(t *testing.T, api providertest.API, stream bool) {
				if f.streamOnly && !stream {
					return
				}
				srv := providertest.New(t, api)
				cfgKey := srv.Key
				p := open(t, srv, f.mut)
				if f.wrongKey {
					srv.SetKey("the-right-key-9a7")
				}
				srv.Script(f.replies...)
				if f.def != nil {
					srv.SetDefault(*f.def)
				}
				resp, deltas, err := chat(context.Background(), p, stream, provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Content: "hi"}}})
				reqs := srv.Requests()
				if f.requests != 0 && len(reqs) != f.requests {
					t.Errorf("the server saw %d requests, want %d", len(reqs), f.requests)
				}
				if f.ok {
					if err != nil {
						t.Fatalf("want success, got %v", err)
					}
					if resp.Message.Content == "" {
						t.Errorf("empty response %+v", resp)
					}
				} else {
					if err == nil {
						t.Fatalf("want %v, got a response %+v", f.want, resp)
					}
					t.Logf("error: %v", err)
					if c := codeOf(t, err); c != f.want {
						t.Errorf("code %v, want %v: %v", c, f.want, err)
					}
					if resp.Message.Content != "" || resp.Message.ToolCalls != nil || resp.Usage != (provider.Usage{}) {
						t.Errorf("a failure came with a response: %+v", resp)
					}
					for _, m := range f.msg {
						if !strings.Contains(err.Error(), m) {
							t.Errorf("message %q lacks %q", err, m)
						}
					}
					for _, secret := range []string{cfgKey, "the-right-key-9a7"} {
						if strings.Contains(err.Error(), secret) {
							t.Errorf("message %q holds a key", err)
						}
					}
				}
				if f.name == "stream cut mid-way" && stream && strings.Join(deltas, "") != "a" {
					t.Errorf("deltas before the cut = %q", deltas)
				}
				if f.check != nil && len(reqs) >= f.requests {
					f.check(t, reqs)
				}
			})
		})
	}
}

// TestCancelSlowFirstToken: cancelling while the first token is awaited
// gives cancelled at once, and the server sees the request aborted; the
// caller's own deadline gives timeout.
func TestCancelSlowFirstToken(t *testing.T) {
	modes(t, func(t *testing.T, api providertest.API, stream bool) {
		srv := providertest.New(t, api)
		p := open(t, srv, nil)
		srv.Script(providertest.Reply{Text: []string{"late"}, Delay: time.Minute})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := testenv.Poll(10*time.Second, func() bool { return len(srv.Requests()) > 0 }); err != nil {
				t.Errorf("%v waiting for the request at the server", err)
			}
			cancel()
		}()
		_, _, err := chat(ctx, p, stream, provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Content: "hi"}}})
		wg.Wait()
		if err == nil || codeOf(t, err) != tooling.CodeCancelled {
			t.Fatalf("want cancelled, got %v", err)
		}
		select {
		case <-srv.Last().Aborted():
		case <-time.After(10 * time.Second):
			t.Fatal("the server never saw the request aborted")
		}

		srv.Script(providertest.Reply{Text: []string{"late"}, Delay: time.Minute})
		dctx, dcancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer dcancel()
		_, _, err = chat(dctx, p, stream, provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Content: "hi"}}})
		if err == nil || codeOf(t, err) != tooling.CodeTimeout {
			t.Fatalf("want timeout, got %v", err)
		}
	})
}

// TestUnsetKeyVariable: an api_key naming an unset variable fails the
// request, naming the key and the variable, and sends nothing.
func TestUnsetKeyVariable(t *testing.T) {
	for _, api := range apis {
		t.Run(api.String(), func(t *testing.T) {
			srv := providertest.New(t, api)
			p := open(t, srv, func(c *config.Provider) { c.APIKey = "${env:TOOLHOSTD_PROVIDERTEST_UNSET}" })
			_, err := p.Chat(context.Background(), provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Content: "hi"}}})
			if err == nil || codeOf(t, err) != tooling.CodeUnavailable || !strings.Contains(err.Error(), "api_key") || !strings.Contains(err.Error(), "TOOLHOSTD_PROVIDERTEST_UNSET") {
				t.Fatalf("got %v", err)
			}
			if n := len(srv.Requests()); n != 0 {
				t.Errorf("%d requests sent", n)
			}
		})
	}
}

// TestListModels: the kinds list the endpoint's models.
func TestListModels(t *testing.T) {
	for _, api := range apis {
		t.Run(api.String(), func(t *testing.T) {
			srv := providertest.New(t, api)
			srv.SetModels("m-a", "m-b")
			p := open(t, srv, nil)
			ms, err := p.(provider.ModelLister).ListModels(context.Background())
			if err != nil || fmt.Sprint(ms) != "[m-a m-b]" {
				t.Fatalf("ListModels = %v, %v", ms, err)
			}
			if provider.DefaultModel(p) != providertest.DefaultModel || p.Kind() != api.String() || p.Name() != "fake" {
				t.Errorf("default model %q, kind %q, name %q", provider.DefaultModel(p), p.Kind(), p.Name())
			}
			srv.SetKey("other")
			if _, err := p.(provider.ModelLister).ListModels(context.Background()); err == nil || codeOf(t, err) != tooling.CodeDenied {
				t.Errorf("wrong key: %v", err)
			}
		})
	}
}

// TestToolOfferedTwice: a request offering one tool twice is refused
// before anything is sent.
func TestToolOfferedTwice(t *testing.T) {
	for _, api := range apis {
		t.Run(api.String(), func(t *testing.T) {
			srv := providertest.New(t, api)
			p := open(t, srv, nil)
			req := hi
			req.Tools = []tooling.Tool{{Name: "a.b"}, {Name: "a.b"}}
			if _, err := p.Chat(context.Background(), req); err == nil || codeOf(t, err) != tooling.CodeInvalidArgument || !strings.Contains(err.Error(), "offered twice") {
				t.Fatalf("got %v", err)
			}
			if n := len(srv.Requests()); n != 0 {
				t.Errorf("%d requests sent", n)
			}
		})
	}
}
