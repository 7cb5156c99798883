package wasmtime

// #include "capi.h"
import "C"

import (
	"unsafe"

	// The wasmtime-go module ships libwasmtime.a; its #cgo LDFLAGS link it.
	_ "github.com/bytecodealliance/wasmtime-go/v39"
)

// cval is one C component value: 32 bytes, payload at offset 8.
type cval = C.wasmtime_component_val_t

const cvalSize = C.sizeof_wasmtime_component_val_t

// payload returns a pointer to v's union.
func payload(v *cval) unsafe.Pointer { return unsafe.Pointer(&v.of) }

// cvals views n C values starting at p as a Go slice.
func cvals(p *cval, n int) []cval {
	if n == 0 || p == nil {
		return nil
	}
	return unsafe.Slice(p, n)
}

// zeroVal resets v to a value owning nothing (bool false), the state
// wasmtime expects before it overwrites a value.
func zeroVal(v *cval) {
	*v = cval{}
}

// goBytes copies a C name into a Go string.
func goString(n *C.wasm_name_t) string {
	if n.size == 0 {
		return ""
	}
	return string(unsafe.Slice((*byte)(unsafe.Pointer(n.data)), int(n.size)))
}

// newName fills *out with a wasmtime-owned copy of s. s must be valid UTF-8
// where wasmtime converts it to a Rust String (it would abort otherwise).
func newName(out *C.wasm_name_t, s string) {
	if len(s) == 0 {
		C.wasm_byte_vec_new_empty(out)
		return
	}
	C.wasm_byte_vec_new(out, C.size_t(len(s)), (*C.wasm_byte_t)(unsafe.Pointer(unsafe.StringData(s))))
}
