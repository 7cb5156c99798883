package wasmtime

import (
	"fmt"
	"slices"
)

// checkVal reports whether v fits type t. Func.Call checks its arguments
// in Go because wasmtime, on a type mismatch detected while lowering
// arguments, leaves the instance unable to be entered again.
func checkVal(t *Type, v Val) error {
	if v == nil {
		return errNilVal
	}
	if int(t.Kind) < len(primitives) {
		if !primitives[t.Kind](v) {
			return mismatch(t, v)
		}
		return nil
	}
	switch t.Kind {
	case TypeList:
		return checkList(t, v)
	case TypeTuple:
		return checkTuple(t, v)
	case TypeRecord:
		return checkRecord(t, v)
	case TypeVariant:
		return checkVariant(t, v)
	case TypeEnum:
		return checkEnum(t, v)
	case TypeOption:
		return checkOption(t, v)
	case TypeResult:
		return checkResult(t, v)
	case TypeFlags:
		return checkFlags(t, v)
	case TypeOwn, TypeBorrow:
		return checkResource(t, v)
	}
	return fmt.Errorf("unsupported type %s", t)
}

func mismatch(t *Type, v Val) error { return fmt.Errorf("type mismatch: %s for %s", v.Kind(), t) }

// is reports whether v is a T.
func is[T Val](v Val) bool { _, ok := v.(T); return ok }

// primitives is, by kind, the check of each primitive type's one Go type
// (the primitive kinds come first, TypeBool to TypeString).
var primitives = [...]func(Val) bool{
	TypeBool: is[Bool], TypeChar: is[Char], TypeString: is[String],
	TypeS8: is[S8], TypeU8: is[U8], TypeS16: is[S16], TypeU16: is[U16],
	TypeS32: is[S32], TypeU32: is[U32], TypeS64: is[S64], TypeU64: is[U64],
	TypeF32: is[F32], TypeF64: is[F64],
}

func checkList(t *Type, v Val) error {
	if _, ok := v.(Bytes); ok {
		if t.Elem == nil || t.Elem.Kind != TypeU8 {
			return mismatch(t, v)
		}
		return nil
	}
	x, ok := v.(List)
	if !ok {
		return mismatch(t, v)
	}
	for i, e := range x {
		if err := checkVal(t.Elem, e); err != nil {
			return fmt.Errorf("list[%d]: %w", i, err)
		}
	}
	return nil
}

func checkTuple(t *Type, v Val) error {
	x, ok := v.(Tuple)
	if !ok || len(x) != len(t.Types) {
		return mismatch(t, v)
	}
	for i, e := range x {
		if err := checkVal(t.Types[i], e); err != nil {
			return fmt.Errorf("tuple[%d]: %w", i, err)
		}
	}
	return nil
}

func checkRecord(t *Type, v Val) error {
	x, ok := v.(Record)
	if !ok || len(x) != len(t.Fields) {
		return mismatch(t, v)
	}
	for i, f := range x {
		if f.Name != t.Fields[i].Name {
			return fmt.Errorf("record field %d is %q, want %q", i, f.Name, t.Fields[i].Name)
		}
		if err := checkVal(t.Fields[i].Type, f.Val); err != nil {
			return fmt.Errorf("record field %s: %w", f.Name, err)
		}
	}
	return nil
}

func checkVariant(t *Type, v Val) error {
	x, ok := v.(Variant)
	if !ok {
		return mismatch(t, v)
	}
	i := slices.IndexFunc(t.Cases, func(c CaseType) bool { return c.Name == x.Case })
	if i < 0 {
		return fmt.Errorf("variant has no case %q", x.Case)
	}
	if err := checkPayload(t.Cases[i].Payload, x.Payload); err != nil {
		return fmt.Errorf("variant case %s: %w", x.Case, err)
	}
	return nil
}

