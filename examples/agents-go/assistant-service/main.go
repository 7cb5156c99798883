// assistant-service: an assistant you talk to (the Go port of
// examples/agents/assistant-service.js). It answers messages until the host
// stops it, keeping one conversation per session: each message is the
// user's next turn, the model is asked with the tools of its toolings,
// the tools it calls are called (Toolbox), and its answer streams into the
// reply as it arrives. A message without a session is a conversation of
// its own. Run it as [agent.X] instances = "per-session" for an instance
// per conversation, or "single" for one instance keeping them all.
//
// It remembers: each conversation is kept in the key-value store
// (wasi:keyvalue), so a restarted daemon, or another host of a cluster
// after a move, continues it where it stopped. A per-session instance
// keeps its conversation in its session's bucket (OpenBucket("session"),
// key "history"); a single instance keeps them all in its bucket
// "conversations", a key per session. Without a store it remembers in
// memory only, and says so in its log.
//
// Input (JSON, every key optional): {"provider", "system", "toolings":
// [...], "max_turns", "max_history", "request"}. max_history bounds the
// messages a conversation keeps (the oldest whole turns go first; the
// system message stays); request is the template of every request to the
// model, in ChatRequest's JSON ({"model", "maxTokens", "temperature",
// "stop", "toolChoice"}; its messages and tools are the conversation's and
// the toolings').
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/toolhostd/toolhostd/sdk/go/toolhost"
)

// options is the agent's input, defaulted by the values of input below.
type options struct {
	Provider   string               `json:"provider"`
	System     string               `json:"system"`
	Toolings   []string             `json:"toolings"`
	MaxTurns   int                  `json:"max_turns"`
	MaxHistory int                  `json:"max_history"`
	Request    toolhost.ChatRequest `json:"request"`
}

var input = options{
	Provider:   "model",
	System:     "You are a helpful assistant. Use the tools when they help, then answer briefly.",
	Toolings:   []string{"everything"},
	MaxTurns:   8,
	MaxHistory: 40,
}

// toolTimeout bounds the wait for one turn's tool results.
const toolTimeout = 5 * time.Minute

// service holds what the messages share: the provider, the tools and the
// conversations by session.
type service struct {
	o        options
	p        *toolhost.Provider
	box      *toolhost.Toolbox
	inbox    toolhost.Inbox
	sessions map[string][]toolhost.Message
	mem      *memory // nil without a store
}

// memory is where the conversations are kept: the session's bucket of a
// per-session instance, else the agent's bucket "conversations".
type memory struct {
	bucket *toolhost.Bucket
	shared bool // "conversations": a key per session
}

func openMemory() *memory {
	if b, err := toolhost.OpenBucket("session"); err == nil {
		return &memory{bucket: b}
	}
	// Not a per-session instance (no-such-store): the agent's own bucket.
	b, err := toolhost.OpenBucket("conversations")
	if err != nil {
		toolhost.Logf(toolhost.LevelWarn, "assistant-service: no key-value store (%v): conversations are kept in memory only", err)
		return nil
	}
	return &memory{bucket: b, shared: true}
}

func (m *memory) key(session string) string {
	if m.shared {
		return "conversation/" + session
	}
	return "history"
}

// recall is the kept conversation of session (nil for none). A store error
// is logged: the conversation goes on from memory.
func (m *memory) recall(session string) []toolhost.Message {
	if m == nil {
		return nil
	}
	v, ok, err := m.bucket.Get(m.key(session))
	var h []toolhost.Message
	if err == nil && ok {
		err = json.Unmarshal(v, &h)
	}
	if err != nil {
		toolhost.Logf(toolhost.LevelWarn, "assistant-service: reading conversation %s: %v", session, err)
	}
	return h
}

// keep stores the conversation of session.
func (m *memory) keep(session string, h []toolhost.Message) {
	if m == nil {
		return
	}
	v, err := json.Marshal(h)
	if err == nil {
		err = m.bucket.Set(m.key(session), v)
	}
	if err != nil {
		toolhost.Logf(toolhost.LevelWarn, "assistant-service: keeping conversation %s: %v", session, err)
	}
}

