package wasmtime

// #include "capi.h"
import "C"

import (
	"strings"
	"unsafe"
)

// ItemKind is the kind of a component import or export.
type ItemKind uint8

// Item kinds (WASMTIME_COMPONENT_ITEM_*).
const (
	ItemComponent ItemKind = iota
	ItemInstance
	ItemModule
	ItemFunc
	ItemResource
	ItemCoreFunc
	ItemType
)

func (k ItemKind) String() string {
	switch k {
	case ItemComponent:
		return "component"
	case ItemInstance:
		return "instance"
	case ItemModule:
		return "module"
	case ItemFunc:
		return "func"
	case ItemResource:
		return "resource"
	case ItemCoreFunc:
		return "core func"
	case ItemType:
		return "type"
	}
	return "unknown"
}

// Item is one import or export of a component, or an export of an instance.
type Item struct {
	Name    string
	Kind    ItemKind
	Func    *FuncType // Kind == ItemFunc
	Exports []Item    // Kind == ItemInstance: the instance's exports
	Type    *Type     // Kind == ItemType
}

// FuncType is a component function's signature.
type FuncType struct {
	Params []Param
	Result *Type // nil: no result
}

// Param is one named parameter.
type Param struct {
	Name string
	Type *Type
}

// String renders the signature in WIT, e.g. "func(input: string) -> result<string, string>".
func (f *FuncType) String() string {
	var b strings.Builder
	b.WriteString("func(")
	for i, p := range f.Params {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(p.Name)
		b.WriteString(": ")
		b.WriteString(p.Type.String())
	}
	b.WriteString(")")
	if f.Result != nil {
		b.WriteString(" -> ")
		b.WriteString(f.Result.String())
	}
	return b.String()
}

// TypeKind is the kind of a WIT type (WASMTIME_COMPONENT_VALTYPE_*).
type TypeKind uint8

// Type kinds.
const (
	TypeBool TypeKind = iota
	TypeS8
	TypeS16
	TypeS32
	TypeS64
	TypeU8
	TypeU16
	TypeU32
	TypeU64
	TypeF32
	TypeF64
	TypeChar
	TypeString
	TypeList
	TypeRecord
	TypeTuple
	TypeVariant
	TypeEnum
	TypeOption
	TypeResult
	TypeFlags
	TypeOwn
	TypeBorrow
	TypeFuture
	TypeStream
	TypeErrorContext
)

var typeNames = [...]string{"bool", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64", "f32", "f64",
	"char", "string", "list", "record", "tuple", "variant", "enum", "option", "result", "flags",
	"own", "borrow", "future", "stream", "error-context"}

func (k TypeKind) String() string {
	if int(k) < len(typeNames) {
		return typeNames[k]
	}
	return "unknown"
}

// Type describes a WIT value type. Which fields are set depends on Kind.
type Type struct {
	Kind   TypeKind
	Elem   *Type       // list, option; future and stream (nil if none)
	Fields []FieldType // record
	Types  []*Type     // tuple
	Cases  []CaseType  // variant
	Names  []string    // enum, flags
	Ok     *Type       // result (nil if none)
	Err    *Type       // result (nil if none)
}

// FieldType is one field of a record type.
type FieldType struct {
	Name string
	Type *Type
}

// CaseType is one case of a variant type; Payload is nil when it has none.
type CaseType struct {
	Name    string
	Payload *Type
}

