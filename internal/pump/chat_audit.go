package pump

import (
	"encoding/json"
	"time"

	"github.com/toolhostd/toolhostd/internal/audit"
	"github.com/toolhostd/toolhostd/internal/provider"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

// chatEnd is what the audit line and the metrics of one finished (or
// refused) model request need.
type chatEnd struct {
	op    string
	id    string // chat-stream only
	req   provider.Request
	raw   []byte // requestJSON(req)
	start time.Time
	first time.Time // the first delta; zero: none
	resp  provider.Response
	err   *tooling.Error
}

// audit writes the request's audit line and reports it to the chat
// observer.
func (ph *ProviderHandle) audit(e chatEnd) {
	a := ph.a
	model := e.resp.Model
	if model == "" {
		model = e.req.Model
	}
	oc, msg := audit.OutcomeOK, ""
	if e.err != nil {
		oc, msg = e.err.Code.String(), e.err.Message
	}
	d := time.Since(e.start)
	var ft time.Duration
	if !e.first.IsZero() {
		ft = e.first.Sub(e.start)
	}
	usage := e.err == nil
	if a.hub.audit != nil {
		a.hub.audit.Write(audit.Record{
			Agent: a.name, Provider: ph.name, Op: e.op, StreamID: e.id, Model: model,
			Outcome: oc, Message: msg, Duration: d,
			FirstToken: ft, HasFirstToken: !e.first.IsZero(),
			InputTokens: e.resp.Usage.InputTokens, OutputTokens: e.resp.Usage.OutputTokens, HasUsage: usage,
			Request: e.raw, HasRequest: true, WithArgs: ph.auditMessages(),
		})
	}
	a.hub.prov.mu.RLock()
	observe := a.hub.prov.observe
	a.hub.prov.mu.RUnlock()
	if observe != nil {
		observe(ChatRecord{Agent: a.name, Provider: ph.name, Model: model, Op: e.op, Outcome: oc,
			Duration: d, FirstToken: ft, HasFirstToken: !e.first.IsZero(), Usage: e.resp.Usage})
	}
}

// The request as the audit log sees it (message text included: it is
// written only with audit_arguments; its size and sha256 always).
type (
	reqJSON struct {
		Model       string    `json:"model,omitempty"`
		Messages    []msgJSON `json:"messages"`
		Tools       []string  `json:"tools,omitempty"`
		ToolChoice  string    `json:"tool_choice,omitempty"`
		MaxTokens   *uint32   `json:"max_tokens,omitempty"`
		Temperature *float32  `json:"temperature,omitempty"`
		Stop        []string  `json:"stop,omitempty"`
	}
	msgJSON struct {
		Role       string              `json:"role"`
		Content    string              `json:"content"`
		ToolCalls  []provider.ToolCall `json:"tool_calls,omitempty"`
		ToolCallID string              `json:"tool_call_id,omitempty"`
	}
)

var roleNames = [...]string{"system", "user", "assistant", "tool"}

func requestJSON(req provider.Request) []byte {
	r := reqJSON{Model: req.Model, MaxTokens: req.MaxTokens, Temperature: req.Temperature, Stop: req.Stop,
		Messages: make([]msgJSON, len(req.Messages))}
	for i, m := range req.Messages {
		role := "unknown"
		if int(m.Role) < len(roleNames) {
			role = roleNames[m.Role]
		}
		r.Messages[i] = msgJSON{Role: role, Content: m.Content, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID}
	}
	for _, t := range req.Tools {
		r.Tools = append(r.Tools, t.Name)
	}
	if tc := req.ToolChoice; tc != nil {
		r.ToolChoice = [...]string{"auto", "none", "required", "named:"}[min(int(tc.Mode), 3)]
		if tc.Mode == provider.ToolChoiceNamed {
			r.ToolChoice += tc.Name
		}
	}
	if r.Temperature != nil && (*r.Temperature != *r.Temperature) { // NaN cannot be marshalled
		r.Temperature = nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil
	}
	return b
}

func (ph *ProviderHandle) auditMessages() bool {
	f := ph.a.provAccess.AuditMessages
	return f != nil && f(ph.name)
}
