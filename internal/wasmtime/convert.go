package wasmtime

// #include <stdlib.h>
// #include "capi.h"
import "C"

import (
	"errors"
	"fmt"
	"unicode/utf8"
	"unsafe"
)

// Layout of the union members this file reads and writes directly.
type (
	cname   = C.wasm_name_t
	clist   = C.wasmtime_component_vallist_t
	crecord = C.wasmtime_component_valrecord_t
	ctuple  = C.wasmtime_component_valtuple_t
	cflags  = C.wasmtime_component_valflags_t
	centry  = C.wasmtime_component_valrecord_entry_t
	cvar    = C.wasmtime_component_valvariant_t
	cresult = C.wasmtime_component_valresult_t
	cany    = C.wasmtime_component_resource_any_t
)

var (
	errNilVal        = errors.New("nil Val")
	errBorrowToGuest = errors.New("a borrowed host resource cannot be passed to the guest (unsupported by wasmtime's C API); pass an owned one")
)

// setName validates s (wasmtime aborts on invalid UTF-8) and copies it.
func setName(out *cname, s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("string %q is not valid UTF-8", truncate(s))
	}
	newName(out, s)
	return nil
}

func truncate(s string) string {
	if len(s) > 32 {
		return s[:32] + "..."
	}
	return s
}

// toC writes v into dst, which must own nothing (bool false). On error dst
// may own a partial value: it stays valid for wasmtime_component_val_delete.
func (s *Store) toC(ctx *C.wasmtime_context_t, v Val, dst *cval) error {
	p := payload(dst)
	switch x := v.(type) {
	case Bool:
		*(*bool)(p) = bool(x)
		dst.kind = C.WASMTIME_COMPONENT_BOOL
	case S8:
		*(*int8)(p) = int8(x)
		dst.kind = C.WASMTIME_COMPONENT_S8
	case U8:
		*(*uint8)(p) = uint8(x)
		dst.kind = C.WASMTIME_COMPONENT_U8
	case S16:
		*(*int16)(p) = int16(x)
		dst.kind = C.WASMTIME_COMPONENT_S16
	case U16:
		*(*uint16)(p) = uint16(x)
		dst.kind = C.WASMTIME_COMPONENT_U16
	case S32:
		*(*int32)(p) = int32(x)
		dst.kind = C.WASMTIME_COMPONENT_S32
	case U32:
		*(*uint32)(p) = uint32(x)
		dst.kind = C.WASMTIME_COMPONENT_U32
	case S64:
		*(*int64)(p) = int64(x)
		dst.kind = C.WASMTIME_COMPONENT_S64
	case U64:
		*(*uint64)(p) = uint64(x)
		dst.kind = C.WASMTIME_COMPONENT_U64
	case F32:
		*(*float32)(p) = float32(x)
		dst.kind = C.WASMTIME_COMPONENT_F32
	case F64:
		*(*float64)(p) = float64(x)
		dst.kind = C.WASMTIME_COMPONENT_F64
	case Char:
		if !utf8.ValidRune(rune(x)) {
			return fmt.Errorf("char %#x is not a Unicode scalar value", uint32(x))
		}
		*(*uint32)(p) = uint32(x)
		dst.kind = C.WASMTIME_COMPONENT_CHAR
	case String:
		if err := setName((*cname)(p), string(x)); err != nil {
			return err
		}
		dst.kind = C.WASMTIME_COMPONENT_STRING
	case List:
		elems := newList((*clist)(p), len(x))
		dst.kind = C.WASMTIME_COMPONENT_LIST
		for i, e := range x {
			if err := s.toC(ctx, e, &elems[i]); err != nil {
				return fmt.Errorf("list[%d]: %w", i, err)
			}
		}
	case Bytes:
		elems := newList((*clist)(p), len(x))
		dst.kind = C.WASMTIME_COMPONENT_LIST
		for i, c := range x {
			elems[i].kind = C.WASMTIME_COMPONENT_U8
			*(*uint8)(payload(&elems[i])) = c
		}
	case Tuple:
		t := (*ctuple)(p)
		var elems []cval
		if len(x) == 0 {
			C.wasmtime_component_valtuple_new_empty(t)
		} else {
			C.wasmtime_component_valtuple_new_uninit(t, C.size_t(len(x)))
			elems = unsafe.Slice(t.data, len(x))
			clear(elems)
		}
		dst.kind = C.WASMTIME_COMPONENT_TUPLE
		for i, e := range x {
			if err := s.toC(ctx, e, &elems[i]); err != nil {
				return fmt.Errorf("tuple[%d]: %w", i, err)
			}
		}
	case Record:
		r := (*crecord)(p)
		var entries []centry
		if len(x) == 0 {
			C.wasmtime_component_valrecord_new_empty(r)
		} else {
			C.wasmtime_component_valrecord_new_uninit(r, C.size_t(len(x)))
			entries = unsafe.Slice(r.data, len(x))
			clear(entries)
		}
		dst.kind = C.WASMTIME_COMPONENT_RECORD
		for i, f := range x {
			if err := setName(&entries[i].name, f.Name); err != nil {
				return fmt.Errorf("record field %d: %w", i, err)
			}
			if err := s.toC(ctx, f.Val, &entries[i].val); err != nil {
				return fmt.Errorf("record field %s: %w", f.Name, err)
			}
		}
	case Flags:
		fl := (*cflags)(p)
		var names []cname
		if len(x) == 0 {
			C.wasmtime_component_valflags_new_empty(fl)
		} else {
			C.wasmtime_component_valflags_new_uninit(fl, C.size_t(len(x)))
			names = unsafe.Slice(fl.data, len(x))
			clear(names)
		}
		dst.kind = C.WASMTIME_COMPONENT_FLAGS
		for i, n := range x {
			if err := setName(&names[i], n); err != nil {
				return fmt.Errorf("flag %d: %w", i, err)
			}
		}
	case Enum:
		if err := setName((*cname)(p), string(x)); err != nil {
			return err
		}
		dst.kind = C.WASMTIME_COMPONENT_ENUM
	case Variant:
		vv := (*cvar)(p)
		if err := setName(&vv.discriminant, x.Case); err != nil {
			return err
		}
		vv.val = nil
		dst.kind = C.WASMTIME_COMPONENT_VARIANT
		if x.Payload != nil {
			vv.val = C.th_val_box()
			if err := s.toC(ctx, x.Payload, vv.val); err != nil {
				return fmt.Errorf("variant %s: %w", x.Case, err)
			}
		}
	case Option:
		opt := (**cval)(p)
		*opt = nil
		dst.kind = C.WASMTIME_COMPONENT_OPTION
		if x.Some != nil {
			*opt = C.th_val_box()
			if err := s.toC(ctx, x.Some, *opt); err != nil {
				return fmt.Errorf("option: %w", err)
			}
		}
	case Result:
		r := (*cresult)(p)
		r.is_ok = C.bool(!x.Err)
		r.val = nil
		dst.kind = C.WASMTIME_COMPONENT_RESULT
		if x.Payload != nil {
			r.val = C.th_val_box()
			if err := s.toC(ctx, x.Payload, r.val); err != nil {
				return fmt.Errorf("result: %w", err)
			}
		}
	case ResourceHost:
		if !x.Owned {
			// wasmtime 39 aborts the process (resources.rs unwrap) when a
			// host borrow is converted with no guest call in progress.
			return errBorrowToGuest
		}
		h := C.wasmtime_component_resource_host_new(C.bool(x.Owned), C.uint32_t(x.Rep), C.uint32_t(x.Type))
		var a *cany
		cerr := C.wasmtime_component_resource_host_to_any(ctx, h, &a)
		C.wasmtime_component_resource_host_delete(h)
		if cerr != nil {
			return plainError("resource", cerr)
		}
		*(**cany)(p) = a
		dst.kind = C.WASMTIME_COMPONENT_RESOURCE
	case *ResourceAny:
		if x == nil || x.ptr == nil {
			return errors.New("closed or nil ResourceAny")
		}
		if x.store != s {
			return errors.New("ResourceAny belongs to another store")
		}
		*(**cany)(p) = C.wasmtime_component_resource_any_clone(x.ptr)
		dst.kind = C.WASMTIME_COMPONENT_RESOURCE
	case nil:
		return errNilVal
	default:
		return fmt.Errorf("unsupported Val type %T", v)
	}
	return nil
}

