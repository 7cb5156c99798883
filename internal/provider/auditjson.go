package provider

import "encoding/json"

// auditReq and auditMsg are the request as AuditJSON writes it (message
// text included: the audit log writes it only with audit_arguments; its
// size and sha256 always).
type (
	auditReq struct {
		Model       string     `json:"model,omitempty"`
		Messages    []auditMsg `json:"messages"`
		Tools       []string   `json:"tools,omitempty"`
		ToolChoice  string     `json:"tool_choice,omitempty"`
		MaxTokens   *uint32    `json:"max_tokens,omitempty"`
		Temperature *float32   `json:"temperature,omitempty"`
		Stop        []string   `json:"stop,omitempty"`
	}
	auditMsg struct {
		Role       string     `json:"role"`
		Content    string     `json:"content"`
		ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
		ToolCallID string     `json:"tool_call_id,omitempty"`
	}
)

var auditRoles = [...]string{"system", "user", "assistant", "tool"}

// AuditJSON is the request as the audit log sees it: its model, messages
// (role, text, tool calls), the names of its tools and its options, as JSON
// text (nil if it cannot be marshalled).
func AuditJSON(req Request) []byte {
	r := auditReq{Model: req.Model, MaxTokens: req.MaxTokens, Temperature: req.Temperature, Stop: req.Stop,
		Messages: make([]auditMsg, len(req.Messages))}
	for i, m := range req.Messages {
		role := "unknown"
		if int(m.Role) < len(auditRoles) {
			role = auditRoles[m.Role]
		}
		r.Messages[i] = auditMsg{Role: role, Content: m.Content, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID}
	}
	for _, t := range req.Tools {
		r.Tools = append(r.Tools, t.Name)
	}
	if tc := req.ToolChoice; tc != nil {
		r.ToolChoice = [...]string{"auto", "none", "required", "named:"}[min(int(tc.Mode), 3)]
		if tc.Mode == ToolChoiceNamed {
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
