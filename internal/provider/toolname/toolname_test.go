package toolname

import (
	"errors"
	"regexp"
	"strings"
	"testing"
)

var apiName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func TestAPI(t *testing.T) {
	for _, tc := range []struct{ mcp, want string }{
		{"read_file", "read_file"},
		{"list-dir", "list-dir"},
		{strings.Repeat("a", 64), strings.Repeat("a", 64)},
		{"fs/read.file", "fs_read_file_"},
		{"", "_"},
		{"héllo wörld", "h__llo_w__rld_"},
		{strings.Repeat("b", 65), strings.Repeat("b", 55) + "_"},
	} {
		got := API(tc.mcp)
		if !apiName.MatchString(got) {
			t.Errorf("%q -> %q: not acceptable to the APIs", tc.mcp, got)
		}
		if Valid(tc.mcp) && got != tc.want || !Valid(tc.mcp) && (!strings.HasPrefix(got, tc.want) || len(got) != len(tc.want)+8) {
			t.Errorf("%q -> %q, want %q (plus 8 hex digits when changed)", tc.mcp, got, tc.want)
		}
	}
}

func TestMapClash(t *testing.T) {
	m := NewMap()
	if dup, err := m.Add("x.y"); dup || err != nil {
		t.Fatal(dup, err)
	}
	if dup, err := m.Add("x.y"); !dup || err != nil {
		t.Errorf("again: %v, %v", dup, err)
	}
	// A valid name equal to another's mapped name.
	if _, err := m.Add(API("x.y")); !errors.Is(err, ErrClash) || !strings.Contains(err.Error(), `"x.y"`) {
		t.Errorf("clash: %v", err)
	}
}

// FuzzMap: whatever the MCP names, each API name is acceptable to the
// APIs and maps back to its MCP name; a name the Map does not hold maps
// back as it is.
func FuzzMap(f *testing.F) {
	for _, s := range []string{"read_file", "fs/read.file", "", "a.b.c/d", "日本語", strings.Repeat("z.", 50), "_12345678"} {
		f.Add(s, s+"/x", "other")
	}
	f.Fuzz(func(t *testing.T, a, b, unknown string) {
		m := NewMap()
		for _, n := range []string{a, b} {
			if _, err := m.Add(n); err != nil {
				if !errors.Is(err, ErrClash) || API(a) != API(b) {
					t.Fatalf("Add(%q) after %q: %v", n, a, err)
				}
				return
			}
		}
		for _, n := range []string{a, b} {
			api := m.API(n)
			if !apiName.MatchString(api) {
				t.Fatalf("%q -> %q: not acceptable", n, api)
			}
			if back := m.MCP(api); back != n {
				t.Fatalf("%q -> %q -> %q", n, api, back)
			}
		}
		if unknown != API(a) && unknown != API(b) {
			if back := m.MCP(unknown); back != unknown {
				t.Fatalf("unknown %q mapped to %q", unknown, back)
			}
		}
	})
}
