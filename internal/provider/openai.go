package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/toolhostd/toolhostd/internal/provider/toolname"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

// The kind "openai": the Chat Completions API on the official SDK, for
// OpenAI and any compatible server (vLLM, llama.cpp, Ollama, LM Studio,
// OpenRouter, ...) through base_url. The SDK retries (408, 409, 429 after
// its Retry-After, 5xx, connection errors; max_retries) and bounds each
// attempt (timeout); streams ask for the usage chunk (stream_options
// include_usage) and are merged by the SDK's ChatCompletionAccumulator,
// which joins tool-call deltas by their index. max_tokens is sent as
// max_completion_tokens, the field every current OpenAI model takes.

const openAIBaseURL = "https://api.openai.com/v1/"

// openAI holds only the two services it calls: the SDK's Client would
// link every service of the API into toolhostd (about 15 MB more).
type openAI struct {
	*base
	completions openai.ChatCompletionService
	models      openai.ModelService
}

func newOpenAI(b *base) *openAI {
	url := b.cfg.BaseURL
	if url == "" {
		url = openAIBaseURL
	}
	opts := []option.RequestOption{
		option.WithBaseURL(url),
		option.WithHTTPClient(b.http),
		option.WithMaxRetries(b.cfg.MaxRetries),
		option.WithRequestTimeout(b.cfg.Timeout.Duration),
		// Nothing from the daemon's environment (OPENAI_*) reaches a request:
		// the key is set on each request, the base URL above.
		option.WithHeaderDel("OpenAI-Organization"),
		option.WithHeaderDel("OpenAI-Project"),
	}
	for _, k := range sortedNames(b.cfg.Headers) {
		opts = append(opts, option.WithHeader(k, b.cfg.Headers[k]))
	}
	return &openAI{base: b, completions: openai.NewChatCompletionService(opts...), models: openai.NewModelService(opts...)}
}

func (p *openAI) Chat(ctx context.Context, req Request) (Response, error) {
	params, names, err := p.params(&req)
	if err != nil {
		return Response{}, err
	}
	key, rs, err := p.apiKey()
	if err != nil {
		return Response{}, err
	}
	start := time.Now()
	cc, err := p.completions.New(ctx, params, option.WithAPIKey(key))
	if err != nil {
		return Response{}, p.openAIError(ctx, err, rs)
	}
	resp, err := p.response(cc, names, params.Model)
	if err != nil {
		return Response{}, p.fail(ctx, err, nil, rs)
	}
	p.done(start, &resp)
	return resp, nil
}

func (p *openAI) ChatStream(ctx context.Context, req Request, delta func(string)) (Response, error) {
	params, names, err := p.params(&req)
	if err != nil {
		return Response{}, err
	}
	key, rs, err := p.apiKey()
	if err != nil {
		return Response{}, err
	}
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	start := time.Now()
	stream := p.completions.NewStreaming(ctx, params, option.WithAPIKey(key))
	defer stream.Close()
	var acc openai.ChatCompletionAccumulator
	finished := false
	for stream.Next() {
		chunk := stream.Current()
		if !acc.AddChunk(chunk) {
			return Response{}, p.fail(ctx, fmt.Errorf("%w: a chunk does not continue the stream", errProtocol), nil, rs)
		}
		for _, c := range chunk.Choices {
			if c.Index != 0 {
				continue
			}
			if t := c.Delta.Content + c.Delta.Refusal; t != "" {
				delta(t)
			}
			finished = finished || c.FinishReason != ""
		}
	}
	if err := stream.Err(); err != nil {
		return Response{}, p.openAIError(ctx, err, rs)
	}
	if !finished {
		return Response{}, p.fail(ctx, errIncomplete, nil, rs)
	}
	resp, err := p.response(&acc.ChatCompletion, names, params.Model)
	if err != nil {
		return Response{}, p.fail(ctx, err, nil, rs)
	}
	p.done(start, &resp)
	return resp, nil
}

// ListModels lists the endpoint's models (GET /models).
func (p *openAI) ListModels(ctx context.Context) ([]string, error) {
	key, rs, err := p.apiKey()
	if err != nil {
		return nil, err
	}
	var out []string
	it := p.models.ListAutoPaging(ctx, option.WithAPIKey(key))
	for it.Next() {
		out = append(out, it.Current().ID)
	}
	if err := it.Err(); err != nil {
		return nil, p.openAIError(ctx, err, rs)
	}
	return out, nil
}

func (p *openAI) openAIError(ctx context.Context, err error, rs []tooling.Redaction) error {
	var ae *openai.Error
	if errors.As(err, &ae) {
		return p.fail(ctx, err, &apiFailure{status: ae.StatusCode, message: ae.Message}, rs)
	}
	return p.fail(ctx, err, nil, rs)
}

