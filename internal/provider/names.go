package provider

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/toolhostd/toolhostd/internal/tooling"
)

// maxToolName is the longest tool name both APIs accept: OpenAI wants
// ^[a-zA-Z0-9_-]{1,64}$, Anthropic the same set of characters.
const maxToolName = 64

// apiToolName is the name an MCP tool has on a model API. A name the APIs
// accept is kept as it is (the model sees the name the server gave); any
// other (dots, slashes, spaces, too long, empty) becomes its acceptable
// characters, cut short, and "_" and 8 hex digits of its SHA-256, so two
// MCP names never share an API name in practice (toolNames checks).
func apiToolName(mcp string) string {
	if validToolName(mcp) {
		return mcp
	}
	sum := sha256.Sum256([]byte(mcp))
	suffix := "_" + hex.EncodeToString(sum[:4])
	b := make([]byte, 0, maxToolName)
	for i := 0; i < len(mcp) && len(b) < maxToolName-len(suffix); i++ {
		c := mcp[i]
		if !toolNameByte(c) {
			c = '_'
		}
		b = append(b, c)
	}
	return string(b) + suffix
}

func validToolName(s string) bool {
	if s == "" || len(s) > maxToolName {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !toolNameByte(s[i]) {
			return false
		}
	}
	return true
}

func toolNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// toolNames maps the MCP tool names of one request to their API names and
// back: the tools offered and the tool calls of earlier assistant
// messages.
type toolNames struct {
	toAPI   map[string]string
	fromAPI map[string]string
}

// newToolNames maps every tool of req. Two MCP names that would share an
// API name are an invalid-argument error (a hash collision, or the same
// tool twice).
func newToolNames(provider string, req *Request) (*toolNames, error) {
	n := &toolNames{toAPI: map[string]string{}, fromAPI: map[string]string{}}
	add := func(mcp string, offered bool) error {
		if _, ok := n.toAPI[mcp]; ok {
			if offered {
				return tooling.Errorf(tooling.CodeInvalidArgument, "provider %q: the tool %q is offered twice", provider, mcp)
			}
			return nil
		}
		api := apiToolName(mcp)
		if other, ok := n.fromAPI[api]; ok {
			return tooling.Errorf(tooling.CodeInvalidArgument, "provider %q: the tools %q and %q would both be called %q on the model's API", provider, other, mcp, api)
		}
		n.toAPI[mcp], n.fromAPI[api] = api, mcp
		return nil
	}
	for _, t := range req.Tools {
		if err := add(t.Name, true); err != nil {
			return nil, err
		}
	}
	for _, m := range req.Messages {
		for _, c := range m.ToolCalls {
			if err := add(c.Name, false); err != nil {
				return nil, err
			}
		}
	}
	if c := req.ToolChoice; c != nil && c.Mode == ToolChoiceNamed {
		if err := add(c.Name, false); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// api is the API name of an MCP name.
func (n *toolNames) api(mcp string) string {
	if a, ok := n.toAPI[mcp]; ok {
		return a
	}
	return apiToolName(mcp)
}

// mcp is the MCP name of an API name a model returned; a name the request
// did not offer is returned as it is (calling it gives not-found).
func (n *toolNames) mcp(api string) string {
	if m, ok := n.fromAPI[api]; ok {
		return m
	}
	return api
}