// String renders the type in WIT syntax. Records, variants, enums and flags
// are anonymous in the component type, so they render structurally, e.g.
// "record{a: u32}".
func (t *Type) String() string {
	if t == nil {
		return "_"
	}
	switch t.Kind {
	case TypeList:
		return "list<" + t.Elem.String() + ">"
	case TypeOption:
		return "option<" + t.Elem.String() + ">"
	case TypeResult:
		if t.Ok == nil && t.Err == nil {
			return "result"
		}
		return "result<" + t.Ok.String() + ", " + t.Err.String() + ">"
	case TypeTuple:
		parts := make([]string, len(t.Types))
		for i, e := range t.Types {
			parts[i] = e.String()
		}
		return "tuple<" + strings.Join(parts, ", ") + ">"
	case TypeRecord:
		parts := make([]string, len(t.Fields))
		for i, f := range t.Fields {
			parts[i] = f.Name + ": " + f.Type.String()
		}
		return "record{" + strings.Join(parts, ", ") + "}"
	case TypeVariant:
		parts := make([]string, len(t.Cases))
		for i, c := range t.Cases {
			parts[i] = c.Name
			if c.Payload != nil {
				parts[i] += "(" + c.Payload.String() + ")"
			}
		}
		return "variant{" + strings.Join(parts, ", ") + "}"
	case TypeEnum:
		return "enum{" + strings.Join(t.Names, ", ") + "}"
	case TypeFlags:
		return "flags{" + strings.Join(t.Names, ", ") + "}"
	case TypeFuture, TypeStream:
		if t.Elem == nil {
			return t.Kind.String()
		}
		return t.Kind.String() + "<" + t.Elem.String() + ">"
	}
	return t.Kind.String()
}

func convertItem(eng *C.wasm_engine_t, name string, item *C.wasmtime_component_item_t) Item {
	it := Item{Name: name, Kind: ItemKind(item.kind)}
	p := unsafe.Pointer(&item.of)
	switch item.kind {
	case C.WASMTIME_COMPONENT_ITEM_COMPONENT_FUNC:
		it.Func = convertFuncType(*(**C.wasmtime_component_func_type_t)(p))
	case C.WASMTIME_COMPONENT_ITEM_COMPONENT_INSTANCE:
		ity := *(**C.wasmtime_component_instance_type_t)(p)
		n := C.wasmtime_component_instance_type_export_count(ity, eng)
		for i := C.size_t(0); i < n; i++ {
			var cname *C.char
			var nameLen C.size_t
			var sb alignedItem
			sub := &sb.v
			if !C.wasmtime_component_instance_type_export_nth(ity, eng, i, &cname, &nameLen, sub) {
				break
			}
			it.Exports = append(it.Exports, convertItem(eng, C.GoStringN(cname, C.int(nameLen)), sub))
			C.wasmtime_component_item_delete(sub)
		}
	case C.WASMTIME_COMPONENT_ITEM_TYPE:
		it.Type = convertType((*C.wasmtime_component_valtype_t)(p))
	}
	return it
}

func convertFuncType(ft *C.wasmtime_component_func_type_t) *FuncType {
	out := &FuncType{}
	n := C.wasmtime_component_func_type_param_count(ft)
	for i := C.size_t(0); i < n; i++ {
		var name *C.char
		var nameLen C.size_t
		var vb alignedValtype
		vt := &vb.v
		if !C.wasmtime_component_func_type_param_nth(ft, i, &name, &nameLen, vt) {
			break
		}
		out.Params = append(out.Params, Param{Name: C.GoStringN(name, C.int(nameLen)), Type: takeType(vt)})
	}
	var vb alignedValtype
	if C.wasmtime_component_func_type_result(ft, &vb.v) {
		out.Result = takeType(&vb.v)
	}
	return out
}

// takeType converts and deletes a valtype.
func takeType(vt *C.wasmtime_component_valtype_t) *Type {
	t := convertType(vt)
	C.wasmtime_component_valtype_delete(vt)
	return t
}