func serve(in string) (string, error) {
	o := input
	if strings.TrimSpace(in) != "" {
		if err := json.Unmarshal([]byte(in), &o); err != nil {
			return "", fmt.Errorf("the input: %w", err)
		}
	}
	p, err := toolhost.GetProvider(o.Provider)
	if err != nil {
		return "", fmt.Errorf("provider %s: %w", o.Provider, err)
	}
	defer p.Close()
	box, err := toolhost.OpenToolbox(o.Toolings...)
	if err != nil {
		return "", err
	}
	defer box.Close()
	s := &service{o: o, p: p, box: box, sessions: map[string][]toolhost.Message{}, mem: openMemory()}
	if s.mem != nil {
		defer s.mem.bucket.Close()
	}
	n := 0
	err = s.inbox.Serve(func(m toolhost.Incoming, r *toolhost.Replier) error {
		n++
		return s.answer(m, r)
	})
	return fmt.Sprintf("answered %d messages in %d sessions", n, len(s.sessions)), err
}

// answer is one user turn: the model is asked until it stops calling
// tools, its text streaming into the reply. The conversation is kept
// before the reply ends, so that a reply seen means a turn remembered.
func (s *service) answer(m toolhost.Incoming, r *toolhost.Replier) error {
	var history []toolhost.Message
	if m.Session != nil {
		var ok bool
		if history, ok = s.sessions[*m.Session]; !ok {
			history = s.mem.recall(*m.Session)
		}
	}
	if len(history) == 0 && s.o.System != "" {
		history = append(history, toolhost.SystemMessage(s.o.System))
	}
	history = append(history, toolhost.UserMessage(m.Content))
	err := s.converse(m, r, &history)
	if m.Session != nil {
		history = trim(history, s.o.MaxHistory)
		s.sessions[*m.Session] = history
		s.mem.keep(*m.Session, history)
	}
	if err != nil {
		return err
	}
	return r.End("")
}

// converse asks the model, calling the tools it asks for, until it
// answers; the turns go into history.
func (s *service) converse(m toolhost.Incoming, r *toolhost.Replier, history *[]toolhost.Message) error {
	for turn := 1; turn <= s.o.MaxTurns; turn++ {
		req := s.o.Request
		req.Messages, req.Tools = *history, s.box.Tools()
		resp, err := r.StreamChat(s.p, &req)
		if err != nil {
			return fmt.Errorf("turn %d: %w", turn, err)
		}
		*history = append(*history, resp.Message)
		if resp.FinishReason != toolhost.FinishToolCalls || len(resp.Message.ToolCalls) == 0 {
			toolhost.Logf(toolhost.LevelInfo, "assistant-service: %s answered %s in %d turns (%d input, %d output tokens)",
				resp.Model, m.Sender, turn, resp.Usage.InputTokens, resp.Usage.OutputTokens)
			return nil
		}
		if resp.Text() != "" {
			if err := r.Delta("\n"); err != nil {
				return err
			}
		}
		for _, c := range resp.Message.ToolCalls {
			toolhost.Logf(toolhost.LevelInfo, "assistant-service: tool call %s %s", c.Name, c.Arguments)
		}
		*history = append(*history, s.box.Call(&s.inbox, resp.Message.ToolCalls, toolTimeout)...)
		if s.inbox.Shutdown() {
			return errors.New("the agent is stopping")
		}
	}
	return fmt.Errorf("no answer after %d turns", s.o.MaxTurns)
}

// trim keeps at most limit messages of a conversation: its system message
// and its latest turns, whole (a kept turn starts with a user message).
func trim(history []toolhost.Message, limit int) []toolhost.Message {
	if limit <= 0 || len(history) <= limit {
		return history
	}
	var head []toolhost.Message
	if history[0].Role == toolhost.RoleSystem {
		head, history = history[:1], history[1:]
	}
	rest := history[len(history)-(limit-len(head)):]
	for len(rest) > 0 && rest[0].Role != toolhost.RoleUser {
		rest = rest[1:]
	}
	return append(append([]toolhost.Message{}, head...), rest...)
}

func init() { toolhost.Run(serve) }

func main() {}
