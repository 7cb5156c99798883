package wasmtime

/*
#include "capi.h"

// Alignments as the C compiler sees capi.h (cgo gives unions no alignment:
// on the Go side these structs have alignment 1, which is why the binding
// keeps every C value in C memory).
static long long th_align_byte_vec(void) { return _Alignof(wasm_byte_vec_t); }
static long long th_align_val(void) { return _Alignof(wasmtime_component_val_t); }
static long long th_align_entry(void) { return _Alignof(wasmtime_component_valrecord_entry_t); }
static long long th_align_instance(void) { return _Alignof(wasmtime_component_instance_t); }
static long long th_align_func(void) { return _Alignof(wasmtime_component_func_t); }
static long long th_align_item(void) { return _Alignof(wasmtime_component_item_t); }
static long long th_align_valtype(void) { return _Alignof(wasmtime_component_valtype_t); }
*/
import "C"

import "unsafe"

// layoutEntry is one fact about the C API this package relies on: Expr is a
// C expression evaluated against the real headers by TestHeaderLayout, Value
// is what this package's declarations (capi.h, seen through cgo) say.
type layoutEntry struct {
	Expr  string
	Value int64
}

// declaredLayout lists every size, alignment, field offset and constant the
// binding depends on.
func declaredLayout() []layoutEntry {
	var (
		name    C.wasm_name_t
		frames  C.wasm_frame_vec_t
		val     C.wasmtime_component_val_t
		list    C.wasmtime_component_vallist_t
		record  C.wasmtime_component_valrecord_t
		tuple   C.wasmtime_component_valtuple_t
		flags   C.wasmtime_component_valflags_t
		entry   C.wasmtime_component_valrecord_entry_t
		variant C.wasmtime_component_valvariant_t
		result  C.wasmtime_component_valresult_t
		valtype C.wasmtime_component_valtype_t
		item    C.wasmtime_component_item_t
		inst    C.wasmtime_component_instance_t
		fn      C.wasmtime_component_func_t
	)
	sz := func(expr string, v uintptr) layoutEntry { return layoutEntry{expr, int64(v)} }
	k := func(expr string, v int64) layoutEntry { return layoutEntry{expr, v} }
	return []layoutEntry{
		sz("sizeof(wasm_byte_vec_t)", unsafe.Sizeof(name)),
		k("_Alignof(wasm_byte_vec_t)", int64(C.th_align_byte_vec())),
		sz("offsetof(wasm_byte_vec_t, size)", unsafe.Offsetof(name.size)),
		sz("offsetof(wasm_byte_vec_t, data)", unsafe.Offsetof(name.data)),
		sz("sizeof(wasm_frame_vec_t)", unsafe.Sizeof(frames)),
		sz("offsetof(wasm_frame_vec_t, size)", unsafe.Offsetof(frames.size)),
		sz("offsetof(wasm_frame_vec_t, data)", unsafe.Offsetof(frames.data)),
		sz("sizeof(bool)", unsafe.Sizeof(C.bool(false))),
		sz("sizeof(float32_t)", unsafe.Sizeof(C.float32_t(0))),
		sz("sizeof(float64_t)", unsafe.Sizeof(C.float64_t(0))),

		sz("sizeof(wasmtime_component_val_t)", unsafe.Sizeof(val)),
		k("_Alignof(wasmtime_component_val_t)", int64(C.th_align_val())),
		k("_Alignof(wasmtime_component_valrecord_entry_t)", int64(C.th_align_entry())),
		k("_Alignof(wasmtime_component_item_t)", int64(C.th_align_item())),
		k("_Alignof(wasmtime_component_valtype_t)", int64(C.th_align_valtype())),
		sz("offsetof(wasmtime_component_val_t, kind)", unsafe.Offsetof(val.kind)),
		sz("offsetof(wasmtime_component_val_t, of)", unsafe.Offsetof(val.of)),
		sz("sizeof(wasmtime_component_valkind_t)", unsafe.Sizeof(val.kind)),
		sz("sizeof(wasmtime_component_valunion_t)", unsafe.Sizeof(val.of)),
		sz("sizeof(wasmtime_component_vallist_t)", unsafe.Sizeof(list)),
		sz("offsetof(wasmtime_component_vallist_t, size)", unsafe.Offsetof(list.size)),
		sz("offsetof(wasmtime_component_vallist_t, data)", unsafe.Offsetof(list.data)),
		sz("sizeof(wasmtime_component_valrecord_t)", unsafe.Sizeof(record)),
		sz("offsetof(wasmtime_component_valrecord_t, size)", unsafe.Offsetof(record.size)),
		sz("offsetof(wasmtime_component_valrecord_t, data)", unsafe.Offsetof(record.data)),
		sz("sizeof(wasmtime_component_valtuple_t)", unsafe.Sizeof(tuple)),
		sz("offsetof(wasmtime_component_valtuple_t, size)", unsafe.Offsetof(tuple.size)),
		sz("offsetof(wasmtime_component_valtuple_t, data)", unsafe.Offsetof(tuple.data)),
		sz("sizeof(wasmtime_component_valflags_t)", unsafe.Sizeof(flags)),
		sz("offsetof(wasmtime_component_valflags_t, size)", unsafe.Offsetof(flags.size)),
		sz("offsetof(wasmtime_component_valflags_t, data)", unsafe.Offsetof(flags.data)),
		sz("sizeof(wasmtime_component_valrecord_entry_t)", unsafe.Sizeof(entry)),
		sz("offsetof(wasmtime_component_valrecord_entry_t, name)", unsafe.Offsetof(entry.name)),
		sz("offsetof(wasmtime_component_valrecord_entry_t, val)", unsafe.Offsetof(entry.val)),
		sz("sizeof(wasmtime_component_valvariant_t)", unsafe.Sizeof(variant)),
		sz("offsetof(wasmtime_component_valvariant_t, discriminant)", unsafe.Offsetof(variant.discriminant)),
		sz("offsetof(wasmtime_component_valvariant_t, val)", unsafe.Offsetof(variant.val)),
		sz("sizeof(wasmtime_component_valresult_t)", unsafe.Sizeof(result)),
		sz("offsetof(wasmtime_component_valresult_t, is_ok)", unsafe.Offsetof(result.is_ok)),
		sz("offsetof(wasmtime_component_valresult_t, val)", unsafe.Offsetof(result.val)),

		sz("sizeof(wasmtime_component_valtype_t)", unsafe.Sizeof(valtype)),
		sz("offsetof(wasmtime_component_valtype_t, kind)", unsafe.Offsetof(valtype.kind)),
		sz("offsetof(wasmtime_component_valtype_t, of)", unsafe.Offsetof(valtype.of)),
		sz("sizeof(wasmtime_component_valtype_union_t)", unsafe.Sizeof(valtype.of)),
		sz("sizeof(wasmtime_component_item_t)", unsafe.Sizeof(item)),
		sz("offsetof(wasmtime_component_item_t, kind)", unsafe.Offsetof(item.kind)),
		sz("offsetof(wasmtime_component_item_t, of)", unsafe.Offsetof(item.of)),
		sz("sizeof(wasmtime_component_item_union_t)", unsafe.Sizeof(item.of)),

		sz("sizeof(wasmtime_component_instance_t)", unsafe.Sizeof(inst)),
		k("_Alignof(wasmtime_component_instance_t)", int64(C.th_align_instance())),
		sz("offsetof(wasmtime_component_instance_t, store_id)", unsafe.Offsetof(inst.store_id)),
		sz("sizeof(wasmtime_component_func_t)", unsafe.Sizeof(fn)),
		k("_Alignof(wasmtime_component_func_t)", int64(C.th_align_func())),
		sz("sizeof(wasmtime_opt_level_t)", unsafe.Sizeof(C.wasmtime_opt_level_t(0))),
		sz("sizeof(wasi_dir_perms)", unsafe.Sizeof(C.wasi_dir_perms(0))),
		sz("sizeof(wasi_file_perms)", unsafe.Sizeof(C.wasi_file_perms(0))),

		k("WASMTIME_COMPONENT_BOOL", C.WASMTIME_COMPONENT_BOOL),
		k("WASMTIME_COMPONENT_S8", C.WASMTIME_COMPONENT_S8),
		k("WASMTIME_COMPONENT_U8", C.WASMTIME_COMPONENT_U8),
		k("WASMTIME_COMPONENT_S16", C.WASMTIME_COMPONENT_S16),
		k("WASMTIME_COMPONENT_U16", C.WASMTIME_COMPONENT_U16),
		k("WASMTIME_COMPONENT_S32", C.WASMTIME_COMPONENT_S32),
		k("WASMTIME_COMPONENT_U32", C.WASMTIME_COMPONENT_U32),
		k("WASMTIME_COMPONENT_S64", C.WASMTIME_COMPONENT_S64),
		k("WASMTIME_COMPONENT_U64", C.WASMTIME_COMPONENT_U64),
		k("WASMTIME_COMPONENT_F32", C.WASMTIME_COMPONENT_F32),
		k("WASMTIME_COMPONENT_F64", C.WASMTIME_COMPONENT_F64),
		k("WASMTIME_COMPONENT_CHAR", C.WASMTIME_COMPONENT_CHAR),
		k("WASMTIME_COMPONENT_STRING", C.WASMTIME_COMPONENT_STRING),
		k("WASMTIME_COMPONENT_LIST", C.WASMTIME_COMPONENT_LIST),
		k("WASMTIME_COMPONENT_RECORD", C.WASMTIME_COMPONENT_RECORD),
		k("WASMTIME_COMPONENT_TUPLE", C.WASMTIME_COMPONENT_TUPLE),
		k("WASMTIME_COMPONENT_VARIANT", C.WASMTIME_COMPONENT_VARIANT),
		k("WASMTIME_COMPONENT_ENUM", C.WASMTIME_COMPONENT_ENUM),
		k("WASMTIME_COMPONENT_OPTION", C.WASMTIME_COMPONENT_OPTION),
		k("WASMTIME_COMPONENT_RESULT", C.WASMTIME_COMPONENT_RESULT),
		k("WASMTIME_COMPONENT_FLAGS", C.WASMTIME_COMPONENT_FLAGS),
		k("WASMTIME_COMPONENT_RESOURCE", C.WASMTIME_COMPONENT_RESOURCE),

		k("WASMTIME_COMPONENT_VALTYPE_BOOL", C.WASMTIME_COMPONENT_VALTYPE_BOOL),
		k("WASMTIME_COMPONENT_VALTYPE_S8", C.WASMTIME_COMPONENT_VALTYPE_S8),
		k("WASMTIME_COMPONENT_VALTYPE_S16", C.WASMTIME_COMPONENT_VALTYPE_S16),
		k("WASMTIME_COMPONENT_VALTYPE_S32", C.WASMTIME_COMPONENT_VALTYPE_S32),
		k("WASMTIME_COMPONENT_VALTYPE_S64", C.WASMTIME_COMPONENT_VALTYPE_S64),
		k("WASMTIME_COMPONENT_VALTYPE_U8", C.WASMTIME_COMPONENT_VALTYPE_U8),
		k("WASMTIME_COMPONENT_VALTYPE_U16", C.WASMTIME_COMPONENT_VALTYPE_U16),
		k("WASMTIME_COMPONENT_VALTYPE_U32", C.WASMTIME_COMPONENT_VALTYPE_U32),
		k("WASMTIME_COMPONENT_VALTYPE_U64", C.WASMTIME_COMPONENT_VALTYPE_U64),
		k("WASMTIME_COMPONENT_VALTYPE_F32", C.WASMTIME_COMPONENT_VALTYPE_F32),
		k("WASMTIME_COMPONENT_VALTYPE_F64", C.WASMTIME_COMPONENT_VALTYPE_F64),
		k("WASMTIME_COMPONENT_VALTYPE_CHAR", C.WASMTIME_COMPONENT_VALTYPE_CHAR),
		k("WASMTIME_COMPONENT_VALTYPE_STRING", C.WASMTIME_COMPONENT_VALTYPE_STRING),
		k("WASMTIME_COMPONENT_VALTYPE_LIST", C.WASMTIME_COMPONENT_VALTYPE_LIST),
		k("WASMTIME_COMPONENT_VALTYPE_RECORD", C.WASMTIME_COMPONENT_VALTYPE_RECORD),
		k("WASMTIME_COMPONENT_VALTYPE_TUPLE", C.WASMTIME_COMPONENT_VALTYPE_TUPLE),
		k("WASMTIME_COMPONENT_VALTYPE_VARIANT", C.WASMTIME_COMPONENT_VALTYPE_VARIANT),
		k("WASMTIME_COMPONENT_VALTYPE_ENUM", C.WASMTIME_COMPONENT_VALTYPE_ENUM),
		k("WASMTIME_COMPONENT_VALTYPE_OPTION", C.WASMTIME_COMPONENT_VALTYPE_OPTION),
		k("WASMTIME_COMPONENT_VALTYPE_RESULT", C.WASMTIME_COMPONENT_VALTYPE_RESULT),
		k("WASMTIME_COMPONENT_VALTYPE_FLAGS", C.WASMTIME_COMPONENT_VALTYPE_FLAGS),
		k("WASMTIME_COMPONENT_VALTYPE_OWN", C.WASMTIME_COMPONENT_VALTYPE_OWN),
		k("WASMTIME_COMPONENT_VALTYPE_BORROW", C.WASMTIME_COMPONENT_VALTYPE_BORROW),
		k("WASMTIME_COMPONENT_VALTYPE_FUTURE", C.WASMTIME_COMPONENT_VALTYPE_FUTURE),
		k("WASMTIME_COMPONENT_VALTYPE_STREAM", C.WASMTIME_COMPONENT_VALTYPE_STREAM),
		k("WASMTIME_COMPONENT_VALTYPE_ERROR_CONTEXT", C.WASMTIME_COMPONENT_VALTYPE_ERROR_CONTEXT),

		k("WASMTIME_COMPONENT_ITEM_COMPONENT", C.WASMTIME_COMPONENT_ITEM_COMPONENT),
		k("WASMTIME_COMPONENT_ITEM_COMPONENT_INSTANCE", C.WASMTIME_COMPONENT_ITEM_COMPONENT_INSTANCE),
		k("WASMTIME_COMPONENT_ITEM_MODULE", C.WASMTIME_COMPONENT_ITEM_MODULE),
		k("WASMTIME_COMPONENT_ITEM_COMPONENT_FUNC", C.WASMTIME_COMPONENT_ITEM_COMPONENT_FUNC),
		k("WASMTIME_COMPONENT_ITEM_RESOURCE", C.WASMTIME_COMPONENT_ITEM_RESOURCE),
		k("WASMTIME_COMPONENT_ITEM_CORE_FUNC", C.WASMTIME_COMPONENT_ITEM_CORE_FUNC),
		k("WASMTIME_COMPONENT_ITEM_TYPE", C.WASMTIME_COMPONENT_ITEM_TYPE),

		k("WASMTIME_TRAP_CODE_STACK_OVERFLOW", C.WASMTIME_TRAP_CODE_STACK_OVERFLOW),
		k("WASMTIME_TRAP_CODE_MEMORY_OUT_OF_BOUNDS", C.WASMTIME_TRAP_CODE_MEMORY_OUT_OF_BOUNDS),
		k("WASMTIME_TRAP_CODE_HEAP_MISALIGNED", C.WASMTIME_TRAP_CODE_HEAP_MISALIGNED),
		k("WASMTIME_TRAP_CODE_TABLE_OUT_OF_BOUNDS", C.WASMTIME_TRAP_CODE_TABLE_OUT_OF_BOUNDS),
		k("WASMTIME_TRAP_CODE_INDIRECT_CALL_TO_NULL", C.WASMTIME_TRAP_CODE_INDIRECT_CALL_TO_NULL),
		k("WASMTIME_TRAP_CODE_BAD_SIGNATURE", C.WASMTIME_TRAP_CODE_BAD_SIGNATURE),
		k("WASMTIME_TRAP_CODE_INTEGER_OVERFLOW", C.WASMTIME_TRAP_CODE_INTEGER_OVERFLOW),
		k("WASMTIME_TRAP_CODE_INTEGER_DIVISION_BY_ZERO", C.WASMTIME_TRAP_CODE_INTEGER_DIVISION_BY_ZERO),
		k("WASMTIME_TRAP_CODE_BAD_CONVERSION_TO_INTEGER", C.WASMTIME_TRAP_CODE_BAD_CONVERSION_TO_INTEGER),
		k("WASMTIME_TRAP_CODE_UNREACHABLE_CODE_REACHED", C.WASMTIME_TRAP_CODE_UNREACHABLE_CODE_REACHED),
		k("WASMTIME_TRAP_CODE_INTERRUPT", C.WASMTIME_TRAP_CODE_INTERRUPT),
		k("WASMTIME_TRAP_CODE_ALWAYS_TRAP_ADAPTER", C.WASMTIME_TRAP_CODE_ALWAYS_TRAP_ADAPTER),
		k("WASMTIME_TRAP_CODE_OUT_OF_FUEL", C.WASMTIME_TRAP_CODE_OUT_OF_FUEL),
		k("WASMTIME_TRAP_CODE_ATOMIC_WAIT_NON_SHARED_MEMORY", C.WASMTIME_TRAP_CODE_ATOMIC_WAIT_NON_SHARED_MEMORY),
		k("WASMTIME_TRAP_CODE_NULL_REFERENCE", C.WASMTIME_TRAP_CODE_NULL_REFERENCE),
		k("WASMTIME_TRAP_CODE_ARRAY_OUT_OF_BOUNDS", C.WASMTIME_TRAP_CODE_ARRAY_OUT_OF_BOUNDS),
		k("WASMTIME_TRAP_CODE_ALLOCATION_TOO_LARGE", C.WASMTIME_TRAP_CODE_ALLOCATION_TOO_LARGE),
		k("WASMTIME_TRAP_CODE_CAST_FAILURE", C.WASMTIME_TRAP_CODE_CAST_FAILURE),
		k("WASMTIME_TRAP_CODE_CANNOT_ENTER_COMPONENT", C.WASMTIME_TRAP_CODE_CANNOT_ENTER_COMPONENT),
		k("WASMTIME_TRAP_CODE_NO_ASYNC_RESULT", C.WASMTIME_TRAP_CODE_NO_ASYNC_RESULT),
		k("WASMTIME_TRAP_CODE_DISABLED_OPCODE", C.WASMTIME_TRAP_CODE_DISABLED_OPCODE),
		// Go-side mirrors of C constants.
		k("WASMTIME_TRAP_CODE_DISABLED_OPCODE", int64(TrapDisabledOpcode)),
		k("WASMTIME_TRAP_CODE_OUT_OF_FUEL", int64(TrapOutOfFuel)),
		k("WASMTIME_COMPONENT_RESOURCE", int64(KindResource)),
		k("WASMTIME_COMPONENT_VALTYPE_ERROR_CONTEXT", int64(TypeErrorContext)),
		k("WASMTIME_COMPONENT_ITEM_TYPE", int64(ItemType)),

		k("WASMTIME_OPT_LEVEL_NONE", C.WASMTIME_OPT_LEVEL_NONE),
		k("WASMTIME_OPT_LEVEL_SPEED", C.WASMTIME_OPT_LEVEL_SPEED),
		k("WASMTIME_OPT_LEVEL_SPEED_AND_SIZE", C.WASMTIME_OPT_LEVEL_SPEED_AND_SIZE),
		k("WASMTIME_WASI_DIR_PERMS_READ", C.WASMTIME_WASI_DIR_PERMS_READ),
		k("WASMTIME_WASI_DIR_PERMS_WRITE", C.WASMTIME_WASI_DIR_PERMS_WRITE),
		k("WASMTIME_WASI_FILE_PERMS_READ", C.WASMTIME_WASI_FILE_PERMS_READ),
		k("WASMTIME_WASI_FILE_PERMS_WRITE", C.WASMTIME_WASI_FILE_PERMS_WRITE),
		// Declared in interrupt.go's preamble, where the value is 0.
		k("WASMTIME_UPDATE_DEADLINE_CONTINUE", 0),
		k("sizeof(wasmtime_update_deadline_kind_t)", 1),
	}
}
