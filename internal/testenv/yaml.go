package testenv

import (
	"os"
	"testing"

	"go.yaml.in/yaml/v3"
)

// LoadYAML parses the YAML document at path (a Kubernetes manifest, say)
// into generic maps and lists; it fails t on any error.
func LoadYAML(t testing.TB, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return doc
}

// At walks a LoadYAML document by map key (string) or list index (int);
// it fails t where the path does not lead anywhere.
func At(t testing.TB, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("%v: not a map at %q", path, k)
			}
			if v, ok = m[k]; !ok {
				t.Fatalf("%v: no %q", path, k)
			}
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				t.Fatalf("%v: no element %d", path, k)
			}
			v = l[k]
		default:
			t.Fatalf("%v: a path step is a string or an int, not %T", path, p)
		}
	}
	return v
}