func checkEnum(t *Type, v Val) error {
	x, ok := v.(Enum)
	if !ok {
		return mismatch(t, v)
	}
	if !slices.Contains(t.Names, string(x)) {
		return fmt.Errorf("enum has no case %q", string(x))
	}
	return nil
}

func checkOption(t *Type, v Val) error {
	x, ok := v.(Option)
	if !ok {
		return mismatch(t, v)
	}
	if x.Some != nil {
		if err := checkVal(t.Elem, x.Some); err != nil {
			return fmt.Errorf("option: %w", err)
		}
	}
	return nil
}

func checkResult(t *Type, v Val) error {
	x, ok := v.(Result)
	if !ok {
		return mismatch(t, v)
	}
	want := t.Ok
	if x.Err {
		want = t.Err
	}
	if err := checkPayload(want, x.Payload); err != nil {
		return fmt.Errorf("result: %w", err)
	}
	return nil
}

func checkFlags(t *Type, v Val) error {
	x, ok := v.(Flags)
	if !ok {
		return mismatch(t, v)
	}
	for _, n := range x {
		if !slices.Contains(t.Names, n) {
			return fmt.Errorf("flags have no flag %q", n)
		}
	}
	return nil
}

// checkResource checks an own<T> or borrow<T> argument: a guest resource
// (*ResourceAny), or a host one passed owned.
func checkResource(t *Type, v Val) error {
	switch x := v.(type) {
	case ResourceHost:
		if !x.Owned {
			return errBorrowToGuest
		}
		if x.Owned != (t.Kind == TypeOwn) {
			return fmt.Errorf("resource ownership mismatch: owned=%v for %s", x.Owned, t)
		}
	case *ResourceAny:
	default:
		return mismatch(t, v)
	}
	return nil
}

func checkPayload(t *Type, v Val) error {
	if t == nil {
		if v != nil {
			return fmt.Errorf("unexpected payload %s", v.Kind())
		}
		return nil
	}
	return checkVal(t, v)
}

// spendOwned frees the *ResourceAny handles that v passed at own<T>
// positions of t: the guest owns those resources now.
func spendOwned(t *Type, v Val) {
	if t == nil || v == nil {
		return
	}
	switch t.Kind {
	case TypeOwn:
		if r, ok := v.(*ResourceAny); ok {
			r.free()
		}
	case TypeList:
		if x, ok := v.(List); ok && hasOwn(t.Elem) {
			for _, e := range x {
				spendOwned(t.Elem, e)
			}
		}
	case TypeTuple:
		if x, ok := v.(Tuple); ok {
			for i, e := range x {
				spendOwned(t.Types[i], e)
			}
		}
	case TypeRecord:
		if x, ok := v.(Record); ok {
			for i, f := range x {
				spendOwned(t.Fields[i].Type, f.Val)
			}
		}
	case TypeVariant:
		if x, ok := v.(Variant); ok {
			for _, c := range t.Cases {
				if c.Name == x.Case {
					spendOwned(c.Payload, x.Payload)
				}
			}
		}
	case TypeOption:
		if x, ok := v.(Option); ok {
			spendOwned(t.Elem, x.Some)
		}
	case TypeResult:
		if x, ok := v.(Result); ok {
			if x.Err {
				spendOwned(t.Err, x.Payload)
			} else {
				spendOwned(t.Ok, x.Payload)
			}
		}
	}
}

func hasOwn(t *Type) bool {
	if t == nil {
		return false
	}
	switch t.Kind {
	case TypeOwn:
		return true
	case TypeList, TypeOption:
		return hasOwn(t.Elem)
	case TypeResult:
		return hasOwn(t.Ok) || hasOwn(t.Err)
	case TypeTuple:
		for _, e := range t.Types {
			if hasOwn(e) {
				return true
			}
		}
	case TypeRecord:
		for _, f := range t.Fields {
			if hasOwn(f.Type) {
				return true
			}
		}
	case TypeVariant:
		for _, c := range t.Cases {
			if hasOwn(c.Payload) {
				return true
			}
		}
	}
	return false
}