func newList(l *clist, n int) []cval {
	if n == 0 {
		C.wasmtime_component_vallist_new_empty(l)
		return nil
	}
	C.wasmtime_component_vallist_new_uninit(l, C.size_t(n))
	elems := unsafe.Slice(l.data, n)
	clear(elems)
	return elems
}

// fromC converts a C value to Go; it does not free v. Resources are
// converted to host resources where possible (which, for a borrow, releases
// it); other resources become *ResourceAny handles. inCallback marks the
// arguments of a host function: borrowed guest resources among them are
// released when the function returns.
func (s *Store) fromC(ctx *C.wasmtime_context_t, v *cval, inCallback bool) (Val, error) {
	p := payload(v)
	switch v.kind {
	case C.WASMTIME_COMPONENT_BOOL:
		return Bool(*(*bool)(p)), nil
	case C.WASMTIME_COMPONENT_S8:
		return S8(*(*int8)(p)), nil
	case C.WASMTIME_COMPONENT_U8:
		return U8(*(*uint8)(p)), nil
	case C.WASMTIME_COMPONENT_S16:
		return S16(*(*int16)(p)), nil
	case C.WASMTIME_COMPONENT_U16:
		return U16(*(*uint16)(p)), nil
	case C.WASMTIME_COMPONENT_S32:
		return S32(*(*int32)(p)), nil
	case C.WASMTIME_COMPONENT_U32:
		return U32(*(*uint32)(p)), nil
	case C.WASMTIME_COMPONENT_S64:
		return S64(*(*int64)(p)), nil
	case C.WASMTIME_COMPONENT_U64:
		return U64(*(*uint64)(p)), nil
	case C.WASMTIME_COMPONENT_F32:
		return F32(*(*float32)(p)), nil
	case C.WASMTIME_COMPONENT_F64:
		return F64(*(*float64)(p)), nil
	case C.WASMTIME_COMPONENT_CHAR:
		return Char(*(*uint32)(p)), nil
	case C.WASMTIME_COMPONENT_STRING:
		return String(goString((*cname)(p))), nil
	case C.WASMTIME_COMPONENT_ENUM:
		return Enum(goString((*cname)(p))), nil
	case C.WASMTIME_COMPONENT_LIST:
		l := (*clist)(p)
		out := make(List, int(l.size))
		for i := range out {
			e, err := s.fromC(ctx, (*cval)(unsafe.Add(unsafe.Pointer(l.data), i*cvalSize)), inCallback)
			if err != nil {
				return nil, err
			}
			out[i] = e
		}
		return out, nil
	case C.WASMTIME_COMPONENT_TUPLE:
		t := (*ctuple)(p)
		out := make(Tuple, int(t.size))
		for i := range out {
			e, err := s.fromC(ctx, (*cval)(unsafe.Add(unsafe.Pointer(t.data), i*cvalSize)), inCallback)
			if err != nil {
				return nil, err
			}
			out[i] = e
		}
		return out, nil
	case C.WASMTIME_COMPONENT_RECORD:
		r := (*crecord)(p)
		out := make(Record, int(r.size))
		if r.size > 0 {
			for i, en := range unsafe.Slice(r.data, int(r.size)) {
				e, err := s.fromC(ctx, &en.val, inCallback)
				if err != nil {
					return nil, err
				}
				out[i] = Field{Name: goString(&en.name), Val: e}
			}
		}
		return out, nil
	case C.WASMTIME_COMPONENT_FLAGS:
		fl := (*cflags)(p)
		out := make(Flags, int(fl.size))
		if fl.size > 0 {
			for i := range unsafe.Slice(fl.data, int(fl.size)) {
				out[i] = goString((*cname)(unsafe.Add(unsafe.Pointer(fl.data), uintptr(i)*unsafe.Sizeof(cname{}))))
			}
		}
		return out, nil
	case C.WASMTIME_COMPONENT_VARIANT:
		vv := (*cvar)(p)
		out := Variant{Case: goString(&vv.discriminant)}
		if vv.val != nil {
			e, err := s.fromC(ctx, vv.val, inCallback)
			if err != nil {
				return nil, err
			}
			out.Payload = e
		}
		return out, nil
	case C.WASMTIME_COMPONENT_OPTION:
		opt := *(**cval)(p)
		if opt == nil {
			return Option{}, nil
		}
		e, err := s.fromC(ctx, opt, inCallback)
		if err != nil {
			return nil, err
		}
		return Option{Some: e}, nil
	case C.WASMTIME_COMPONENT_RESULT:
		r := (*cresult)(p)
		out := Result{Err: !bool(r.is_ok)}
		if r.val != nil {
			e, err := s.fromC(ctx, r.val, inCallback)
			if err != nil {
				return nil, err
			}
			out.Payload = e
		}
		return out, nil
	case C.WASMTIME_COMPONENT_RESOURCE:
		return s.resourceFromC(ctx, *(**cany)(p), inCallback)
	}
	return nil, fmt.Errorf("unknown value kind %d", v.kind)
}

