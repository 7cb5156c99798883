package wasmtime

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// ty is a WIT type for the test component generator: it renders the WAT
// type and computes the canonical ABI flattening of it.
type ty struct {
	kind   string // bool s8 ... string, list, record, tuple, variant, enum, option, result, flags, own, borrow
	elem   *ty
	fields []tyField // record
	elems  []*ty     // tuple
	cases  []tyField // variant (ty nil: no payload)
	names  []string  // enum, flags
	ok     *ty       // result
	err    *ty       // result
	name   string    // record/variant/enum/flags: the type's import name
	res    string    // own/borrow: resource type variable
}

type tyField struct {
	name string
	ty   *ty
}

func prim(k string) *ty        { return &ty{kind: k} }
func listOf(e *ty) *ty         { return &ty{kind: "list", elem: e} }
func optionOf(e *ty) *ty       { return &ty{kind: "option", elem: e} }
func resultOf(ok, err *ty) *ty { return &ty{kind: "result", ok: ok, err: err} }
func tupleOf(es ...*ty) *ty    { return &ty{kind: "tuple", elems: es} }
func recordOf(name string, fs ...tyField) *ty {
	return &ty{kind: "record", name: name, fields: fs}
}
func variantOf(name string, cs ...tyField) *ty {
	return &ty{kind: "variant", name: name, cases: cs}
}
func enumOf(name string, ns ...string) *ty  { return &ty{kind: "enum", name: name, names: ns} }
func flagsOf(name string, ns ...string) *ty { return &ty{kind: "flags", name: name, names: ns} }

// wat renders a reference to the type.
func (t *ty) wat() string {
	switch t.kind {
	case "list":
		return "(list " + t.elem.wat() + ")"
	case "option":
		return "(option " + t.elem.wat() + ")"
	case "result":
		s := "(result"
		if t.ok != nil {
			s += " " + t.ok.wat()
		}
		if t.err != nil {
			s += " (error " + t.err.wat() + ")"
		}
		return s + ")"
	case "tuple":
		parts := make([]string, len(t.elems))
		for i, e := range t.elems {
			parts[i] = e.wat()
		}
		return "(tuple " + strings.Join(parts, " ") + ")"
	case "record", "variant", "enum", "flags":
		return "$" + t.name
	case "own", "borrow":
		return "(" + t.kind + " " + t.res + ")"
	}
	return t.kind
}

// defs appends the definitions and imports of the named types t uses, in
// dependency order.
func (t *ty) defs(seen map[string]bool, out *strings.Builder) {
	switch t.kind {
	case "list", "option":
		t.elem.defs(seen, out)
	case "result":
		if t.ok != nil {
			t.ok.defs(seen, out)
		}
		if t.err != nil {
			t.err.defs(seen, out)
		}
	case "tuple":
		for _, e := range t.elems {
			e.defs(seen, out)
		}
	case "record", "variant", "enum", "flags":
		if seen[t.name] {
			return
		}
		seen[t.name] = true
		var body string
		switch t.kind {
		case "record":
			for _, f := range t.fields {
				f.ty.defs(seen, out)
				body += fmt.Sprintf(" (field %q %s)", f.name, f.ty.wat())
			}
		case "variant":
			for _, c := range t.cases {
				if c.ty == nil {
					body += fmt.Sprintf(" (case %q)", c.name)
					continue
				}
				c.ty.defs(seen, out)
				body += fmt.Sprintf(" (case %q %s)", c.name, c.ty.wat())
			}
		case "enum", "flags":
			for _, n := range t.names {
				body += fmt.Sprintf(" %q", n)
			}
		}
		fmt.Fprintf(out, "  (type $%s-def (%s%s))\n  (import %q (type $%s (eq $%s-def)))\n", t.name, t.kind, body, t.name, t.name, t.name)
	}
}

func join(a, b string) string {
	if a == b {
		return a
	}
	if (a == "i32" && b == "f32") || (a == "f32" && b == "i32") {
		return "i32"
	}
	return "i64"
}

func flattenCases(payloads []*ty) []string {
	flat := []string{"i32"}
	var acc []string
	for _, p := range payloads {
		if p == nil {
			continue
		}
		for i, f := range p.flat() {
			if i < len(acc) {
				acc[i] = join(acc[i], f)
			} else {
				acc = append(acc, f)
			}
		}
	}
	return append(flat, acc...)
}

// flat is the canonical ABI flattening of the type.
func (t *ty) flat() []string {
	switch t.kind {
	case "bool", "s8", "u8", "s16", "u16", "s32", "u32", "char", "enum", "own", "borrow":
		return []string{"i32"}
	case "s64", "u64":
		return []string{"i64"}
	case "f32":
		return []string{"f32"}
	case "f64":
		return []string{"f64"}
	case "string", "list":
		return []string{"i32", "i32"}
	case "record":
		var out []string
		for _, f := range t.fields {
			out = append(out, f.ty.flat()...)
		}
		return out
	case "tuple":
		var out []string
		for _, e := range t.elems {
			out = append(out, e.flat()...)
		}
		return out
	case "variant":
		ps := make([]*ty, len(t.cases))
		for i, c := range t.cases {
			ps[i] = c.ty
		}
		return flattenCases(ps)
	case "option":
		return flattenCases([]*ty{nil, t.elem})
	case "result":
		return flattenCases([]*ty{t.ok, t.err})
	case "flags":
		if len(t.names) == 0 {
			return nil
		}
		return []string{"i32"}
	}
	panic("flat: unknown kind " + t.kind)
}

