package contract

import (
	"strings"
	"testing"

	"github.com/toolhostd/toolhostd/internal/provider"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

// TestValidRequestToolCallID: a tool message must answer, by its
// tool-call-id, a tool call of an assistant message before it in the same
// request; otherwise the request is invalid-argument and the message names
// the id.
func TestValidRequestToolCallID(t *testing.T) {
	user := provider.Message{Role: provider.RoleUser, Content: "weather?"}
	asks := func(ids ...string) provider.Message {
		m := provider.Message{Role: provider.RoleAssistant}
		for _, id := range ids {
			m.ToolCalls = append(m.ToolCalls, provider.ToolCall{ID: id, Name: "weather", Arguments: `{"city":"Oslo"}`})
		}
		return m
	}
	answer := func(id string) provider.Message {
		return provider.Message{Role: provider.RoleTool, Content: "sunny", ToolCallID: id}
	}
	for _, tc := range []struct {
		name    string
		msgs    []provider.Message
		wantBad string // "" valid; else a part of the error message
	}{
		{"answers the call before it", []provider.Message{user, asks("c1"), answer("c1")}, ""},
		{"answers both calls of one turn", []provider.Message{user, asks("c1", "c2"), answer("c2"), answer("c1")}, ""},
		{"answers a call of an earlier turn", []provider.Message{user, asks("c1"), answer("c1"), asks("c2"), answer("c1"), answer("c2")}, ""},
		{"no tool call at all", []provider.Message{user, answer("c1")}, `tool-call-id "c1" answers no tool call`},
		{"an id no call has", []provider.Message{user, asks("c1"), answer("c9")}, `tool-call-id "c9" answers no tool call`},
		{"the call comes after the answer", []provider.Message{user, answer("c1"), asks("c1")}, `tool-call-id "c1" answers no tool call`},
		{"no tool-call-id", []provider.Message{user, asks("c1"), answer("")}, "needs the tool-call-id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := validRequest(provider.Request{Messages: tc.msgs})
			switch {
			case tc.wantBad == "" && err != nil:
				t.Fatalf("validRequest = %v, want nil", err)
			case tc.wantBad != "" && err == nil:
				t.Fatalf("validRequest = nil, want invalid-argument (%s)", tc.wantBad)
			case tc.wantBad != "" && (err.Code != tooling.CodeInvalidArgument || !strings.Contains(err.Message, tc.wantBad)):
				t.Fatalf("validRequest = %v, want invalid-argument containing %q", err, tc.wantBad)
			}
		})
	}
}