func convertType(vt *C.wasmtime_component_valtype_t) *Type {
	t := &Type{Kind: TypeKind(vt.kind)}
	p := unsafe.Pointer(&vt.of)
	switch vt.kind {
	case C.WASMTIME_COMPONENT_VALTYPE_LIST:
		var eb alignedValtype
		e := &eb.v
		C.wasmtime_component_list_type_element(*(**C.wasmtime_component_list_type_t)(p), e)
		t.Elem = takeType(e)
	case C.WASMTIME_COMPONENT_VALTYPE_OPTION:
		var eb alignedValtype
		e := &eb.v
		C.wasmtime_component_option_type_ty(*(**C.wasmtime_component_option_type_t)(p), e)
		t.Elem = takeType(e)
	case C.WASMTIME_COMPONENT_VALTYPE_RESULT:
		rt := *(**C.wasmtime_component_result_type_t)(p)
		var eb alignedValtype
		e := &eb.v
		if C.wasmtime_component_result_type_ok(rt, e) {
			t.Ok = takeType(e)
		}
		if C.wasmtime_component_result_type_err(rt, e) {
			t.Err = takeType(e)
		}
	case C.WASMTIME_COMPONENT_VALTYPE_RECORD:
		rt := *(**C.wasmtime_component_record_type_t)(p)
		n := C.wasmtime_component_record_type_field_count(rt)
		for i := C.size_t(0); i < n; i++ {
			var name *C.char
			var nameLen C.size_t
			var eb alignedValtype
			e := &eb.v
			if !C.wasmtime_component_record_type_field_nth(rt, i, &name, &nameLen, e) {
				break
			}
			t.Fields = append(t.Fields, FieldType{Name: C.GoStringN(name, C.int(nameLen)), Type: takeType(e)})
		}
	case C.WASMTIME_COMPONENT_VALTYPE_TUPLE:
		tt := *(**C.wasmtime_component_tuple_type_t)(p)
		n := C.wasmtime_component_tuple_type_types_count(tt)
		for i := C.size_t(0); i < n; i++ {
			var eb alignedValtype
			e := &eb.v
			if !C.wasmtime_component_tuple_type_types_nth(tt, i, e) {
				break
			}
			t.Types = append(t.Types, takeType(e))
		}
	case C.WASMTIME_COMPONENT_VALTYPE_VARIANT:
		vt := *(**C.wasmtime_component_variant_type_t)(p)
		n := C.wasmtime_component_variant_type_case_count(vt)
		for i := C.size_t(0); i < n; i++ {
			var name *C.char
			var nameLen C.size_t
			var has C.bool
			var eb alignedValtype
			e := &eb.v
			if !C.wasmtime_component_variant_type_case_nth(vt, i, &name, &nameLen, &has, e) {
				break
			}
			c := CaseType{Name: C.GoStringN(name, C.int(nameLen))}
			if has {
				c.Payload = takeType(e)
			}
			t.Cases = append(t.Cases, c)
		}
	case C.WASMTIME_COMPONENT_VALTYPE_ENUM:
		et := *(**C.wasmtime_component_enum_type_t)(p)
		n := C.wasmtime_component_enum_type_names_count(et)
		for i := C.size_t(0); i < n; i++ {
			var name *C.char
			var nameLen C.size_t
			if !C.wasmtime_component_enum_type_names_nth(et, i, &name, &nameLen) {
				break
			}
			t.Names = append(t.Names, C.GoStringN(name, C.int(nameLen)))
		}
	case C.WASMTIME_COMPONENT_VALTYPE_FLAGS:
		ft := *(**C.wasmtime_component_flags_type_t)(p)
		n := C.wasmtime_component_flags_type_names_count(ft)
		for i := C.size_t(0); i < n; i++ {
			var name *C.char
			var nameLen C.size_t
			if !C.wasmtime_component_flags_type_names_nth(ft, i, &name, &nameLen) {
				break
			}
			t.Names = append(t.Names, C.GoStringN(name, C.int(nameLen)))
		}
	}
	return t
}

// cgo gives structs holding a C union alignment 1; these wrappers give the
// Go-allocated ones that C writes into their C alignment.
type alignedValtype struct {
	_ [0]uint64
	v C.wasmtime_component_valtype_t
}

type alignedItem struct {
	_ [0]uint64
	v C.wasmtime_component_item_t
}
