package mcpclient

import (
	"context"
	"encoding/json"
	"slices"
	"sort"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/config"
)

// Elicitation: nobody sits at toolhostd's end of a session to fill in a
// form, so a server's elicitation/create is answered by the tooling's
// policy (tooling.X.elicitation): "decline" (the default) declines;
// "accept-defaults" accepts with every field of the requested schema set
// to its default (SEP-1034), and declines when a required field has no
// default or the server asks to open a URL. Every request is logged.

// maxLoggedMessage bounds the server's elicitation message in the log.
const maxLoggedMessage = 200

func (m *Client) onElicit(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	p := req.Params
	if p == nil {
		p = &mcp.ElicitParams{}
	}
	mode := p.Mode
	if mode == "" {
		mode = "form"
	}
	msg := p.Message
	if len(msg) > maxLoggedMessage {
		msg = msg[:maxLoggedMessage] + "…"
	}
	fields := []zap.Field{zap.String("mode", mode), zap.String("policy", m.cfg.Elicitation), zap.String("message", msg)}
	decline := func(reason string) (*mcp.ElicitResult, error) {
		m.log.Info("elicitation declined", append(fields, zap.String("reason", reason))...)
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	if m.cfg.Elicitation != config.ElicitationAcceptDefaults {
		return decline("the policy is decline")
	}
	if mode != "form" {
		return decline("only form elicitations are accepted with defaults")
	}
	content, missing, err := schemaDefaults(p.RequestedSchema)
	if err != nil {
		return decline("unreadable requested schema: " + err.Error())
	}
	if len(missing) > 0 {
		fields = append(fields, zap.Strings("fields_without_default", missing))
		return decline("a required field has no default")
	}
	keys := make([]string, 0, len(content))
	for k := range content {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	m.log.Info("elicitation accepted with defaults", append(fields, zap.Strings("fields", keys))...)
	return &mcp.ElicitResult{Action: "accept", Content: content}, nil
}

// schemaDefaults returns the default of every property of an elicitation
// schema that has one, and the required properties that have none.
func schemaDefaults(schema any) (content map[string]any, missing []string, err error) {
	content = map[string]any{}
	if schema == nil {
		return content, nil, nil
	}
	b, err := json.Marshal(schema)
	if err != nil {
		return nil, nil, err
	}
	var s struct {
		Properties map[string]struct {
			Default json.RawMessage `json:"default"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, nil, err
	}
	for name, prop := range s.Properties {
		if len(prop.Default) == 0 || string(prop.Default) == "null" {
			continue
		}
		var v any
		if err := json.Unmarshal(prop.Default, &v); err != nil {
			return nil, nil, err
		}
		content[name] = v
	}
	for _, r := range s.Required {
		if _, ok := content[r]; !ok && !slices.Contains(missing, r) {
			missing = append(missing, r)
		}
	}
	sort.Strings(missing)
	return content, missing, nil
}
