package wasmtime

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

type valCase struct {
	name string
	ty   *ty
	vals []Val
}

func valueCases() []valCase {
	bigString := strings.Repeat("añ€😀", 1<<20/10) // 1 MiB, mixed 1- to 4-byte runes
	bigList := make(List, 1<<18)                  // 1 MiB of u32
	for i := range bigList {
		bigList[i] = U32(i * 2654435761)
	}
	bigBytes := make(List, 1<<20)
	for i := range bigBytes {
		bigBytes[i] = U8(i)
	}
	point := recordOf("point", tyField{"x", prim("s32")}, tyField{"y", prim("s32")})
	entry := recordOf("entry",
		tyField{"name", prim("string")},
		tyField{"value", optionOf(resultOf(prim("u32"), prim("string")))})
	shape := variantOf("shape",
		tyField{"circle", prim("f64")},
		tyField{"rect", point},
		tyField{"empty", nil})
	color := enumOf("color", "red", "green", "blue")
	perms := flagsOf("perms", "read", "write", "exec")
	wide := recordOf("wide",
		tyField{"a", prim("u64")}, tyField{"b", prim("u64")}, tyField{"c", prim("u64")},
		tyField{"d", prim("u64")}, tyField{"e", prim("u64")}, tyField{"f", prim("u64")},
		tyField{"g", prim("u64")}, tyField{"h", prim("u64")}, tyField{"i", prim("u64")},
		tyField{"j", prim("u64")}, tyField{"k", prim("u64")}, tyField{"l", prim("u64")},
		tyField{"m", prim("u64")}, tyField{"n", prim("u64")}, tyField{"o", prim("u64")},
		tyField{"p", prim("u64")}, tyField{"q", prim("string")})
	wideVal := Record{}
	for i, n := range "abcdefghijklmnop" {
		wideVal = append(wideVal, Field{string(n), U64(uint64(i) << 40)})
	}
	wideVal = append(wideVal, Field{"q", String("seventeen")})

	return []valCase{
		{"bool", prim("bool"), []Val{Bool(true), Bool(false)}},
		{"s8", prim("s8"), []Val{S8(math.MinInt8), S8(-1), S8(math.MaxInt8)}},
		{"u8", prim("u8"), []Val{U8(0), U8(math.MaxUint8)}},
		{"s16", prim("s16"), []Val{S16(math.MinInt16), S16(math.MaxInt16)}},
		{"u16", prim("u16"), []Val{U16(0), U16(math.MaxUint16)}},
		{"s32", prim("s32"), []Val{S32(math.MinInt32), S32(math.MaxInt32)}},
		{"u32", prim("u32"), []Val{U32(0), U32(math.MaxUint32)}},
		{"s64", prim("s64"), []Val{S64(math.MinInt64), S64(math.MaxInt64)}},
		{"u64", prim("u64"), []Val{U64(0), U64(math.MaxUint64)}},
		{"f32", prim("f32"), []Val{F32(3.25), F32(math.Copysign(0, -1)), F32(math.Inf(-1)), F32(math.MaxFloat32)}},
		{"f64", prim("f64"), []Val{F64(math.Pi), F64(math.SmallestNonzeroFloat64), F64(math.Inf(1))}},
		{"char", prim("char"), []Val{Char('a'), Char('€'), Char('😀'), Char(0x10FFFF)}},
		{"string", prim("string"), []Val{String(""), String("hello"), String("héllo wörld ✓ 😀 日本語"), String(bigString)}},
		{"list-u8", listOf(prim("u8")), []Val{List{}, List{U8(1), U8(2)}, bigBytes}},
		{"list-u32", listOf(prim("u32")), []Val{List{}, bigList}},
		{"list-string", listOf(prim("string")), []Val{List{String("a"), String(""), String("ü")}}},
		{"list-list", listOf(listOf(prim("s64"))), []Val{List{List{}, List{S64(-1)}, List{S64(1), S64(2)}}}},
		{"record", point, []Val{Record{{"x", S32(-3)}, {"y", S32(4)}}}},
		{"record-wide", wide, []Val{wideVal}},
		{"tuple", tupleOf(prim("u8"), prim("string"), prim("f64")), []Val{Tuple{U8(1), String("two"), F64(3)}}},
		{"variant", shape, []Val{
			Variant{Case: "circle", Payload: F64(1.5)},
			Variant{Case: "rect", Payload: Record{{"x", S32(1)}, {"y", S32(2)}}},
			Variant{Case: "empty"},
		}},
		{"enum", color, []Val{Enum("red"), Enum("blue")}},
		{"option", optionOf(prim("u32")), []Val{None, Some(U32(7))}},
		{"option-option", optionOf(optionOf(prim("string"))), []Val{None, Some(None), Some(Some(String("deep")))}},
		{"result", resultOf(prim("string"), prim("string")), []Val{Ok(String("fine")), Err(String("bad"))}},
		{"result-empty", resultOf(nil, nil), []Val{Ok(nil), Err(nil)}},
		{"result-err-only", resultOf(nil, prim("u32")), []Val{Ok(nil), Err(U32(9))}},
		{"flags", perms, []Val{Flags{}, Flags{"read"}, Flags{"read", "write", "exec"}}},
		{"nested", listOf(entry), []Val{
			List{},
			List{
				Record{{"name", String("a")}, {"value", None}},
				Record{{"name", String("b")}, {"value", Some(Ok(U32(1)))}},
				Record{{"name", String("ç")}, {"value", Some(Err(String("nope")))}},
			},
		}},
	}
}

