package testenv

import (
	"context"
	"strings"
	"sync"

	"github.com/toolhostd/toolhostd/internal/provider"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

// Scripted is a deterministic provider.Provider for the host's and the
// pump's tests, until they run against the real kinds and their fake
// servers. What it does follows the text of the request's last message:
//
//   - "echo <text>": answers text, streamed in pieces of three bytes;
//   - "tools": asks to call every tool of the request, with {} as
//     arguments (finish-reason tool-calls);
//   - "call <tool> <arguments>": asks to call that tool of the request
//     with those arguments; a tool message after it (the last message)
//     is answered "the tool said: <its text>";
//   - "fail": streams "partial", then fails with unavailable;
//   - "hang <tag>": closes Started(tag), streams "wait", then waits for
//     its context to end and closes Cancelled(tag).
//
// The model is the request's or "scripted-1"; the usage counts the bytes
// of the messages in and of the answer out.
type Scripted struct {
	name      string
	cancelled sync.Map // tag -> *signal
	started   sync.Map // tag -> *signal
}

// NewScripted is a Scripted provider configured as name.
func NewScripted(name string) *Scripted { return &Scripted{name: name} }

// Kind is "scripted".
func (*Scripted) Kind() string { return "scripted" }

// Name is the configured name.
func (p *Scripted) Name() string { return p.name }

type signal struct {
	once sync.Once
	ch   chan struct{}
}

func signalOf(m *sync.Map, tag string) *signal {
	v, _ := m.LoadOrStore(tag, &signal{ch: make(chan struct{})})
	return v.(*signal)
}

func (s *signal) fire() { s.once.Do(func() { close(s.ch) }) }

// Started is closed when a "hang <tag>" request began.
func (p *Scripted) Started(tag string) <-chan struct{} { return signalOf(&p.started, tag).ch }

// Cancelled is closed when a "hang <tag>" request saw its context end.
func (p *Scripted) Cancelled(tag string) <-chan struct{} { return signalOf(&p.cancelled, tag).ch }

// Chat answers as ChatStream does, without deltas.
func (p *Scripted) Chat(ctx context.Context, req provider.Request) (provider.Response, error) {
	return p.ChatStream(ctx, req, func(string) {})
}

// ChatStream follows the script (see Scripted).
func (p *Scripted) ChatStream(ctx context.Context, req provider.Request, delta func(string)) (provider.Response, error) {
	if len(req.Messages) == 0 {
		return provider.Response{}, tooling.Errorf(tooling.CodeInvalidArgument, "provider %q: no messages", p.name)
	}
	last := req.Messages[len(req.Messages)-1].Content
	in := 0
	for _, m := range req.Messages {
		in += len(m.Content)
	}
	resp := provider.Response{Message: provider.Message{Role: provider.RoleAssistant}, FinishReason: provider.FinishStop, Model: req.Model}
	if resp.Model == "" {
		resp.Model = "scripted-1"
	}
	switch {
	case last == "fail":
		delta("partial")
		return provider.Response{}, tooling.Errorf(tooling.CodeUnavailable, "provider %q: the stream broke", p.name)
	case strings.HasPrefix(last, "hang "):
		tag := strings.TrimPrefix(last, "hang ")
		signalOf(&p.started, tag).fire()
		delta("wait")
		<-ctx.Done()
		signalOf(&p.cancelled, tag).fire()
		return provider.Response{}, ctx.Err()
	case req.Messages[len(req.Messages)-1].Role == provider.RoleTool:
		resp.Message.Content = "the tool said: " + last
		delta(resp.Message.Content)
	case strings.HasPrefix(last, "call "):
		name, args, _ := strings.Cut(strings.TrimPrefix(last, "call "), " ")
		for _, t := range req.Tools {
			if t.Name == name {
				resp.Message.ToolCalls = []provider.ToolCall{{ID: "call-1", Name: name, Arguments: args}}
				resp.FinishReason = provider.FinishToolCalls
			}
		}
		if resp.FinishReason != provider.FinishToolCalls {
			resp.Message.Content = "no tool " + name
		}
	case last == "tools":
		for i, t := range req.Tools {
			resp.Message.ToolCalls = append(resp.Message.ToolCalls, provider.ToolCall{ID: "call-" + string(rune('a'+i%26)), Name: t.Name, Arguments: "{}"})
		}
		resp.FinishReason = provider.FinishToolCalls
	default:
		text := strings.TrimPrefix(last, "echo ")
		for i := 0; i < len(text); i += 3 {
			delta(text[i:min(i+3, len(text))])
		}
		resp.Message.Content = text
	}
	resp.Usage = provider.Usage{InputTokens: uint32(in), OutputTokens: uint32(len(resp.Message.Content))}
	return resp, nil
}
