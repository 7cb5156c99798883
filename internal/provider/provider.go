// Package provider owns the domain of the provider interface: a model
// request and its response, the chat-stream deltas, the Provider interface
// that mirrors the WIT `provider` resource (toolhost:agent@0.2.0), and the
// registry of configured providers by name. One kind per model API lives
// in its own file on that API's official SDK. Nothing here knows about
// WebAssembly; errors are *tooling.Error with the contract's codes.
package provider

import (
	"context"

	"github.com/toolhostd/toolhostd/internal/tooling"
)

// Role is who a message is from (WIT provider.role).
type Role uint8

// The roles, in WIT order.
const (
	RoleSystem Role = iota
	RoleUser
	RoleAssistant
	RoleTool
)

// ToolCall is one tool invocation a model asked for (WIT provider.tool-call).
// Name is the MCP tool name as list-tools returned it (the kind maps it to
// and from whatever its API accepts); Arguments is JSON object text.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// Message is one turn of a conversation (WIT provider.message).
type Message struct {
	Role Role
	// Content is the text of the message (for RoleTool: the tool's result).
	Content string
	// ToolCalls are the calls an assistant message asked for.
	ToolCalls []ToolCall
	// ToolCallID is, for RoleTool, the id of the call this answers.
	ToolCallID string
}

// ToolChoiceMode says whether and which tool the model must call.
type ToolChoiceMode uint8

// The tool choices, in WIT order.
const (
	ToolChoiceAuto ToolChoiceMode = iota
	ToolChoiceNone
	ToolChoiceRequired
	ToolChoiceNamed
)

// ToolChoice is the request's tool-choice; Name is set for ToolChoiceNamed.
type ToolChoice struct {
	Mode ToolChoiceMode
	Name string
}

// Request is one chat request (WIT provider.chat-request). Nil pointers and
// empty strings mean "the provider's default".
type Request struct {
	Model       string
	Messages    []Message
	Tools       []tooling.Tool
	ToolChoice  *ToolChoice
	MaxTokens   *uint32
	Temperature *float32
	Stop        []string
}

// FinishReason is why the model stopped (WIT provider.finish-reason).
type FinishReason uint8

// The finish reasons, in WIT order.
const (
	FinishStop FinishReason = iota
	FinishLength
	FinishToolCalls
	FinishContentFilter
	FinishOther
)

// Usage counts the tokens of one request.
type Usage struct {
	InputTokens  uint32
	OutputTokens uint32
}

// Response is a whole answer (WIT provider.chat-response): the assistant
// message with its text and tool calls, why it ended, its usage and the
// model that answered.
type Response struct {
	Message      Message
	FinishReason FinishReason
	Usage        Usage
	Model        string
}

// Provider is one configured model endpoint, shared by every agent that uses
// it. Every method is safe for concurrent use and returns a *tooling.Error
// on failure (unavailable, timeout, cancelled, protocol, denied, ...), whose
// message names the provider and never holds a secret.
type Provider interface {
	// Kind is the API, "openai" or "anthropic".
	Kind() string
	// Name is the configured name.
	Name() string
	// Chat sends req and waits for the whole response.
	Chat(ctx context.Context, req Request) (Response, error)
	// ChatStream sends req as a streaming request. It calls delta with each
	// piece of text as it arrives (from the calling goroutine, in order)
	// and returns the whole response once the stream ended; the
	// concatenation of the deltas equals the response's text. Cancelling
	// ctx aborts the request.
	ChatStream(ctx context.Context, req Request, delta func(text string)) (Response, error)
}
