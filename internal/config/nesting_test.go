package config

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// parseAlloc parses data and returns its error and the bytes allocated.
func parseAlloc(t *testing.T, data []byte) (uint64, error) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := Parse("/cfg/deep.toml", data)
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc, err
}

// TestNestingLimit: a config nested 10,000 levels deep (every way TOML
// nests) is refused at once with the position of the first level too deep
// and its key, and costs next to nothing (it cost about 1 GB).
func TestNestingLimit(t *testing.T) {
	const n = 10000
	for _, tc := range []struct {
		name, doc string
		line, col int
		key, msg  string
	}{
		{"arrays", "version = 1\n[tooling.a]\nargs = " + strings.Repeat("[", n) + strings.Repeat("]", n) + "\n",
			3, 8 + MaxNesting, "tooling.a.args", "arrays and inline tables nested more than 16 deep"},
		{"inline tables", "version = 1\nx = " + strings.Repeat("{a=", n) + "1" + strings.Repeat("}", n) + "\n",
			2, 5 + 3*MaxNesting, "x", "arrays and inline tables nested more than 16 deep"},
		{"mixed", "version = 1\nx = " + strings.Repeat("[{a=", n) + "1" + strings.Repeat("}]", n) + "\n",
			2, 5 + 4*(MaxNesting/2), "x", "arrays and inline tables nested more than 16 deep"},
		{"dotted key", "version = 1\n\n  " + strings.Repeat("a.", n) + "a = 1\n",
			3, 3, "a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.…", "key has 10001 parts; at most 16 are allowed"},
		{"table header", "version = 1\n[" + strings.Repeat("a.", n) + "a]\n",
			2, 1, "a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.…", "table name has 10001 parts; at most 16 are allowed"},
		{"inline table across lines", "version = 1\nx = {a=1, # c\n" + strings.Repeat("b={\n", n) + "c=1" + strings.Repeat("}", n) + "}\n",
			2 + MaxNesting, 3, "x", "arrays and inline tables nested more than 16 deep"},
		{"inline dotted key", "version = 1\n[tooling.a]\nenv = { " + strings.Repeat("b.", n) + "b = \"x\" }\n",
			3, 9, ("tooling.a.env." + strings.Repeat("b.", 40))[:80] + "…", "key has 10001 parts; at most 16 are allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			alloc, err := parseAlloc(t, []byte(tc.doc))
			var errs Errors
			if !errors.As(err, &errs) || len(errs) != 1 {
				t.Fatalf("want one error, got %v", err)
			}
			e := errs[0]
			if e.File != "/cfg/deep.toml" || e.Line != tc.line || e.Col != tc.col || e.Key != tc.key || e.Msg != tc.msg {
				t.Errorf("error = %s:%d:%d key %q msg %q\nwant line %d col %d key %q msg %q", e.File, e.Line, e.Col, e.Key, e.Msg, tc.line, tc.col, tc.key, tc.msg)
			}
			if alloc > 1<<20 {
				t.Errorf("refusing it allocated %d bytes", alloc)
			}
		})
	}
}

// TestNestingWithinLimit: nesting up to the limit, and brackets, dots and
// quotes inside strings and comments, are left to the parser and the
// schema.
func TestNestingWithinLimit(t *testing.T) {
	noNesting := func(t *testing.T, doc string) error {
		t.Helper()
		_, err := Parse("/cfg/ok.toml", []byte(doc))
		if err != nil && (strings.Contains(err.Error(), "nested more than") || strings.Contains(err.Error(), "parts; at most")) {
			t.Fatalf("refused as too deep:\n%s\n%v", doc, err)
		}
		return err
	}
	deep := "version = 1\nx = " + strings.Repeat("[", MaxNesting) + strings.Repeat("]", MaxNesting) + "\n"
	if err := noNesting(t, deep); err == nil || !strings.Contains(err.Error(), "x: unknown key") {
		t.Errorf("want the schema's unknown key, got %v", err)
	}
	dotted := "version = 1\n" + strings.Repeat("a.", MaxNesting-1) + "a = 1\n"
	if err := noNesting(t, dotted); err == nil || !strings.Contains(err.Error(), "a: unknown key") {
		t.Errorf("want the schema's unknown key, got %v", err)
	}
	quoted := `version = 1 # [[[[[[[[[[[[[[[[[[[[[[[[[[ "
[tooling."a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s.t"] # [[[[
command = "node"
args = ["[[[[[[[[[[[[[[[[[[[[[[[[[", '{{{{{{{{{{{{{{{{{{{{{{{{{{{{{', """
[[[[[[[[[[[[[[[[[[[[[[[[ \""" "\\""", '''
{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{ '' ''',
  # ]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]
  "a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s.t",
]
env = { "x.y.z.a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q" = "[[[[[[[[[[[[[[[[[[[[{{{{{{{{{{{{{{{" }
`
	if err := noNesting(t, quoted); err == nil || !strings.Contains(err.Error(), `tooling."a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s.t"`) {
		t.Errorf("want the schema's error on the tooling name, got %v", err)
	}
	// A multi-line string's lines are counted: the error after it is at
	// the right line.
	after := "version = 1\nx = \"\"\"\na\\\nb\n\"\"\"\ny = " + strings.Repeat("[", MaxNesting+1) + "\n"
	_, err := Parse("/cfg/ok.toml", []byte(after))
	if err == nil || !strings.HasPrefix(err.Error(), fmt.Sprintf("/cfg/ok.toml:6:%d: y: arrays and inline tables nested", 5+MaxNesting)) {
		t.Errorf("want the nesting error at 6:%d, got %v", 5+MaxNesting, err)
	}
}

