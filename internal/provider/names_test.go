package provider

import (
	"regexp"
	"strings"
	"testing"

	"github.com/toolhostd/toolhostd/internal/tooling"
)

var apiName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func TestAPIToolName(t *testing.T) {
	for _, tc := range []struct{ mcp, want string }{
		{"read_file", "read_file"},
		{"list-dir", "list-dir"},
		{strings.Repeat("a", 64), strings.Repeat("a", 64)},
		{"fs/read.file", "fs_read_file_"},
		{"", "_"},
		{"héllo wörld", "h__llo_w__rld_"},
		{strings.Repeat("b", 65), strings.Repeat("b", 55) + "_"},
	} {
		got := apiToolName(tc.mcp)
		if !apiName.MatchString(got) {
			t.Errorf("%q -> %q: not acceptable to the APIs", tc.mcp, got)
		}
		if validToolName(tc.mcp) && got != tc.want || !validToolName(tc.mcp) && (!strings.HasPrefix(got, tc.want) || len(got) != len(tc.want)+8) {
			t.Errorf("%q -> %q, want %q (plus 8 hex digits when changed)", tc.mcp, got, tc.want)
		}
	}
}

func TestToolNamesConflicts(t *testing.T) {
	req := &Request{Tools: []tooling.Tool{{Name: "a"}, {Name: "a"}}}
	if _, err := newToolNames("p", req); err == nil || tooling.CodeOf(err) != tooling.CodeInvalidArgument {
		t.Errorf("a tool offered twice: %v", err)
	}
	// A valid name equal to another's mapped name.
	mapped := apiToolName("x.y")
	req = &Request{Tools: []tooling.Tool{{Name: "x.y"}, {Name: mapped}}}
	if _, err := newToolNames("p", req); err == nil || !strings.Contains(err.Error(), mapped) {
		t.Errorf("two names sharing an API name: %v", err)
	}
}

// FuzzToolNames: whatever the MCP names, each API name is acceptable to
// the APIs and maps back to its MCP name; a name the request did not
// offer maps back as it is.
func FuzzToolNames(f *testing.F) {
	for _, s := range []string{"read_file", "fs/read.file", "", "a.b.c/d", "日本語", strings.Repeat("z.", 50), "_12345678"} {
		f.Add(s, s+"/x", "other")
	}
	f.Fuzz(func(t *testing.T, a, b, c string) {
		req := &Request{Tools: []tooling.Tool{{Name: a}, {Name: b}}, Messages: []Message{{Role: RoleAssistant, ToolCalls: []ToolCall{{Name: c}}}}}
		n, err := newToolNames("p", req)
		if err != nil {
			if a == b || apiToolName(a) == apiToolName(b) || apiToolName(c) == apiToolName(a) || apiToolName(c) == apiToolName(b) {
				return // the same tool twice, or two names sharing an API name
			}
			t.Fatalf("newToolNames(%q, %q, %q): %v", a, b, c, err)
		}
		for _, mcp := range []string{a, b, c} {
			api := n.api(mcp)
			if !apiName.MatchString(api) {
				t.Fatalf("%q -> %q: not acceptable", mcp, api)
			}
			if back := n.mcp(api); back != mcp {
				t.Fatalf("%q -> %q -> %q", mcp, api, back)
			}
		}
		if validToolName(c+"q") && c+"q" != a && c+"q" != b && apiToolName(a) != c+"q" && apiToolName(b) != c+"q" && apiToolName(c) != c+"q" {
			if back := n.mcp(c + "q"); back != c+"q" {
				t.Fatalf("unknown name %q mapped to %q", c+"q", back)
			}
		}
	})
}
