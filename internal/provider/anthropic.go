package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/provider/toolname"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

// The kind "anthropic": the Messages API on the official SDK. The system
// messages become the request's separate system prompt; an assistant's
// tool calls are tool_use blocks, tool messages tool_result blocks in the
// user turn that follows; a stream is merged by the SDK's
// Message.Accumulate (text_delta, input_json_delta). The SDK retries and
// bounds each attempt as for openai. The Messages API the SDK speaks has no
// temperature parameter: a request's temperature is not sent (logged at
// debug).

// anthropicKind holds only the two services it calls: the SDK's Client
// would link every service of the API into toolhostd (about 15 MB more).
type anthropicKind struct {
	*base
	messages anthropic.MessageService
	models   anthropic.ModelService
}

func newAnthropic(b *base) *anthropicKind {
	opts := []option.RequestOption{
		// Nothing from the daemon's environment (ANTHROPIC_*, profiles)
		// reaches a request: the services get no environment defaults (only
		// NewClient reads them), and the key is set on each request.
		option.WithEnvironmentProduction(),
		option.WithHTTPClient(b.http),
		option.WithMaxRetries(b.cfg.MaxRetries),
		option.WithRequestTimeout(b.cfg.Timeout.Duration),
	}
	if b.cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(b.cfg.BaseURL))
	}
	for _, k := range sortedNames(b.cfg.Headers) {
		opts = append(opts, option.WithHeader(k, b.cfg.Headers[k]))
	}
	return &anthropicKind{base: b, messages: anthropic.NewMessageService(opts...), models: anthropic.NewModelService(opts...)}
}

// keyOption is the request's credential (none when api_key is not set).
func keyOption(key string) []option.RequestOption {
	if key == "" {
		return nil
	}
	return []option.RequestOption{option.WithAPIKey(key)}
}

func (p *anthropicKind) Chat(ctx context.Context, req Request) (Response, error) {
	params, names, err := p.params(&req)
	if err != nil {
		return Response{}, err
	}
	key, rs, err := p.apiKey()
	if err != nil {
		return Response{}, err
	}
	start := time.Now()
	msg, err := p.messages.New(ctx, params, keyOption(key)...)
	if err != nil {
		return Response{}, p.anthropicError(ctx, err, rs)
	}
	resp := p.response(msg, names)
	p.done(start, &resp)
	return resp, nil
}

func (p *anthropicKind) ChatStream(ctx context.Context, req Request, delta func(string)) (Response, error) {
	params, names, err := p.params(&req)
	if err != nil {
		return Response{}, err
	}
	key, rs, err := p.apiKey()
	if err != nil {
		return Response{}, err
	}
	start := time.Now()
	stream := p.messages.NewStreaming(ctx, params, keyOption(key)...)
	defer stream.Close()
	var msg anthropic.Message
	stopped := false
	for stream.Next() {
		ev := stream.Current()
		if err := msg.Accumulate(ev); err != nil {
			return Response{}, p.fail(ctx, fmt.Errorf("%w: %w", errProtocol, err), nil, rs)
		}
		switch ev.Type {
		case "content_block_delta":
			if ev.Delta.Type == "text_delta" && ev.Delta.Text != "" {
				delta(ev.Delta.Text)
			}
		case "message_stop":
			stopped = true
		}
	}
	if err := stream.Err(); err != nil {
		return Response{}, p.anthropicError(ctx, err, rs)
	}
	if !stopped {
		return Response{}, p.fail(ctx, errIncomplete, nil, rs)
	}
	resp := p.response(&msg, names)
	p.done(start, &resp)
	return resp, nil
}

// ListModels lists the endpoint's models (GET /v1/models).
func (p *anthropicKind) ListModels(ctx context.Context) ([]string, error) {
	key, rs, err := p.apiKey()
	if err != nil {
		return nil, err
	}
	var out []string
	it := p.models.ListAutoPaging(ctx, anthropic.ModelListParams{}, keyOption(key)...)
	for it.Next() {
		out = append(out, it.Current().ID)
	}
	if err := it.Err(); err != nil {
		return nil, p.anthropicError(ctx, err, rs)
	}
	return out, nil
}

func (p *anthropicKind) anthropicError(ctx context.Context, err error, rs []tooling.Redaction) error {
	var ae *anthropic.Error
	if errors.As(err, &ae) {
		if ae.StatusCode < 400 {
			// A stream's error event (overloaded, or failed mid-way): the
			// response's status was a success.
			return p.fail(ctx, fmt.Errorf("the stream reported an error: %s", clip(ae.Message)), nil, rs)
		}
		return p.fail(ctx, err, &apiFailure{status: ae.StatusCode, message: ae.Message}, rs)
	}
	return p.fail(ctx, err, nil, rs)
}

