package wasmtime

// #include <stdlib.h>
// #include "capi.h"
import "C"

import (
	"errors"
	"unsafe"
)

// This file is the reference the benchmarks compare the binding with: the
// same guest export calling the same host function, written directly on the
// C API with no wrappers (no Val, no handles, no checks). It is unexported
// and used only by BenchmarkHostCall*.

const (
	rawEchoU32    = 0
	rawEchoString = 1
)

// goRawEcho is the baseline host function: it copies its argument to its
// result, touching the C values directly.
//
//export goRawEcho
func goRawEcho(mode C.uintptr_t, args, results *cval) {
	if mode == rawEchoU32 {
		results.kind = C.WASMTIME_COMPONENT_U32
		*(*uint32)(payload(results)) = *(*uint32)(payload(args))
		return
	}
	in := (*cname)(payload(args))
	C.wasm_byte_vec_new((*cname)(payload(results)), in.size, in.data)
	results.kind = C.WASMTIME_COMPONENT_STRING
}

// rawBench is an instance of an echo component set up on the raw C API.
type rawBench struct {
	linker *C.wasmtime_component_linker_t
	store  *C.wasmtime_store_t
	ctx    *C.wasmtime_context_t
	fn     *C.wasmtime_component_func_t // C memory
	vals   *cval                        // C memory: argument, result
}

func newRawBench(e *Engine, c *Component, mode int) (*rawBench, error) {
	eng, err := e.lock("raw bench")
	if err != nil {
		return nil, err
	}
	defer e.unlock()
	cp, err := c.lock("raw bench")
	if err != nil {
		return nil, err
	}
	defer c.unlock()
	rb := &rawBench{linker: C.wasmtime_component_linker_new(eng)}
	root := C.wasmtime_component_linker_root(rb.linker)
	name := C.CString("echo")
	cerr := C.th_raw_add_echo(root, name, 4, C.uintptr_t(mode))
	C.free(unsafe.Pointer(name))
	C.wasmtime_component_linker_instance_delete(root)
	if cerr != nil {
		rb.close()
		return nil, plainError("raw add func", cerr)
	}
	rb.store = C.wasmtime_store_new(eng, nil, nil)
	rb.ctx = C.wasmtime_store_context(rb.store)
	inst := (*C.wasmtime_component_instance_t)(C.calloc(1, C.sizeof_wasmtime_component_instance_t))
	defer C.free(unsafe.Pointer(inst))
	if cerr := C.wasmtime_component_linker_instantiate(rb.linker, rb.ctx, cp, inst); cerr != nil {
		rb.close()
		return nil, plainError("raw instantiate", cerr)
	}
	run := C.CString("run")
	idx := C.wasmtime_component_instance_get_export_index(inst, rb.ctx, nil, run, 3)
	C.free(unsafe.Pointer(run))
	rb.fn = (*C.wasmtime_component_func_t)(C.calloc(1, C.sizeof_wasmtime_component_func_t))
	rb.vals = (*cval)(C.calloc(2, cvalSize))
	ok := idx != nil && bool(C.wasmtime_component_instance_get_func(inst, rb.ctx, idx, rb.fn))
	if idx != nil {
		C.wasmtime_component_export_index_delete(idx)
	}
	if !ok {
		rb.close()
		return nil, errors.New("raw bench: no run export")
	}
	return rb, nil
}

func (rb *rawBench) call() error {
	res := (*cval)(unsafe.Add(unsafe.Pointer(rb.vals), cvalSize))
	if cerr := C.wasmtime_component_func_call(rb.fn, rb.ctx, rb.vals, 1, res, 1); cerr != nil {
		return plainError("raw call", cerr)
	}
	return plainError("raw post-return", C.wasmtime_component_func_post_return(rb.fn, rb.ctx))
}

// callU32 calls run(x) and returns its u32 result.
func (rb *rawBench) callU32(x uint32) (uint32, error) {
	rb.vals.kind = C.WASMTIME_COMPONENT_U32
	*(*uint32)(payload(rb.vals)) = x
	if err := rb.call(); err != nil {
		return 0, err
	}
	res := (*cval)(unsafe.Add(unsafe.Pointer(rb.vals), cvalSize))
	return *(*uint32)(payload(res)), nil
}

// callString calls run(s) and returns its string result, copied to Go.
func (rb *rawBench) callString(s string) (string, error) {
	newName((*cname)(payload(rb.vals)), s)
	rb.vals.kind = C.WASMTIME_COMPONENT_STRING
	err := rb.call()
	res := (*cval)(unsafe.Add(unsafe.Pointer(rb.vals), cvalSize))
	var out string
	if err == nil {
		out = goString((*cname)(payload(res)))
	}
	C.wasmtime_component_val_delete(rb.vals)
	C.wasmtime_component_val_delete(res)
	zeroVal(rb.vals)
	zeroVal(res)
	return out, err
}

func (rb *rawBench) close() {
	if rb.store != nil {
		C.wasmtime_store_delete(rb.store)
		rb.store = nil
	}
	if rb.linker != nil {
		C.wasmtime_component_linker_delete(rb.linker)
		rb.linker = nil
	}
	C.free(unsafe.Pointer(rb.fn))
	C.free(unsafe.Pointer(rb.vals))
	rb.fn, rb.vals = nil, nil
}
