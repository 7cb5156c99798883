package provider

import (
	"github.com/toolhostd/toolhostd/internal/provider/toolname"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

// newToolNames maps the MCP tool names of req (the tools offered, the
// tool calls of earlier assistant messages, a named tool choice) to API
// names. A tool offered twice, or two names sharing an API name, is an
// invalid-argument error.
func newToolNames(provider string, req *Request) (*toolname.Map, error) {
	m := toolname.NewMap()
	add := func(mcp string, offered bool) error {
		dup, err := m.Add(mcp)
		switch {
		case err != nil:
			return tooling.Errorf(tooling.CodeInvalidArgument, "provider %q: %w", provider, err)
		case dup && offered:
			return tooling.Errorf(tooling.CodeInvalidArgument, "provider %q: the tool %q is offered twice", provider, mcp)
		}
		return nil
	}
	for _, t := range req.Tools {
		if err := add(t.Name, true); err != nil {
			return nil, err
		}
	}
	for _, msg := range req.Messages {
		for _, c := range msg.ToolCalls {
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
	return m, nil
}