// params is the Messages request of req, and its tool names.
func (p *anthropicKind) params(req *Request) (anthropic.MessageNewParams, *toolname.Map, error) {
	names, err := newToolNames(p.name, req)
	if err != nil {
		return anthropic.MessageNewParams{}, nil, err
	}
	params := anthropic.MessageNewParams{
		Model:     anthropic.Model(p.model(req)),
		MaxTokens: p.maxTokens(req),
	}
	// The turns: consecutive tool results (and a user message after them)
	// make one user turn, as the API wants every tool_result of an
	// assistant turn in the next user turn.
	var user []anthropic.ContentBlockParamUnion
	flush := func() {
		if len(user) > 0 {
			params.Messages = append(params.Messages, anthropic.NewUserMessage(user...))
			user = nil
		}
	}
	for _, m := range req.Messages {
		switch m.Role {
		case RoleSystem:
			params.System = append(params.System, anthropic.TextBlockParam{Text: m.Content})
		case RoleUser:
			user = append(user, anthropic.NewTextBlock(m.Content))
		case RoleTool:
			user = append(user, anthropic.NewToolResultBlock(m.ToolCallID, m.Content, false))
		case RoleAssistant:
			flush()
			var blocks []anthropic.ContentBlockParamUnion
			if m.Content != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Content))
			}
			for _, c := range m.ToolCalls {
				args := strings.TrimSpace(c.Arguments)
				if args == "" {
					args = "{}"
				}
				if !json.Valid([]byte(args)) {
					return params, nil, tooling.Errorf(tooling.CodeInvalidArgument, "provider %q: the arguments of tool call %q are not JSON", p.name, c.ID)
				}
				blocks = append(blocks, anthropic.NewToolUseBlock(c.ID, json.RawMessage(args), names.API(c.Name)))
			}
			if len(blocks) == 0 {
				blocks = append(blocks, anthropic.NewTextBlock(""))
			}
			params.Messages = append(params.Messages, anthropic.NewAssistantMessage(blocks...))
		default:
			return params, nil, tooling.Errorf(tooling.CodeInvalidArgument, "provider %q: a message has an unknown role %d", p.name, m.Role)
		}
	}
	flush()
	for _, t := range req.Tools {
		schema, err := toolSchema(p.name, t)
		if err != nil {
			return params, nil, err
		}
		tp := anthropic.ToolParam{Name: names.API(t.Name), InputSchema: inputSchema(schema)}
		if t.Description != nil {
			tp.Description = anthropic.String(*t.Description)
		}
		params.Tools = append(params.Tools, anthropic.ToolUnionParam{OfTool: &tp})
	}
	if c := req.ToolChoice; c != nil {
		switch c.Mode {
		case ToolChoiceAuto:
			params.ToolChoice.OfAuto = &anthropic.ToolChoiceAutoParam{}
		case ToolChoiceNone:
			params.ToolChoice.OfNone = &anthropic.ToolChoiceNoneParam{}
		case ToolChoiceRequired:
			params.ToolChoice.OfAny = &anthropic.ToolChoiceAnyParam{}
		case ToolChoiceNamed:
			params.ToolChoice.OfTool = &anthropic.ToolChoiceToolParam{Name: names.API(c.Name)}
		}
	}
	if req.Temperature != nil {
		p.log.Debug("temperature is not a parameter of the Messages API; not sent", zap.Float32("temperature", *req.Temperature))
	}
	if len(req.Stop) > 0 {
		params.StopSequences = req.Stop
	}
	return params, names, nil
}

// inputSchema splits a JSON schema into the SDK's fields.
func inputSchema(schema map[string]any) anthropic.ToolInputSchemaParam {
	s := anthropic.ToolInputSchemaParam{ExtraFields: map[string]any{}}
	for k, v := range schema {
		switch k {
		case "type":
		case "properties":
			s.Properties = v
		case "required":
			if arr, ok := v.([]any); ok {
				for _, r := range arr {
					if rs, ok := r.(string); ok {
						s.Required = append(s.Required, rs)
					}
				}
			}
		default:
			s.ExtraFields[k] = v
		}
	}
	return s
}

// response maps a whole message (or the accumulation of a stream).
func (p *anthropicKind) response(m *anthropic.Message, names *toolname.Map) Response {
	r := Response{Message: Message{Role: RoleAssistant}, Model: string(m.Model)}
	var text strings.Builder
	for _, b := range m.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			args := string(b.Input)
			if args == "" {
				args = "{}"
			}
			r.Message.ToolCalls = append(r.Message.ToolCalls, ToolCall{ID: b.ID, Name: names.MCP(b.Name), Arguments: args})
		}
	}
	r.Message.Content = text.String()
	u := m.Usage
	r.Usage = Usage{
		InputTokens:  clampTokens(u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens),
		OutputTokens: clampTokens(u.OutputTokens),
	}
	switch m.StopReason {
	case anthropic.StopReasonEndTurn, anthropic.StopReasonStopSequence:
		r.FinishReason = FinishStop
	case anthropic.StopReasonMaxTokens, anthropic.StopReasonModelContextWindowExceeded:
		r.FinishReason = FinishLength
	case anthropic.StopReasonToolUse:
		r.FinishReason = FinishToolCalls
	case anthropic.StopReasonRefusal:
		r.FinishReason = FinishContentFilter
	default:
		r.FinishReason = FinishOther
	}
	return r
}
