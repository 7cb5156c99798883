package toolhost

import (
	"encoding/json"
	"errors"
	"strconv"
)

// The provider interface's types (WIT types chat-request, message, ...).
// Their JSON form is the one the JS bindings give the same WIT values:
// camelCase keys, enums as their WIT names, tool-choice as {"tag", "val"},
// none as null.

// Role is the WIT enum role: who a chat message is from.
type Role uint8

// The roles, in WIT order.
const (
	RoleSystem Role = iota
	RoleUser
	RoleAssistant
	RoleTool
)

var roleNames = [...]string{"system", "user", "assistant", "tool"}

// String is the WIT name of the role.
func (r Role) String() string { return enumName(roleNames[:], "role", uint8(r)) }

// MarshalText is the WIT name; an unknown role is an error.
func (r Role) MarshalText() ([]byte, error) { return enumText(roleNames[:], "role", uint8(r)) }

// UnmarshalText takes a WIT name.
func (r *Role) UnmarshalText(b []byte) error { return enumParse(roleNames[:], "role", b, (*uint8)(r)) }

// FinishReason is the WIT enum finish-reason: why the model stopped.
type FinishReason uint8

// The finish reasons, in WIT order.
const (
	FinishStop FinishReason = iota
	FinishLength
	FinishToolCalls
	FinishContentFilter
	FinishOther
)

var finishNames = [...]string{"stop", "length", "tool-calls", "content-filter", "other"}

// String is the WIT name of the reason.
func (f FinishReason) String() string { return enumName(finishNames[:], "finish-reason", uint8(f)) }

// MarshalText is the WIT name; an unknown reason is an error.
func (f FinishReason) MarshalText() ([]byte, error) {
	return enumText(finishNames[:], "finish-reason", uint8(f))
}

// UnmarshalText takes a WIT name.
func (f *FinishReason) UnmarshalText(b []byte) error {
	return enumParse(finishNames[:], "finish-reason", b, (*uint8)(f))
}

// ToolCall is one tool invocation a model asked for (WIT record
// tool-call). Name is the tool's name as ListTools returned it (the host
// maps it to and from what the model's API accepts); Arguments is a JSON
// object as text.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Message is one turn of a conversation (WIT record message). Content is
// the text (for RoleTool the tool's result); ToolCalls are the calls an
// assistant message asked for; ToolCallID is, for RoleTool, the id of the
// call the message answers (nil: none).
type Message struct {
	Role       Role       `json:"role"`
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"toolCalls"`
	ToolCallID *string    `json:"toolCallId"`
}

// SystemMessage is a system message with text.
func SystemMessage(text string) Message { return Message{Role: RoleSystem, Content: text} }

// UserMessage is a user message with text.
func UserMessage(text string) Message { return Message{Role: RoleUser, Content: text} }

// ToolMessage answers the tool call callID with result (for example a
// ToolResult's Value, or a CallToolResult's Text).
func ToolMessage(callID, result string) Message {
	return Message{Role: RoleTool, Content: result, ToolCallID: &callID}
}

// ToolChoiceKind is the case of the WIT variant tool-choice.
type ToolChoiceKind uint8

// The cases of tool-choice, in WIT order.
const (
	ToolChoiceAuto ToolChoiceKind = iota
	ToolChoiceNone
	ToolChoiceRequired
	ToolChoiceNamed
)

var toolChoiceNames = [...]string{"auto", "none", "required", "named"}

// ToolChoice is the WIT variant tool-choice: whether and which tool the
// model must call. Name is the tool (its list-tools name) for
// ToolChoiceNamed and is ignored otherwise.
type ToolChoice struct {
	Kind ToolChoiceKind
	Name string
}

// ChooseTool is the tool choice that makes the model call the named tool.
func ChooseTool(name string) *ToolChoice { return &ToolChoice{Kind: ToolChoiceNamed, Name: name} }

// MarshalJSON is {"tag": case} or, for named, {"tag": "named", "val": name}.
func (c ToolChoice) MarshalJSON() ([]byte, error) {
	tag, err := enumText(toolChoiceNames[:], "tool-choice", uint8(c.Kind))
	if err != nil {
		return nil, err
	}
	if c.Kind == ToolChoiceNamed {
		return json.Marshal(struct {
			Tag string `json:"tag"`
			Val string `json:"val"`
		}{string(tag), c.Name})
	}
	return json.Marshal(struct {
		Tag string `json:"tag"`
	}{string(tag)})
}

// UnmarshalJSON takes the form MarshalJSON writes.
func (c *ToolChoice) UnmarshalJSON(b []byte) error {
	var v struct {
		Tag string  `json:"tag"`
		Val *string `json:"val"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	var k uint8
	if err := enumParse(toolChoiceNames[:], "tool-choice", []byte(v.Tag), &k); err != nil {
		return err
	}
	*c = ToolChoice{Kind: ToolChoiceKind(k)}
	if c.Kind == ToolChoiceNamed {
		if v.Val == nil {
			return errors.New("toolhost: tool-choice named without a val")
		}
		c.Name = *v.Val
	}
	return nil
}

// ChatRequest is one request to a model (WIT record chat-request). A nil
// option takes the provider's default: Model its configured model,
// ToolChoice the API's default, MaxTokens the configured max_tokens.
// Tools are the records ListTools returns, as they are.
type ChatRequest struct {
	Model       *string     `json:"model"`
	Messages    []Message   `json:"messages"`
	Tools       []Tool      `json:"tools"`
	ToolChoice  *ToolChoice `json:"toolChoice"`
	MaxTokens   *uint32     `json:"maxTokens"`
	Temperature *float32    `json:"temperature"`
	Stop        []string    `json:"stop"`
}

// Usage is the tokens one request used (WIT record usage).
type Usage struct {
	InputTokens  uint32 `json:"inputTokens"`
	OutputTokens uint32 `json:"outputTokens"`
}

// ChatResponse is a whole answer (WIT record chat-response): the
// assistant message with its text and tool calls, why the model stopped,
// the tokens used and the model that answered. Message can be appended to
// the next request's Messages as it is.
type ChatResponse struct {
	Message      Message      `json:"message"`
	FinishReason FinishReason `json:"finishReason"`
	Usage        Usage        `json:"usage"`
	Model        string       `json:"model"`
}

// Text is the assistant message's text.
func (r *ChatResponse) Text() string { return r.Message.Content }

// Ptr returns a pointer to v, for the options of a ChatRequest:
// MaxTokens: toolhost.Ptr[uint32](256).
func Ptr[T any](v T) *T { return &v }

func enumName(names []string, what string, v uint8) string {
	if int(v) < len(names) {
		return names[v]
	}
	return what + "(" + strconv.Itoa(int(v)) + ")"
}

func enumText(names []string, what string, v uint8) ([]byte, error) {
	if int(v) < len(names) {
		return []byte(names[v]), nil
	}
	return nil, errors.New("toolhost: no " + what + " " + strconv.Itoa(int(v)))
}

func enumParse(names []string, what string, b []byte, out *uint8) error {
	for i, n := range names {
		if n == string(b) {
			*out = uint8(i)
			return nil
		}
	}
	return errors.New("toolhost: no " + what + " " + strconv.Quote(string(b)))
}
