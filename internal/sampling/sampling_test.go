//lint:file-ignore SA1019 the MCP 2025-11-25 sampling feature is deprecated only from protocol 2026-07-28, which toolhostd does not speak

package sampling_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/metrics"
	"github.com/toolhostd/toolhostd/internal/provider"
	"github.com/toolhostd/toolhostd/internal/provider/providertest"
	"github.com/toolhostd/toolhostd/internal/sampling"
	"github.com/toolhostd/toolhostd/internal/testenv"
	"github.com/toolhostd/toolhostd/internal/tooling"
	"github.com/toolhostd/toolhostd/internal/tooling/mcpclient"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// setup parses a config with the fake as provider gpt and server-everything
// with the given sampling table, and opens the provider.
func setup(t *testing.T, srv *providertest.Server, samplingTable string) (*config.Config, provider.Provider) {
	t.Helper()
	pc := srv.Config(t)
	doc := fmt.Sprintf("version = 1\n[provider.gpt]\nkind = %q\nbase_url = %q\napi_key = %q\nmodel = %q\nmax_retries = 0\n"+
		"[tooling.everything]\ncommand = \"node\"\nargs = [%q, \"stdio\"]\nconnect_timeout = \"30s\"\nsampling = %s\n",
		pc.Kind, pc.BaseURL, pc.APIKey, pc.Model, testenv.NPMServer(t, "server-everything"), samplingTable)
	cfg, err := config.Parse("/cfg/t.toml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	p, err := provider.Open("gpt", *cfg.Provider["gpt"], zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	return cfg, p
}

// TestSamplingThroughProvider: server-everything offers its
// trigger-sampling-request tool once the client advertises sampling, and
// its sampling/createMessage is answered by the provider: the server's
// system prompt and message reach the model, maxTokens is capped by the
// sampling table, the model's text comes back in the tool's result.
func TestSamplingThroughProvider(t *testing.T) {
	srv := providertest.New(t, providertest.OpenAI)
	cfg, p := setup(t, srv, `{ provider = "gpt", model = "sampler-model", max_tokens = 64 }`)
	tc := cfg.Tooling["everything"]
	s := sampling.New(p, "everything", *tc.Sampling, sampling.Options{})
	m, err := mcpclient.New(tc, zaptest.NewLogger(t), mcpclient.Options{Sampler: s.CreateMessage})
	if err != nil {
		t.Fatal(err)
	}
	testenv.ServeTooling(t, m, nil)

	srv.Script(providertest.Reply{Text: []string{"a sampled ", "answer"}})
	callCtx, stop := context.WithTimeout(context.Background(), 60*time.Second)
	defer stop()
	testenv.Eventually(t, 60*time.Second, "a session with server-everything", func() bool { return m.Status().Connected })
	res, err := m.CallTool(callCtx, "trigger-sampling-request", json.RawMessage(`{"prompt": "say something", "maxTokens": 1000}`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Value, "a sampled answer") {
		t.Errorf("tool result %s lacks the model's answer", res.Value)
	}
	r := srv.Last()
	if r == nil {
		t.Fatal("no request reached the model")
	}
	if r.System != "You are a helpful test server." || r.MaxTokens != 64 || r.Model != "sampler-model" ||
		!strings.Contains(string(r.Body), "Resource trigger-sampling-request context: say something") {
		t.Errorf("model request: system %q, max_tokens %d, model %q, body %s", r.System, r.MaxTokens, r.Model, r.Body)
	}
	if r.Temperature == nil || *r.Temperature < 0.69 || *r.Temperature > 0.71 {
		t.Errorf("temperature %v, want the server's 0.7", r.Temperature)
	}
}

// TestSamplingRefusals: what the sampler refuses without asking the model,
// and how the model is chosen from the server's hints; every request,
// refused or answered, is reported with its outcome.
func TestSamplingRefusals(t *testing.T) {
	srv := providertest.New(t, providertest.OpenAI)
	_, p := setup(t, srv, `{ provider = "gpt" }`)
	text := func(s string) []*mcp.SamplingMessage {
		return []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: s}}}
	}
	for _, tc := range []struct {
		name    string
		cfg     config.Sampling
		params  []*mcp.CreateMessageParams // sent in turn; the last one is checked
		code    tooling.ErrorCode          // with refused
		refused bool
		model   string // the model asked, when answered
	}{
		{"answered", config.Sampling{Provider: "gpt"}, []*mcp.CreateMessageParams{{Messages: text("hi"), MaxTokens: 10}}, 0, false, providertest.DefaultModel},
		{"hint allowed", config.Sampling{Provider: "gpt", Model: "base", Models: []string{"fast-*"}},
			[]*mcp.CreateMessageParams{{Messages: text("hi"), ModelPreferences: &mcp.ModelPreferences{Hints: []*mcp.ModelHint{{Name: "slow-1"}, {Name: "fast-2"}}}}}, 0, false, "fast-2"},
		{"hint not allowed", config.Sampling{Provider: "gpt", Model: "base", Models: []string{"fast-*"}},
			[]*mcp.CreateMessageParams{{Messages: text("hi"), ModelPreferences: &mcp.ModelPreferences{Hints: []*mcp.ModelHint{{Name: "slow-1"}}}}}, 0, false, "base"},
		{"context", config.Sampling{Provider: "gpt"}, []*mcp.CreateMessageParams{{Messages: text("hi"), IncludeContext: "thisServer"}}, tooling.CodeUnsupported, true, ""},
		{"image", config.Sampling{Provider: "gpt"}, []*mcp.CreateMessageParams{{Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.ImageContent{MIMEType: "image/png", Data: []byte{1}}}}}}, tooling.CodeUnsupported, true, ""},
		{"no messages", config.Sampling{Provider: "gpt"}, []*mcp.CreateMessageParams{{}}, tooling.CodeInvalidArgument, true, ""},
		{"over the rate", config.Sampling{Provider: "gpt", RequestsPerMinute: 1},
			[]*mcp.CreateMessageParams{{Messages: text("one")}, {Messages: text("two")}}, tooling.CodeBusy, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var seen []metrics.Chat
			s := sampling.New(p, "everything", tc.cfg, sampling.Options{Observer: func(c metrics.Chat) { seen = append(seen, c) }})
			before := len(srv.Requests())
			var res *mcp.CreateMessageResult
			var err error
			for _, params := range tc.params {
				res, err = s.CreateMessage(t.Context(), params)
			}
			sent := len(srv.Requests()) - before
			if len(seen) != len(tc.params) {
				t.Fatalf("%d requests observed, want %d", len(seen), len(tc.params))
			}
			wantOutcome := "ok"
			if tc.refused {
				wantOutcome = tc.code.String()
			}
			if last := seen[len(seen)-1]; last.Outcome != wantOutcome || last.Agent != "tooling:everything" || last.Provider != "gpt" {
				t.Errorf("observed %+v, want outcome %s of agent tooling:everything on gpt", last, wantOutcome)
			}
			if tc.refused {
				if err == nil || tooling.CodeOf(err) != tc.code || sent != len(tc.params)-1 {
					t.Fatalf("err %v (code %v), %d requests sent; want code %v and the last not sent", err, tooling.CodeOf(err), sent, tc.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := srv.Last().Model; got != tc.model || res.Role != "assistant" || res.StopReason != "endTurn" {
				t.Errorf("model %q (want %q), result %+v", got, tc.model, res)
			}
		})
	}
}
