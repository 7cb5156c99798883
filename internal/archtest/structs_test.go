package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// maxFields bounds a struct's fields in production code (issue 39: "no
// struct has more than about 12 fields"): each named field and each
// embedded one counts one. A struct past it holds more than one thing;
// group what belongs together into a type of its own.
const maxFields = 12

// TestStructFields: no struct type declared in the non-test files of the
// module's packages, test kits aside (testenv and the packages named
// *test), has more than maxFields fields.
func TestStructFields(t *testing.T) {
	root, modPath := moduleRoot(t)
	for _, e := range bigStructs(listModule(t, root, modPath), maxFields) {
		t.Errorf("%s; group what belongs together into a type of its own", e)
	}
}

// TestBigStructs: bigStructs finds a struct over the bound, counts an
// embedded field as one and a line of several names as several, and
// leaves test kits alone.
func TestBigStructs(t *testing.T) {
	mod := module{
		"internal/a":           {Dir: filepath.Join("testdata", "structs", "a"), GoFiles: []string{"a.go"}},
		"internal/a/atest":     {Dir: filepath.Join("testdata", "structs", "a"), GoFiles: []string{"a.go"}},
		"internal/testenv":     {Dir: filepath.Join("testdata", "structs", "a"), GoFiles: []string{"a.go"}},
		"internal/fine/nested": {Dir: filepath.Join("testdata", "structs", "fine"), GoFiles: []string{"fine.go"}},
	}
	got := bigStructs(mod, 3)
	want := []string{
		"internal/a.big (a.go:4) has 4 fields, more than 3",
		"internal/a.inner (a.go:12) has 5 fields, more than 3",
	}
	if !slices.Equal(got, want) {
		t.Errorf("bigStructs = %q\nwant %q", got, want)
	}
}

// bigStructs returns, sorted, a line for each struct type of mod's
// non-test files with more than limit fields, test kits aside.
func bigStructs(mod module, limit int) []string {
	var out []string
	for rel, info := range mod {
		if base := path.Base(rel); base == "testenv" || strings.HasSuffix(base, "test") {
			continue
		}
		for _, f := range info.GoFiles {
			fset := token.NewFileSet()
			file, err := parser.ParseFile(fset, filepath.Join(info.Dir, f), nil, parser.SkipObjectResolution)
			if err != nil {
				out = append(out, fmt.Sprintf("%s: %v", rel, err))
				continue
			}
			ast.Inspect(file, func(n ast.Node) bool {
				ts, ok := n.(*ast.TypeSpec)
				if !ok {
					return true
				}
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					return true
				}
				if c := fieldCount(st); c > limit {
					out = append(out, fmt.Sprintf("%s.%s (%s:%d) has %d fields, more than %d",
						rel, ts.Name.Name, f, fset.Position(ts.Pos()).Line, c, limit))
				}
				return true
			})
		}
	}
	slices.Sort(out)
	return out
}

// fieldCount is a struct's fields: each name of a field list, and each
// embedded type, one.
func fieldCount(st *ast.StructType) int {
	n := 0
	for _, f := range st.Fields.List {
		n += max(len(f.Names), 1)
	}
	return n
}