func (s *Store) resourceFromC(ctx *C.wasmtime_context_t, a *cany, inCallback bool) (Val, error) {
	var h *C.wasmtime_component_resource_host_t
	cerr := C.wasmtime_component_resource_any_to_host(ctx, a, &h)
	if cerr == nil {
		out := ResourceHost{
			Type:  uint32(C.wasmtime_component_resource_host_type(h)),
			Rep:   uint32(C.wasmtime_component_resource_host_rep(h)),
			Owned: bool(C.wasmtime_component_resource_host_owned(h)),
		}
		C.wasmtime_component_resource_host_delete(h)
		return out, nil
	}
	C.wasmtime_error_delete(cerr)
	r := &ResourceAny{store: s, ptr: C.wasmtime_component_resource_any_clone(a), owned: bool(C.wasmtime_component_resource_any_owned(a))}
	s.res.anys[r] = struct{}{}
	if inCallback && !r.owned {
		s.res.borrows = append(s.res.borrows, r)
	}
	return r, nil
}

// roundTrip converts v to a C value and back, with no guest involved; the
// fuzz test uses it.
func (s *Store) roundTrip(v Val) (Val, error) {
	if err := s.check("round trip"); err != nil {
		return nil, err
	}
	p := (*cval)(C.calloc(1, cvalSize))
	err := s.toC(s.ctx, v, p)
	var out Val
	if err == nil {
		out, err = s.fromC(s.ctx, p, false)
	}
	deleteVals(unsafe.Slice(p, 1))
	C.free(unsafe.Pointer(p))
	return out, err
}