// TestValueRoundTrip sends each value host → guest → host (the echo
// import) → guest → host and checks both the host function's argument and
// the call's result.
func TestValueRoundTrip(t *testing.T) {
	e := mustEngine(t, EngineConfig{})
	for _, tc := range valueCases() {
		t.Run(tc.name, func(t *testing.T) {
			c := mustComponent(t, e, echoWAT(tc.ty))
			l := mustLinker(t, e)
			var got Val
			if err := l.Root().AddFunc("echo", func(_ *Caller, args, results []Val) error {
				got = args[0]
				results[0] = args[0]
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			s := mustStore(t, e, StoreConfig{})
			f := mustFunc(t, l, s, c, "run")
			if want := fmt.Sprintf("func(x: %s) -> %s", f.Type().Params[0].Type, f.Type().Params[0].Type); f.Type().String() != want {
				t.Errorf("type %s, want %s", f.Type(), want)
			}
			for i, v := range tc.vals {
				out, err := f.Call(v)
				if err != nil {
					t.Fatalf("value %d: %v", i, err)
				}
				if !valEqual(got, v) {
					t.Errorf("value %d: host got %s, want %s", i, short(got), short(v))
				}
				if !valEqual(out, v) {
					t.Errorf("value %d: result %s, want %s", i, short(out), short(v))
				}
			}
		})
	}
}

func short(v Val) string {
	s := fmt.Sprintf("%#v", v)
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// TestValueErrors checks that values wasmtime would abort on, or that do
// not match the signature, are errors.
func TestValueErrors(t *testing.T) {
	e := mustEngine(t, EngineConfig{})
	for _, tc := range []struct {
		name string
		ty   *ty
		arg  Val
		want string
	}{
		{"bad-utf8", prim("string"), String("\xff\xfe"), "not valid UTF-8"},
		{"surrogate-char", prim("char"), Char(0xD800), "not a Unicode scalar"},
		{"nil", prim("u32"), nil, "nil Val"},
		{"wrong-type", prim("u32"), String("x"), "type mismatch"},
		{"nested-nil", listOf(prim("u32")), List{U32(1), nil}, "nil Val"},
		{"bad-enum", enumOf("color", "red"), Enum("mauve"), "mauve"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mustComponent(t, e, echoWAT(tc.ty))
			l := mustLinker(t, e)
			called := false
			l.Root().AddFunc("echo", func(_ *Caller, args, results []Val) error {
				called = true
				results[0] = args[0]
				return nil
			})
			s := mustStore(t, e, StoreConfig{})
			f := mustFunc(t, l, s, c, "run")
			_, err := f.Call(tc.arg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
			if called {
				t.Error("host function ran")
			}
			// The store is still usable.
			if tc.ty.kind == "u32" {
				if _, err := f.Call(U32(1)); err != nil {
					t.Fatalf("call after error: %v", err)
				}
			}
		})
	}
}

// TestHostResultErrors checks that a host function returning a value of the
// wrong shape makes the call fail with wasmtime's reason (not a crash).
func TestHostResultErrors(t *testing.T) {
	e := mustEngine(t, EngineConfig{})
	for _, tc := range []struct {
		name     string
		ty       *ty
		arg, res Val
		want     string
	}{
		{"scalar", prim("u32"), U32(1), String("x"), "expected u32"},
		{"missing-payload", resultOf(prim("string"), prim("string")), Ok(String("a")), Result{}, "payload"},
		{"field-name", recordOf("r", tyField{"a", prim("u32")}), Record{{"a", U32(1)}}, Record{{"b", U32(1)}}, "field"},
		{"enum-case", enumOf("e", "a"), Enum("a"), Enum("zz"), "zz"},
		{"flag", flagsOf("f", "a"), Flags{}, Flags{"q"}, "q"},
		{"variant-payload", variantOf("v", tyField{"a", nil}), Variant{Case: "a"}, Variant{Case: "a", Payload: U32(1)}, "payload"},
		{"list-element", listOf(prim("u8")), List{}, List{U32(1)}, "expected u8"},
		{"borrow-result", prim("u32"), U32(1), ResourceHost{Type: 1, Rep: 1}, "borrowed host resource"},
		{"bad-utf8", prim("string"), String("ok"), String("\xc3"), "UTF-8"},
		{"unset", prim("u32"), U32(1), nil, "not set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mustComponent(t, e, echoWAT(tc.ty))
			l := mustLinker(t, e)
			l.Root().AddFunc("echo", func(_ *Caller, args, results []Val) error {
				results[0] = tc.res
				return nil
			})
			s := mustStore(t, e, StoreConfig{})
			f := mustFunc(t, l, s, c, "run")
			_, err := f.Call(tc.arg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}
