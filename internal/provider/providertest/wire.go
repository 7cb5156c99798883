package providertest

import (
	"encoding/json"
	"fmt"
	"strings"
)

// The two APIs' wire formats: what a request holds, a whole reply, the
// events of a streamed one.

// decode fills the request's decoded fields from a chat request body.
func (r *Request) decode(api API, body []byte) {
	var v struct {
		Model               string   `json:"model"`
		Stream              bool     `json:"stream"`
		MaxTokens           *int     `json:"max_tokens"`
		MaxCompletionTokens *int     `json:"max_completion_tokens"`
		Temperature         *float64 `json:"temperature"`
		StreamOptions       struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		System []struct {
			Text string `json:"text"`
		} `json:"system"`
		Tools []struct {
			Name     string `json:"name"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if json.Unmarshal(body, &v) != nil {
		return
	}
	r.Model, r.Stream, r.IncludeUsage, r.Temperature = v.Model, v.Stream, v.StreamOptions.IncludeUsage, v.Temperature
	switch {
	case v.MaxCompletionTokens != nil:
		r.MaxTokens = *v.MaxCompletionTokens
	case v.MaxTokens != nil:
		r.MaxTokens = *v.MaxTokens
	}
	var system []string
	for _, m := range v.Messages {
		if m.Role == "system" || m.Role == "developer" {
			var s string
			if json.Unmarshal(m.Content, &s) == nil {
				system = append(system, s)
			}
		}
	}
	for _, m := range v.Messages {
		switch {
		case api == OpenAI && m.Role == "tool":
			r.ToolResults = append(r.ToolResults, contentText(m.Content))
		case api == Anthropic && m.Role == "user":
			var blocks []struct {
				Type    string          `json:"type"`
				Content json.RawMessage `json:"content"`
			}
			if json.Unmarshal(m.Content, &blocks) == nil {
				for _, b := range blocks {
					if b.Type == "tool_result" {
						r.ToolResults = append(r.ToolResults, contentText(b.Content))
					}
				}
			}
		}
	}
	for _, b := range v.System {
		system = append(system, b.Text)
	}
	r.System = strings.Join(system, "\n")
	for _, t := range v.Tools {
		if api == OpenAI {
			r.Tools = append(r.Tools, t.Function.Name)
		} else {
			r.Tools = append(r.Tools, t.Name)
		}
	}
}

// contentText is the text of a message's content: a string, or the
// concatenated text of its text parts.
func contentText(c json.RawMessage) string {
	var s string
	if json.Unmarshal(c, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(c, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

func (rp Reply) finish(api API) string {
	switch {
	case rp.Finish != "":
		return rp.Finish
	case len(rp.ToolCalls) > 0 && api == OpenAI:
		return "tool_calls"
	case len(rp.ToolCalls) > 0:
		return "tool_use"
	case api == OpenAI:
		return "stop"
	}
	return "end_turn"
}

func (tc ToolCall) args() string {
	a := strings.Join(tc.Arguments, "")
	if a == "" {
		return "{}"
	}
	return a
}

// whole is the body of a reply that is not streamed.
func (s *Server) whole(rp Reply) []byte {
	text := strings.Join(rp.Text, "")
	if s.API == OpenAI {
		msg := map[string]any{"role": "assistant", "content": text, "refusal": nil}
		if len(rp.ToolCalls) > 0 {
			var calls []map[string]any
			for _, tc := range rp.ToolCalls {
				calls = append(calls, map[string]any{"id": tc.ID, "type": "function", "function": map[string]any{"name": tc.Name, "arguments": tc.args()}})
			}
			msg["tool_calls"] = calls
			if text == "" {
				msg["content"] = nil
			}
		}
		return []byte(mustJSON(map[string]any{
			"id": "chatcmpl-fake", "object": "chat.completion", "created": 1700000000, "model": rp.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": rp.finish(OpenAI), "logprobs": nil}},
			"usage":   map[string]any{"prompt_tokens": rp.InputTokens, "completion_tokens": rp.OutputTokens, "total_tokens": rp.InputTokens + rp.OutputTokens},
		}))
	}
	var content []any
	if text != "" {
		content = append(content, map[string]any{"type": "text", "text": text})
	}
	for _, tc := range rp.ToolCalls {
		content = append(content, map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Name, "input": json.RawMessage(tc.args())})
	}
	if content == nil {
		content = []any{}
	}
	return []byte(mustJSON(anthropicMessage(rp, content, rp.finish(Anthropic), rp.OutputTokens)))
}

func anthropicMessage(rp Reply, content []any, stop any, output int) map[string]any {
	return map[string]any{
		"id": "msg_fake", "type": "message", "role": "assistant", "model": rp.Model, "content": content,
		"stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": rp.InputTokens, "output_tokens": output, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
	}
}

// events is the stream of a reply, one SSE event per element, and the
// malformed chunk to send instead of the rest when the reply says so.
func (s *Server) events(rp Reply, req *Request) ([]string, string) {
	if s.API == OpenAI {
		return openAIEvents(rp, req.IncludeUsage), "data: {\"id\":\"chatcmpl-fake\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\n\n"
	}
	return anthropicEvents(rp), "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\n\n"
}

func openAIEvents(rp Reply, includeUsage bool) []string {
	chunk := func(delta map[string]any, finish any, usage any) string {
		c := map[string]any{
			"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1700000000, "model": rp.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": nil}},
		}
		if delta == nil {
			c["choices"] = []any{}
		}
		c["usage"] = usage
		return "data: " + mustJSON(c) + "\n\n"
	}
	evs := []string{chunk(map[string]any{"role": "assistant", "content": ""}, nil, nil)}
	for _, t := range rp.Text {
		evs = append(evs, chunk(map[string]any{"content": t}, nil, nil))
	}
	// Each call's head (index, id, name), then the argument pieces of all
	// calls interleaved: the client merges them by index.
	for i, tc := range rp.ToolCalls {
		evs = append(evs, chunk(map[string]any{"tool_calls": []any{map[string]any{
			"index": i, "id": tc.ID, "type": "function", "function": map[string]any{"name": tc.Name, "arguments": ""}}}}, nil, nil))
	}
	for j := 0; ; j++ {
		more := false
		for i, tc := range rp.ToolCalls {
			if j < len(tc.Arguments) {
				more = true
				evs = append(evs, chunk(map[string]any{"tool_calls": []any{map[string]any{
					"index": i, "function": map[string]any{"arguments": tc.Arguments[j]}}}}, nil, nil))
			}
		}
		if !more {
			break
		}
	}
	evs = append(evs, chunk(map[string]any{}, rp.finish(OpenAI), nil))
	if includeUsage {
		evs = append(evs, chunk(nil, nil, map[string]any{"prompt_tokens": rp.InputTokens, "completion_tokens": rp.OutputTokens, "total_tokens": rp.InputTokens + rp.OutputTokens}))
	}
	return append(evs, "data: [DONE]\n\n")
}

func anthropicEvents(rp Reply) []string {
	ev := func(typ string, v map[string]any) string {
		v["type"] = typ
		return fmt.Sprintf("event: %s\ndata: %s\n\n", typ, mustJSON(v))
	}
	evs := []string{
		ev("message_start", map[string]any{"message": anthropicMessage(rp, []any{}, nil, 1)}),
		ev("ping", map[string]any{}),
	}
	idx := 0
	if len(rp.Text) > 0 || len(rp.ToolCalls) == 0 {
		evs = append(evs, ev("content_block_start", map[string]any{"index": idx, "content_block": map[string]any{"type": "text", "text": ""}}))
		for _, t := range rp.Text {
			evs = append(evs, ev("content_block_delta", map[string]any{"index": idx, "delta": map[string]any{"type": "text_delta", "text": t}}))
		}
		evs = append(evs, ev("content_block_stop", map[string]any{"index": idx}))
		idx++
	}
	for _, tc := range rp.ToolCalls {
		evs = append(evs, ev("content_block_start", map[string]any{"index": idx, "content_block": map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Name, "input": map[string]any{}}}))
		for _, a := range tc.Arguments {
			evs = append(evs, ev("content_block_delta", map[string]any{"index": idx, "delta": map[string]any{"type": "input_json_delta", "partial_json": a}}))
		}
		evs = append(evs, ev("content_block_stop", map[string]any{"index": idx}))
		idx++
	}
	evs = append(evs,
		ev("message_delta", map[string]any{"delta": map[string]any{"stop_reason": rp.finish(Anthropic), "stop_sequence": nil}, "usage": map[string]any{"output_tokens": rp.OutputTokens}}),
		ev("message_stop", map[string]any{}),
	)
	return evs
}
