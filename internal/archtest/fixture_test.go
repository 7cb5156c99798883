package archtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixtureModule is a module of three packages: internal/high imports
// internal/low; internal/wasmtime has the cgo.
func fixtureModule() module {
	return module{
		"internal/high":     {Dir: filepath.Join("testdata", "mod", "high"), GoFiles: []string{"high.go"}, Imports: []string{"internal/low"}},
		"internal/low":      {Dir: filepath.Join("testdata", "mod", "low"), GoFiles: []string{"low.go"}},
		"internal/wasmtime": {Dir: filepath.Join("testdata", "mod", "wasmtime"), CgoFiles: []string{"cgo.go"}},
	}
}

// TestCheckFixtures shows the checker passes a good doc and fails each bad
// one with exactly the messages given, and no others.
func TestCheckFixtures(t *testing.T) {
	tests := []struct {
		name   string
		doc    string // a file of testdata
		mutate func(module)
		want   []string // substrings, one per error; none for a good doc
	}{
		{name: "good", doc: "good.md"},
		{
			name: "missing package", doc: "missing_package.md",
			want: []string{"package internal/wasmtime is not in the table of docs/architecture.md; add the row\n| `internal/wasmtime` | 0 | what it owns |"},
		},
		{
			name: "new package above others", doc: "good.md",
			mutate: func(m module) {
				m["internal/supervisor"] = &pkgInfo{Imports: []string{"internal/high", "internal/low"}}
			},
			want: []string{"add the row\n| `internal/supervisor` | 2 | what it owns |\nat floor 2 or above (one above internal/high, floor 1, the highest it imports)"},
		},
		{
			name: "unknown package", doc: "unknown_package.md",
			want: []string{"line 7: the table lists internal/gone, which is not a package of the module; remove its row"},
		},
		{
			name: "import back up", doc: "import_back_up.md",
			want: []string{"import back up: internal/high (floor 0) imports internal/low (floor 1); an import must go to a lower floor"},
		},
		{
			name: "import cycle", doc: "good.md",
			mutate: func(m module) { m["internal/low"].Imports = []string{"internal/high"} },
			want: []string{
				"import back up: internal/low (floor 0) imports internal/high (floor 1)",
				"import cycle: internal/high -> internal/low -> internal/high",
			},
		},
		{
			name: "cgo outside wasmtime", doc: "good.md",
			mutate: func(m module) { m["internal/low"].CgoFiles = []string{"low.go"} },
			want:   []string{`internal/low has cgo files (low.go); only internal/wasmtime may import "C"`},
		},
		{
			name: "stale floors", doc: "stale_floors.md",
			want: []string{"the ## Floors diagram does not agree with the table; run `go test ./internal/archtest -update`"},
		},
		{
			name: "bad function names", doc: "bad_function.md",
			want: []string{
				"path \"A message\": `low.Store.Put`: internal/low has no function or method Store.Put in its non-test files",
				"path \"A message\": `lo.Table.Len`: no package of the module is lo",
			},
		},
		{
			name: "too few names", doc: "few_names.md",
			want: []string{`path "A key-value write" names 2 functions; want at least 4`},
		},
		{
			name: "missing path", doc: "missing_path.md",
			want: []string{`## Paths has no subsection "### A key-value write"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, err := os.ReadFile(filepath.Join("testdata", tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			d, err := parseDoc(string(text))
			if err != nil {
				t.Fatalf("parse %s: %v", tt.doc, err)
			}
			mod := fixtureModule()
			if tt.mutate != nil {
				tt.mutate(mod)
			}
			errs := check(d, mod)
			if len(errs) != len(tt.want) {
				t.Fatalf("got %d errors, want %d:\n%s", len(errs), len(tt.want), strings.Join(errs, "\n"))
			}
			for i, w := range tt.want {
				if !strings.Contains(errs[i], w) {
					t.Errorf("error %d:\n%s\nwant it to contain:\n%s", i, errs[i], w)
				}
			}
		})
	}
}

// TestParseDocErrors shows a doc the checker cannot read is refused with
// what it lacks.
func TestParseDocErrors(t *testing.T) {
	tests := []struct {
		name, doc, want string
	}{
		{name: "no table", doc: "# A doc\n\n## Floors\n\n```\n```\n", want: `no package table: want a header line "| package | floor | owns |"`},
		{name: "no floors", doc: "| package | floor | owns |\n|---|---|---|\n| `a` | 0 | x |\n", want: `no fenced block under a "## Floors" heading`},
		{name: "bad floor", doc: "| package | floor | owns |\n|---|---|---|\n| `a` | top | x |\n", want: `line 3: package a: the floor "top" is not an integer >= 0`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseDoc(tt.doc)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("parseDoc: %v, want %q", err, tt.want)
			}
		})
	}
}

// TestFloorsBlockWraps shows a long floor wraps under its first package.
func TestFloorsBlockWraps(t *testing.T) {
	var rows []row
	for _, p := range []string{"internal/aaaaaaaaaa", "internal/bbbbbbbbbb", "internal/cccccccccc", "internal/dddddddddd"} {
		rows = append(rows, row{pkg: p, floor: 3})
	}
	got := strings.Join(floorsBlock(rows), "\n")
	want := "floor 3  internal/aaaaaaaaaa, internal/bbbbbbbbbb, internal/cccccccccc,\n         internal/dddddddddd"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

// TestUpdateRewritesFloors shows what -update writes: the stale fixture
// with its Floors block redrawn from its table is the good one.
func TestUpdateRewritesFloors(t *testing.T) {
	stale, err := os.ReadFile(filepath.Join("testdata", "stale_floors.md"))
	if err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(filepath.Join("testdata", "good.md"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := parseDoc(string(stale))
	if err != nil {
		t.Fatal(err)
	}
	if got := d.withFloors(floorsBlock(d.rows)); got != string(good) {
		t.Fatalf("-update of stale_floors.md wrote\n%s\nwant good.md:\n%s", got, good)
	}
}
