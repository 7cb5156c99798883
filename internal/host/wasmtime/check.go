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
	mismatch := func() error { return fmt.Errorf("type mismatch: %s for %s", v.Kind(), t) }
	switch t.Kind {
	case TypeBool:
		if _, ok := v.(Bool); !ok {
			return mismatch()
		}
	case TypeS8:
		if _, ok := v.(S8); !ok {
			return mismatch()
		}
	case TypeU8:
		if _, ok := v.(U8); !ok {
			return mismatch()
		}
	case TypeS16:
		if _, ok := v.(S16); !ok {
			return mismatch()
		}
	case TypeU16:
		if _, ok := v.(U16); !ok {
			return mismatch()
		}
	case TypeS32:
		if _, ok := v.(S32); !ok {
			return mismatch()
		}
	case TypeU32:
		if _, ok := v.(U32); !ok {
			return mismatch()
		}
	case TypeS64:
		if _, ok := v.(S64); !ok {
			return mismatch()
		}
	case TypeU64:
		if _, ok := v.(U64); !ok {
			return mismatch()
		}
	case TypeF32:
		if _, ok := v.(F32); !ok {
			return mismatch()
		}
	case TypeF64:
		if _, ok := v.(F64); !ok {
			return mismatch()
		}
	case TypeChar:
		if _, ok := v.(Char); !ok {
			return mismatch()
		}
	case TypeString:
		if _, ok := v.(String); !ok {
			return mismatch()
		}
	case TypeList:
		x, ok := v.(List)
		if !ok {
			return mismatch()
		}
		for i, e := range x {
			if err := checkVal(t.Elem, e); err != nil {
				return fmt.Errorf("list[%d]: %w", i, err)
			}
		}
	case TypeTuple:
		x, ok := v.(Tuple)
		if !ok || len(x) != len(t.Types) {
			return mismatch()
		}
		for i, e := range x {
			if err := checkVal(t.Types[i], e); err != nil {
				return fmt.Errorf("tuple[%d]: %w", i, err)
			}
		}
	case TypeRecord:
		x, ok := v.(Record)
		if !ok || len(x) != len(t.Fields) {
			return mismatch()
		}
		for i, f := range x {
			if f.Name != t.Fields[i].Name {
				return fmt.Errorf("record field %d is %q, want %q", i, f.Name, t.Fields[i].Name)
			}
			if err := checkVal(t.Fields[i].Type, f.Val); err != nil {
				return fmt.Errorf("record field %s: %w", f.Name, err)
			}
		}
	case TypeVariant:
		x, ok := v.(Variant)
		if !ok {
			return mismatch()
		}
		i := slices.IndexFunc(t.Cases, func(c CaseType) bool { return c.Name == x.Case })
		if i < 0 {
			return fmt.Errorf("variant has no case %q", x.Case)
		}
		if err := checkPayload(t.Cases[i].Payload, x.Payload); err != nil {
			return fmt.Errorf("variant case %s: %w", x.Case, err)
		}
	case TypeEnum:
		x, ok := v.(Enum)
		if !ok {
			return mismatch()
		}
		if !slices.Contains(t.Names, string(x)) {
			return fmt.Errorf("enum has no case %q", string(x))
		}
	case TypeOption:
		x, ok := v.(Option)
		if !ok {
			return mismatch()
		}
		if x.Some != nil {
			if err := checkVal(t.Elem, x.Some); err != nil {
				return fmt.Errorf("option: %w", err)
			}
		}
	case TypeResult:
		x, ok := v.(Result)
		if !ok {
			return mismatch()
		}
		want := t.Ok
		if x.Err {
			want = t.Err
		}
		if err := checkPayload(want, x.Payload); err != nil {
			return fmt.Errorf("result: %w", err)
		}
	case TypeFlags:
		x, ok := v.(Flags)
		if !ok {
			return mismatch()
		}
		for _, n := range x {
			if !slices.Contains(t.Names, n) {
				return fmt.Errorf("flags have no flag %q", n)
			}
		}
	case TypeOwn, TypeBorrow:
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
			return mismatch()
		}
	default:
		return fmt.Errorf("unsupported type %s", t)
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