// libcWAT is a core module with a memory and a bump allocator (realloc)
// that grows memory as needed; reset rewinds it (run as post-return).
const libcWAT = `(core module $libc
    (memory (export "mem") 1)
    (global $heap (mut i32) (i32.const 1024))
    (func (export "realloc") (param i32 i32 i32 i32) (result i32)
      (local $p i32) (local $end i32)
      (local.set $p (i32.and (i32.add (global.get $heap) (i32.sub (local.get 2) (i32.const 1)))
                             (i32.xor (i32.sub (local.get 2) (i32.const 1)) (i32.const -1))))
      (local.set $end (i32.add (local.get $p) (local.get 3)))
      (block $ok
        (br_if $ok (i32.le_u (local.get $end) (i32.mul (memory.size) (i32.const 65536))))
        (br_if $ok (i32.ne (memory.grow (i32.add (i32.shr_u (i32.sub (local.get $end)
          (i32.mul (memory.size) (i32.const 65536))) (i32.const 16)) (i32.const 1))) (i32.const -1)))
        unreachable)
      (global.set $heap (local.get $end))
      (local.get $p))
    (func (export "reset") (global.set $heap (i32.const 1024)))
  )
  (core instance $libc (instantiate $libc))`

// echoWAT is a component importing "echo: func(x: T) -> T" and exporting
// "run: func(x: T) -> T" that calls it, for any type T (no resources).
func echoWAT(t *ty) string {
	flat := t.flat()
	params := flat
	if len(flat) > 16 {
		params = []string{"i32"}
	}
	var gets, coreRes, importRes, retArg, ret, post string
	for i := range params {
		gets += fmt.Sprintf(" (local.get %d)", i)
	}
	switch {
	case len(flat) == 1:
		coreRes = "(result " + flat[0] + ")"
		importRes = coreRes
		post = "(param " + flat[0] + ")"
	case len(flat) > 1:
		coreRes = "(result i32)"
		retArg = " i32"
		ret = " (i32.const 16)" // return area below the heap
		gets += " (i32.const 16)"
		post = "(param i32)"
	}
	var defs strings.Builder
	t.defs(map[string]bool{}, &defs)
	T := t.wat()
	return fmt.Sprintf(`(component
%s
  (import "echo" (func $echo (param "x" %s) (result %s)))
  %s
  (core func $echo_low (canon lower (func $echo) (memory $libc "mem") (realloc (func $libc "realloc"))))
  (core module $main
    (import "libc" "reset" (func $reset))
    (import "host" "echo" (func $echo (param %s%s) %s))
    (func (export "run") (param %s) %s (call $echo%s)%s)
    (func (export "post") %s (call $reset))
  )
  (core instance $main (instantiate $main
    (with "libc" (instance $libc))
    (with "host" (instance (export "echo" (func $echo_low))))))
  (func (export "run") (param "x" %s) (result %s)
    (canon lift (core func $main "run") (memory $libc "mem") (realloc (func $libc "realloc"))
      (post-return (func $main "post"))))
)`, defs.String(), T, T, libcWAT, strings.Join(params, " "), retArg, importRes,
		strings.Join(params, " "), coreRes, gets, ret, post, T, T)
}

func mustEngine(t testing.TB, cfg EngineConfig) *Engine {
	t.Helper()
	e, err := NewEngine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func mustComponent(t testing.TB, e *Engine, wat string) *Component {
	t.Helper()
	c, err := NewComponent(e, []byte(wat))
	if err != nil {
		t.Fatalf("compile: %v\n%s", err, wat)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func mustLinker(t testing.TB, e *Engine) *Linker {
	t.Helper()
	l, err := NewLinker(e)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func mustStore(t testing.TB, e *Engine, cfg StoreConfig) *Store {
	t.Helper()
	s, err := NewStore(e, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func mustFunc(t testing.TB, l *Linker, s *Store, c *Component, names ...string) *Func {
	t.Helper()
	inst, err := l.Instantiate(s, c)
	if err != nil {
		t.Fatal(err)
	}
	f, err := inst.Func(names...)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// valEqual is deep equality that compares floats by bits (NaN == NaN).
func valEqual(a, b Val) bool {
	switch x := a.(type) {
	case F32:
		y, ok := b.(F32)
		return ok && math.Float32bits(float32(x)) == math.Float32bits(float32(y))
	case F64:
		y, ok := b.(F64)
		return ok && math.Float64bits(float64(x)) == math.Float64bits(float64(y))
	case List:
		y, ok := b.(List)
		return ok && valsEqual(x, y)
	case Tuple:
		y, ok := b.(Tuple)
		return ok && valsEqual(x, y)
	case Record:
		y, ok := b.(Record)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if x[i].Name != y[i].Name || !valEqual(x[i].Val, y[i].Val) {
				return false
			}
		}
		return true
	case Variant:
		y, ok := b.(Variant)
		return ok && x.Case == y.Case && valEqual(x.Payload, y.Payload)
	case Option:
		y, ok := b.(Option)
		return ok && valEqual(x.Some, y.Some)
	case Result:
		y, ok := b.(Result)
		return ok && x.Err == y.Err && valEqual(x.Payload, y.Payload)
	case Flags:
		y, ok := b.(Flags)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if x[i] != y[i] {
				return false
			}
		}
		return true
	}
	return a == b
}

func valsEqual(a, b []Val) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !valEqual(a[i], b[i]) {
			return false
		}
	}
	return true
}