// params is the Chat Completions request of req, and its tool names.
func (p *openAI) params(req *Request) (openai.ChatCompletionNewParams, *toolname.Map, error) {
	names, err := newToolNames(p.name, req)
	if err != nil {
		return openai.ChatCompletionNewParams{}, nil, err
	}
	params := openai.ChatCompletionNewParams{
		Model:               shared.ChatModel(p.model(req)),
		MaxCompletionTokens: openai.Int(p.maxTokens(req)),
	}
	for _, m := range req.Messages {
		switch m.Role {
		case RoleSystem:
			params.Messages = append(params.Messages, openai.SystemMessage(m.Content))
		case RoleUser:
			params.Messages = append(params.Messages, openai.UserMessage(m.Content))
		case RoleTool:
			params.Messages = append(params.Messages, openai.ToolMessage(m.Content, m.ToolCallID))
		case RoleAssistant:
			a := openai.ChatCompletionAssistantMessageParam{}
			if m.Content != "" || len(m.ToolCalls) == 0 {
				a.Content.OfString = openai.String(m.Content)
			}
			for _, c := range m.ToolCalls {
				args := c.Arguments
				if args == "" {
					args = "{}"
				}
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID:       c.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: names.API(c.Name), Arguments: args},
					},
				})
			}
			params.Messages = append(params.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		default:
			return params, nil, tooling.Errorf(tooling.CodeInvalidArgument, "provider %q: a message has an unknown role %d", p.name, m.Role)
		}
	}
	for _, t := range req.Tools {
		schema, err := toolSchema(p.name, t)
		if err != nil {
			return params, nil, err
		}
		def := shared.FunctionDefinitionParam{Name: names.API(t.Name), Parameters: schema}
		if t.Description != nil {
			def.Description = openai.String(*t.Description)
		}
		params.Tools = append(params.Tools, openai.ChatCompletionFunctionTool(def))
	}
	if c := req.ToolChoice; c != nil {
		switch c.Mode {
		case ToolChoiceAuto:
			params.ToolChoice.OfAuto = openai.String(string(openai.ChatCompletionToolChoiceOptionAutoAuto))
		case ToolChoiceNone:
			params.ToolChoice.OfAuto = openai.String(string(openai.ChatCompletionToolChoiceOptionAutoNone))
		case ToolChoiceRequired:
			params.ToolChoice.OfAuto = openai.String(string(openai.ChatCompletionToolChoiceOptionAutoRequired))
		case ToolChoiceNamed:
			params.ToolChoice = openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: names.API(c.Name)})
		}
	}
	if req.Temperature != nil {
		params.Temperature = openai.Float(float64(*req.Temperature))
	}
	if len(req.Stop) > 0 {
		params.Stop.OfStringArray = req.Stop
	}
	return params, names, nil
}

// response maps a whole completion (or the accumulation of a stream).
func (p *openAI) response(cc *openai.ChatCompletion, names *toolname.Map, model string) (Response, error) {
	if len(cc.Choices) == 0 {
		return Response{}, fmt.Errorf("%w: no choices", errProtocol)
	}
	ch := cc.Choices[0]
	r := Response{
		Message: Message{Role: RoleAssistant, Content: ch.Message.Content + ch.Message.Refusal},
		Usage:   Usage{InputTokens: clampTokens(cc.Usage.PromptTokens), OutputTokens: clampTokens(cc.Usage.CompletionTokens)},
		Model:   cc.Model,
	}
	if r.Model == "" {
		r.Model = string(model)
	}
	for _, c := range ch.Message.ToolCalls {
		r.Message.ToolCalls = append(r.Message.ToolCalls, ToolCall{ID: c.ID, Name: names.MCP(c.Function.Name), Arguments: c.Function.Arguments})
	}
	switch ch.FinishReason {
	case "stop":
		r.FinishReason = FinishStop
	case "length":
		r.FinishReason = FinishLength
	case "tool_calls", "function_call":
		r.FinishReason = FinishToolCalls
	case "content_filter":
		r.FinishReason = FinishContentFilter
	default:
		r.FinishReason = FinishOther
	}
	return r, nil
}

// toolSchema is a tool's input schema as the JSON object both APIs want.
func toolSchema(provider string, t tooling.Tool) (map[string]any, error) {
	schema := map[string]any{}
	if t.InputSchema != "" {
		if err := json.Unmarshal([]byte(t.InputSchema), &schema); err != nil {
			return nil, tooling.Errorf(tooling.CodeInvalidArgument, "provider %q: the input schema of tool %q is not a JSON object: %w", provider, t.Name, err)
		}
	}
	if _, ok := schema["type"]; !ok {
		schema["type"] = "object"
	}
	return schema, nil
}

func clampTokens(n int64) uint32 {
	switch {
	case n < 0:
		return 0
	case n > int64(^uint32(0)):
		return ^uint32(0)
	}
	return uint32(n)
}
