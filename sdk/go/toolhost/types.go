package toolhost

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
)

// ErrorCode is the WIT enum error-code. It is an error itself, so that
// errors.Is(err, toolhost.NotFound) tests a *HostError's code.
type ErrorCode uint8

// The error codes, in WIT order (their canonical ABI values).
const (
	NotFound ErrorCode = iota
	Denied
	InvalidArgument
	Unsupported
	Unavailable
	Busy
	Timeout
	Cancelled
	Protocol
	Internal
)

var codeNames = [...]string{"not-found", "denied", "invalid-argument", "unsupported", "unavailable", "busy", "timeout", "cancelled", "protocol", "internal"}

// String is the WIT name of the code ("not-found", ...).
func (c ErrorCode) String() string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return "error-code(" + strconv.Itoa(int(c)) + ")"
}

// Error makes a code usable as an errors.Is target.
func (c ErrorCode) Error() string { return c.String() }

// HostError is the WIT record host-error: what a host function returns as
// its err. The SDK makes one itself where the host would trap (a string
// that is not valid UTF-8: InvalidArgument) or where it could not take an
// envelope (a result too large for the reserved region: an ErrorEvent
// with code Internal whose error unwraps to a *TooLargeError).
type HostError struct {
	Code    ErrorCode
	Message string
	cause   error
}

// Error is "code: message".
func (e *HostError) Error() string { return e.Code.String() + ": " + e.Message }

// Is reports whether target is e's code: errors.Is(err, toolhost.Denied).
func (e *HostError) Is(target error) bool {
	c, ok := target.(ErrorCode)
	return ok && c == e.Code
}

// Unwrap is the SDK's cause of an error it made (nil for the host's).
func (e *HostError) Unwrap() error { return e.cause }

// Tool is one tool a tooling offers (WIT record tool).
type Tool struct {
	Name        string  `json:"name"`
	Description *string `json:"description"` // nil: none
	// InputSchema is the tool's JSON Schema for its arguments, as JSON text.
	InputSchema string `json:"inputSchema"`
}

// ToolResult is the outcome of one successful tool call (WIT record
// tool-result). A tool that reports isError is still a success here: see
// CallToolResult.IsError.
type ToolResult struct {
	Name      string `json:"name"`      // the tool that was called
	Arguments string `json:"arguments"` // the arguments, as JSON text
	Value     string `json:"value"`     // the MCP CallToolResult, as JSON text
}

// Decode unmarshals the raw MCP CallToolResult JSON (Value) into v.
func (r *ToolResult) Decode(v any) error { return json.Unmarshal([]byte(r.Value), v) }

// Result decodes Value into the common fields of an MCP CallToolResult.
func (r *ToolResult) Result() (*CallToolResult, error) {
	var c CallToolResult
	if err := r.Decode(&c); err != nil {
		return nil, err
	}
	return &c, nil
}

// CallToolResult is the part of an MCP CallToolResult most agents read;
// decode Value yourself (ToolResult.Decode) for the rest.
type CallToolResult struct {
	Content           []Content       `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`
}

// Content is one item of a CallToolResult's content.
type Content struct {
	Type     string `json:"type"` // "text", "image", "audio", "resource_link", "resource"
	Text     string `json:"text,omitempty"`
	Data     string `json:"data,omitempty"` // base64, for image and audio
	MIMEType string `json:"mimeType,omitempty"`
	URI      string `json:"uri,omitempty"`
}

// Text joins the text of every text content with spaces.
func (c *CallToolResult) Text() string {
	var parts []string
	for _, x := range c.Content {
		if x.Type == "text" {
			parts = append(parts, x.Text)
		}
	}
	return strings.Join(parts, " ")
}

// ResourceInfo is one readable resource (WIT record resource-info).
type ResourceInfo struct {
	URI         string  `json:"uri"`
	Name        string  `json:"name"`
	Description *string `json:"description"` // nil: none
	MIMEType    *string `json:"mimeType"`    // nil: none
}

// ResourceContent is a resource's content at the time it was read (WIT
// record resource-content). Content is text when MIMEType is absent or
// text/*, and base64 of the bytes otherwise: Bytes decodes either.
type ResourceContent struct {
	URI      string  `json:"uri"`
	MIMEType *string `json:"mimeType"` // nil: none
	Content  string  `json:"content"`
}

// IsText reports whether Content is text (rather than base64).
func (c *ResourceContent) IsText() bool {
	return c.MIMEType == nil || strings.HasPrefix(*c.MIMEType, "text/")
}

// Bytes is the content's bytes: Content itself for text, else its base64
// decoded.
func (c *ResourceContent) Bytes() ([]byte, error) {
	if c.IsText() {
		return []byte(c.Content), nil
	}
	return base64.StdEncoding.DecodeString(c.Content)
}
