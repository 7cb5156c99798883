package config

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

// documentCases are the table rules of TOML 1.0 that a builder of its own
// can get wrong: each must be accepted or refused exactly as toml.Unmarshal
// does, and build the same map.
var documentCases = []struct {
	name, doc string
	ok        bool
}{
	{"scalars", "a = 1\nb = 0x1F\nc = 1_000\nd = 1e3\ne = inf\nf = -nan\ng = true\nh = 'x'\ni = \"\\u00e9\\n\"\nj = 1979-05-27T07:32:00Z\nk = 1979-05-27\nl = 07:32:00\nm = 1979-05-27T07:32:00.5\nn = 0o17\no = 0b101\n", true},
	{"multi-line strings", "a = \"\"\"\nx\\\n  y\"\"\"\nb = '''\nz'''\n", true},
	{"arrays", "a = [1, [2, 'x'], {b = 1}, []]\nb = [\n  1, # c\n  2,\n]\n", true},
	{"inline tables", "a = {b.c = 1, b.d = 2, e = {f = []}}\n", true},
	{"tables", "[a]\nx = 1\n[a.b]\ny = 2\n[c.d.e]\n[c]\nz = 3\n", true},
	{"array tables", "[[a]]\nx = 1\n[a.b]\ny = 1\n[[a]]\nx = 2\n[a.b]\ny = 2\n[[a.c]]\n[[a.c]]\n", true},
	{"dotted then sub-table", "[fruit]\napple.color = 'red'\napple.taste.sweet = true\n[fruit.apple.texture]\nsmooth = true\n", true},
	{"dotted at the root", "a.b = 1\na.c = 2\n[x]\n", true},
	{"super-table after its child", "[x.y.z.w]\n[x]\n", true},
	{"quoted keys", "\"a.b\" = 1\n'c d'.e = 2\n[\"f.g\".h]\n", true},
	{"empty", "", true},

	{"duplicate key", "a = 1\na = 2\n", false},
	{"duplicate table", "[a]\n[a]\n", false},
	{"duplicate in inline table", "a = {b = 1, b = 2}\n", false},
	{"header on a dotted table", "[fruit]\napple.color = 'red'\n[fruit.apple]\n", false},
	{"header on a dotted sub-table", "[fruit]\napple.taste.sweet = true\n[fruit.apple.taste]\n", false},
	{"dotted key into a header table", "[a.b.c]\nz = 9\n[a]\nb.c.t = 1\n", false},
	{"dotted key into an implicit table", "[a.b.c.d]\nz = 9\n[a]\nb.c.d.k.t = 1\n", false},
	{"header on a value", "a = 1\n[a]\n", false},
	{"header through a value", "a = 1\n[a.b]\n", false},
	{"header on an inline table", "a = {}\n[a]\n", false},
	{"header into an inline table", "a = {b = 1}\n[a.c]\n", false},
	{"dotted key into an inline table", "a = {b = 1}\na.c = 2\n", false},
	{"array table on a table", "[a]\n[[a]]\n", false},
	{"table on an array table", "[[a]]\n[a]\n", false},
	{"array table on a static array", "a = []\n[[a]]\n", false},
	{"key on a table", "[a.b]\n[a]\nb = 1\n", false},
	{"bad integer", "a = 01\n", false},
	{"integer out of range", "a = 9223372036854775808\n", false},
	{"bad date", "a = 1979-13-27\n", false},
	{"syntax", "[a\n", false},
	{"unterminated string", "a = \"x\n", false},
}

func TestDocumentMatchesGoTOML(t *testing.T) {
	for _, tc := range documentCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := buildDocument([]byte(tc.doc), newIndex([]byte(tc.doc)))
			if (err == nil) != tc.ok {
				t.Fatalf("buildDocument: err = %v, want ok = %v", err, tc.ok)
			}
			compareWithGoTOML(t, []byte(tc.doc), got, err)
		})
	}
}

// compareWithGoTOML fails unless toml.Unmarshal agrees with buildDocument's
// verdict and map.
func compareWithGoTOML(t *testing.T, data []byte, got map[string]any, err error) {
	t.Helper()
	var want map[string]any
	werr := toml.Unmarshal(data, &want)
	switch {
	case (err == nil) != (werr == nil):
		t.Fatalf("buildDocument err = %v; toml.Unmarshal err = %v\n%q", err, werr, data)
	case err == nil && !reflect.DeepEqual(comparable(got), comparable(nilIfEmpty(want))):
		t.Fatalf("buildDocument built\n%#v\ntoml.Unmarshal\n%#v\nfrom %q", got, want, data)
	}
}

// comparable replaces each NaN (unequal to itself) with a marker.
func comparable(v any) any {
	switch v := v.(type) {
	case float64:
		if math.IsNaN(v) {
			return "NaN"
		}
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = comparable(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = comparable(e)
		}
		return out
	}
	return v
}

func nilIfEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// FuzzDocument: on any input, buildDocument accepts what toml.Unmarshal
// accepts, builds the same map, and refuses what it refuses.
func FuzzDocument(f *testing.F) {
	for _, tc := range documentCases {
		f.Add([]byte(tc.doc))
	}
	for _, dir := range []string{"valid", "invalid"} {
		files, _ := filepath.Glob(filepath.Join("testdata", dir, "*.toml"))
		for _, file := range files {
			if data, err := os.ReadFile(file); err == nil {
				f.Add(data)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4096 {
			return // go-toml's own tracker is quadratic; keep each run short
		}
		got, err := buildDocument(data, newIndex(data))
		compareWithGoTOML(t, data, got, err)
	})
}
