package metrics

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// FuzzIsError: for any result go-sdk marshals, whatever its text and
// structured content, isError reports exactly its IsError.
func FuzzIsError(f *testing.F) {
	f.Add(false, "hello", `{"a":1}`)
	f.Add(true, "it failed", `null`)
	f.Add(false, `"isError": true`, `{"isError":true}`)
	f.Add(false, `{"isError":true}`, `{"nested":{"isError":true}}`)
	f.Fuzz(func(t *testing.T, isErr bool, text, structured string) {
		r := &mcp.CallToolResult{IsError: isErr, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
		if json.Valid([]byte(structured)) {
			r.StructuredContent = json.RawMessage(structured)
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Skip() // not a result go-sdk could send
		}
		if got := isError(string(b)); got != isErr {
			t.Fatalf("isError(%s) = %v, want %v", b, got, isErr)
		}
	})
}

func TestIsErrorText(t *testing.T) {
	for _, tt := range []struct {
		v    string
		want bool
	}{
		{`{"content":[],"isError":true}`, true},
		{`{"isError" : true }`, true},
		{`{"content":[],"isError":false}`, false},
		{`{"content":[]}`, false},
		{`{"isError":"true"}`, false},
		{`{"isError":true`, false}, // not JSON
		{`{"content":[{"type":"text","text":"\"isError\":true"}]}`, false},
		{``, false},
	} {
		if got := isError(tt.v); got != tt.want {
			t.Errorf("isError(%s) = %v, want %v", tt.v, got, tt.want)
		}
	}
}