// TestParseCostBound: whatever its shape (deep, wide, many tables, many
// keys, many errors), a config costs memory in proportion to its size:
// at most maxAllocPerByte bytes allocated per byte of TOML, and a file
// twice as large costs at most 2.3 times as much; MaxSize bounds the
// whole. It bounds memory only: toml.Unmarshal's tracker, quadratic in
// time, allocated linearly and passed it. Time is BenchmarkParseAgents'.
func TestParseCostBound(t *testing.T) {
	fill := func(size int, head, unit, tail string) string {
		var b strings.Builder
		b.WriteString(head)
		for i := 0; b.Len()+len(unit)+len(tail)+8 < size; i++ {
			b.WriteString(strings.ReplaceAll(unit, "N", fmt.Sprint(i)))
		}
		b.WriteString(tail)
		return b.String()
	}
	for _, tc := range []struct {
		name string
		doc  func(size int) string
	}{
		{"deep arrays", func(n int) string {
			return "version = 1\nx = " + strings.Repeat("[", n/2-10) + strings.Repeat("]", n/2-10) + "\n"
		}},
		{"deep inline tables", func(n int) string { return "version = 1\nx = " + fill(n-16, "", "{a=", "") + "\n" }},
		{"long dotted key", func(n int) string { return fill(n, "version = 1\n", "a.", "a = 1\n") }},
		{"wide array", func(n int) string { return fill(n, "version = 1\nx = [", "1,", "1]\n") }},
		{"wide nested arrays", func(n int) string { return fill(n, "version = 1\nx = [", "[[[1]]],", "1]\n") }},
		{"long args", func(n int) string {
			return fill(n, "version = 1\n[tooling.a]\ncommand = \"x\"\nargs = [", `"",`, "\"\"]\n")
		}},
		{"many toolings", func(n int) string { return fill(n, "version = 1\n", "[tooling.tN]\ncommand = \"x\"\n", "") }},
		{"many bad toolings", func(n int) string { return fill(n, "version = 1\n", "[tooling.tN]\ncomand = \"x\"\n", "") }},
		{"many agents", func(n int) string {
			return fill(n, "version = 1\n[tooling.fs]\ncommand = \"x\"\n", "[agent.aN]\ncomponent = \"a.wasm\"\ntoolings = [\"fs\"]\ninput = \"N\"\n", "")
		}},
		{"many keys", func(n int) string { return fill(n, "version = 1\n[x]\n", "kN = 1\n", "") }},
		{"many array tables", func(n int) string { return fill(n, "version = 1\n", "[[x]]\n", "") }},
		{"big env", func(n int) string {
			return fill(n, "version = 1\n[tooling.a]\ncommand = \"x\"\nenv = {", `kN = "",`, "z = \"\"}\n")
		}},
		{"long string", func(n int) string {
			return "version = 1\n[tooling.a]\ncommand = \"" + strings.Repeat("x", n-40) + "\"\n"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const size = 1 << 19
			small, large := tc.doc(size/2), tc.doc(size)
			if len(large) > size {
				t.Fatalf("document of %d bytes", len(large))
			}
			allocSmall, _ := parseAlloc(t, []byte(small))
			allocLarge, _ := parseAlloc(t, []byte(large))
			if perByte := float64(allocLarge) / float64(len(large)); perByte > maxAllocPerByte {
				t.Errorf("%d bytes allocated for a %d-byte config: %.0f per byte; the bound is %d", allocLarge, len(large), perByte, maxAllocPerByte)
			}
			// The smaller config's cost counts as at least its size: a shape
			// refused at once costs a few hundred bytes, less than what the
			// runtime itself allocates meanwhile (600 then 6,528 bytes was
			// seen), and no ratio of such costs says anything about growth.
			if ratio := float64(allocLarge) / float64(max(allocSmall, uint64(len(small)))); ratio > 2.3 {
				t.Errorf("twice the config cost %.1f times as much (%d then %d bytes allocated): not linear", ratio, allocSmall, allocLarge)
			}
		})
	}
}

// maxAllocPerByte bounds what parsing costs per byte of TOML: the worst
// shape measured, a long array of small integers, allocates about 300.
const maxAllocPerByte = 400
