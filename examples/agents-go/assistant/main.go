// assistant: the tool loop of an agent that thinks (the Go port of
// examples/agents/assistant.js). It lists the tools of its toolings, asks
// the provider's model with those tools, calls each tool the model asks
// for with CallTool, answers each call with a tool message carrying the
// result, and asks again, until the model stops for another reason than
// tool calls (or max_turns is reached). Its output is the model's last
// text; each tool call and the tokens used are logged.
//
// Input (JSON, every key optional): {"provider", "model", "system",
// "prompt", "toolings": [...], "max_turns", "max_tokens", "stream"}. With
// "stream" each answer comes from ChatStream: the deltas are joined as
// they arrive and the chat-done envelope ends the turn.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/toolhostd/toolhostd/sdk/go/toolhost"
)

type options struct {
	Provider  string   `json:"provider"`
	Model     *string  `json:"model"`
	System    string   `json:"system"`
	Prompt    string   `json:"prompt"`
	Toolings  []string `json:"toolings"`
	MaxTurns  int      `json:"max_turns"`
	MaxTokens *uint32  `json:"max_tokens"`
	Stream    bool     `json:"stream"`
}

func defaults() options {
	return options{
		Provider: "model",
		System:   "You are a helpful assistant. Use the tools when they help, then answer briefly.",
		Prompt:   "Use the echo tool to echo \"hello from a WebAssembly agent\", then tell me what it returned.",
		Toolings: []string{"everything"},
		MaxTurns: 8,
	}
}

// replyTimeout bounds the wait for one tool result or one streamed answer.
const replyTimeout = 5 * time.Minute

func assistant(input string) (string, error) {
	o := defaults()
	if strings.TrimSpace(input) != "" {
		if err := json.Unmarshal([]byte(input), &o); err != nil {
			return "", err
		}
	}
	p, err := toolhost.GetProvider(o.Provider)
	if err != nil {
		return "", fmt.Errorf("provider %s: %w", o.Provider, err)
	}
	defer p.Close()

	// The tools of every tooling, as list-tools returns them; the first
	// tooling offering a name answers its calls.
	box, err := toolhost.OpenToolbox(o.Toolings...)
	if err != nil {
		return "", err
	}
	defer box.Close()

	req := &toolhost.ChatRequest{Model: o.Model, Tools: box.Tools(), MaxTokens: o.MaxTokens}
	if o.System != "" {
		req.Messages = append(req.Messages, toolhost.SystemMessage(o.System))
	}
	req.Messages = append(req.Messages, toolhost.UserMessage(o.Prompt))
	var used toolhost.Usage
	for turn := 1; turn <= o.MaxTurns; turn++ {
		resp, err := ask(p, req, o.Stream)
		if err != nil {
			return "", fmt.Errorf("turn %d: %w", turn, err)
		}
		used.InputTokens += resp.Usage.InputTokens
		used.OutputTokens += resp.Usage.OutputTokens
		req.Messages = append(req.Messages, resp.Message)
		if resp.FinishReason != toolhost.FinishToolCalls || len(resp.Message.ToolCalls) == 0 {
			toolhost.Logf(toolhost.LevelInfo, "assistant: %s answered in %d turns (%s), %d input and %d output tokens",
				resp.Model, turn, resp.FinishReason, used.InputTokens, used.OutputTokens)
			return resp.Text(), nil
		}
		for _, c := range resp.Message.ToolCalls {
			toolhost.Logf(toolhost.LevelInfo, "assistant: tool call %s %s", c.Name, c.Arguments)
		}
		var in toolhost.Inbox
		req.Messages = append(req.Messages, box.Call(&in, resp.Message.ToolCalls, replyTimeout)...)
	}
	return "", fmt.Errorf("no answer after %d turns", o.MaxTurns)
}

// ask is one turn: Chat, or ChatStream and its envelopes.
func ask(p *toolhost.Provider, req *toolhost.ChatRequest, stream bool) (*toolhost.ChatResponse, error) {
	if !stream {
		return p.Chat(req)
	}
	id, err := p.ChatStream(req)
	if err != nil {
		return nil, err
	}
	var text strings.Builder
	for {
		env, ok := toolhost.Recv(replyTimeout)
		if !ok {
			p.Cancel(id)
			return nil, errors.New("the stream sent nothing in time")
		}
		if env.ID != id {
			continue // nothing else is outstanding between turns
		}
		switch ev := env.Event.(type) {
		case toolhost.ChatDeltaEvent:
			text.WriteString(ev.Text)
		case toolhost.ChatDoneEvent:
			if text.String() != ev.Response.Text() {
				toolhost.Logf(toolhost.LevelWarn, "assistant: the deltas (%d bytes) differ from the response's text (%d bytes)", text.Len(), len(ev.Response.Text()))
			}
			return &ev.Response, nil
		case toolhost.ErrorEvent:
			return nil, ev.Err
		}
	}
}

func init() { toolhost.Run(assistant) }

func main() {}
