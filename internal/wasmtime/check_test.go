package wasmtime

import (
	"strings"
	"testing"
)

// TestCheckPrimitives: each primitive type takes its own Go type and no
// other; the table has an entry for every primitive kind.
func TestCheckPrimitives(t *testing.T) {
	vals := map[TypeKind]Val{
		TypeBool: Bool(true), TypeS8: S8(-1), TypeS16: S16(-1), TypeS32: S32(-1), TypeS64: S64(-1),
		TypeU8: U8(1), TypeU16: U16(1), TypeU32: U32(1), TypeU64: U64(1),
		TypeF32: F32(1), TypeF64: F64(1), TypeChar: Char('x'), TypeString: String("x"),
	}
	if len(vals) != len(primitives) {
		t.Fatalf("%d primitive kinds here, %d in the table", len(vals), len(primitives))
	}
	for k := range vals {
		typ := &Type{Kind: k}
		for vk, v := range vals {
			err := checkVal(typ, v)
			switch {
			case vk == k && err != nil:
				t.Errorf("%s for %s: %v", v.Kind(), typ, err)
			case vk != k && (err == nil || !strings.Contains(err.Error(), "type mismatch")):
				t.Errorf("%s for %s: %v, want a type mismatch", v.Kind(), typ, err)
			}
		}
		if err := checkVal(typ, List{}); err == nil {
			t.Errorf("a list for %s passes", typ)
		}
	}
}
