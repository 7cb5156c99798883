package wasmtime

// #include <stdlib.h>
// #include "capi.h"
import "C"

import (
	"fmt"
	"strings"
	"unsafe"
)

// Instance is an instantiated component in a store.
type Instance struct {
	store *Store
	inst  C.wasmtime_component_instance_t
}

// Func looks up an exported function; names is the export path, e.g.
// Func("run") or Func("wasi:cli/run@0.2.0", "run").
func (i *Instance) Func(names ...string) (*Func, error) {
	s := i.store
	if err := s.check("lookup func"); err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("wasmtime: lookup func: no name")
	}
	var idx *C.wasmtime_component_export_index_t
	for n, name := range names {
		if name == "" {
			return nil, fmt.Errorf("wasmtime: lookup func: empty export name")
		}
		cname := (*C.char)(unsafe.Pointer(unsafe.StringData(name)))
		next := C.wasmtime_component_instance_get_export_index(&i.inst, s.ctx, idx, cname, C.size_t(len(name)))
		if idx != nil {
			C.wasmtime_component_export_index_delete(idx)
		}
		if next == nil {
			return nil, fmt.Errorf("wasmtime: export %q not found", strings.Join(names[:n+1], "/"))
		}
		idx = next
	}
	f := &Func{store: s, name: strings.Join(names, "/")}
	// The C function struct is followed by the int th_func_call sets when
	// post-return fails, so a call passes only C memory.
	f.fn = (*C.wasmtime_component_func_t)(C.calloc(1, C.sizeof_wasmtime_component_func_t+8))
	f.postFailed = (*C.int)(unsafe.Add(unsafe.Pointer(f.fn), C.sizeof_wasmtime_component_func_t))
	ok := C.wasmtime_component_instance_get_func(&i.inst, s.ctx, idx, f.fn)
	C.wasmtime_component_export_index_delete(idx)
	if !ok {
		C.free(unsafe.Pointer(f.fn))
		return nil, fmt.Errorf("wasmtime: export %q is not a function", f.name)
	}
	ft := C.wasmtime_component_func_type(f.fn, s.ctx)
	f.typ = convertFuncType(ft)
	C.wasmtime_component_func_type_delete(ft)
	f.nparams = len(f.typ.Params)
	for _, p := range f.typ.Params {
		f.hasOwn = f.hasOwn || hasOwn(p.Type)
	}
	if f.typ.Result != nil {
		f.nresults = 1
	}
	f.buf = f.allocBuf()
	s.funcs = append(s.funcs, f)
	return f, nil
}

// Func is an exported component function. It belongs to its store.
type Func struct {
	store      *Store
	name       string
	fn         *C.wasmtime_component_func_t // C memory
	postFailed *C.int                       // C memory, after fn
	typ        *FuncType
	nparams    int
	nresults   int
	buf        *cval // C memory: nparams+nresults zeroed values, reused
	busy       bool  // buf is in use by a call in progress (re-entrance)
	hasOwn     bool  // a parameter type contains own<T>
}

// Type returns the function's signature.
func (f *Func) Type() *FuncType { return f.typ }

// Name returns the export path joined with "/".
func (f *Func) Name() string { return f.name }

func (f *Func) allocBuf() *cval {
	n := f.nparams + f.nresults
	if n == 0 {
		n = 1
	}
	return (*cval)(C.calloc(C.size_t(n), cvalSize))
}

func (f *Func) free() {
	if f.fn != nil {
		C.free(unsafe.Pointer(f.fn))
		C.free(unsafe.Pointer(f.buf))
		f.fn, f.buf = nil, nil
	}
}

// Call calls the function with typed arguments and returns its result (nil
// when it has none). post-return is run inside. Errors: *Trap (with Cause
// set if a host function failed or panicked), *ExitError for a WASI exit,
// ErrClosed, or an argument error (found in Go, before the guest runs).
// After a *Trap the instance cannot be entered again; use a new instance.
func (f *Func) Call(args ...Val) (Val, error) {
	s := f.store
	if s.ptr == nil || f.fn == nil {
		return nil, closedErr("call " + f.name + ": store")
	}
	if len(args) != f.nparams {
		return nil, fmt.Errorf("wasmtime: call %s: %d arguments, want %d", f.name, len(args), f.nparams)
	}
	for i, a := range args {
		if err := checkVal(f.typ.Params[i].Type, a); err != nil {
			return nil, fmt.Errorf("wasmtime: call %s: argument %s: %w", f.name, f.typ.Params[i].Name, err)
		}
	}
	if f.busy { // re-entered from a host function: use a fresh buffer
		buf := f.allocBuf()
		v, err := f.call(buf, args)
		C.free(unsafe.Pointer(buf))
		return v, err
	}
	f.busy = true
	v, err := f.call(f.buf, args)
	f.busy = false
	return v, err
}

func (f *Func) call(buf *cval, args []Val) (Val, error) {
	s := f.store
	all := unsafe.Slice(buf, f.nparams+f.nresults)
	argv, resv := all[:f.nparams], all[f.nparams:]
	for i, a := range args {
		if err := s.toC(s.ctx, a, &argv[i]); err != nil {
			deleteVals(argv[:i+1])
			return nil, fmt.Errorf("wasmtime: call %s: argument %d: %w", f.name, i, err)
		}
	}
	var argp, resp *cval
	if f.nparams > 0 {
		argp = &argv[0]
	}
	if f.nresults > 0 {
		resp = &resv[0]
	}
	*f.postFailed = 0
	s.depth++
	cerr := C.th_func_call(f.fn, s.ctx, argp, C.size_t(f.nparams), resp, C.size_t(f.nresults), f.postFailed)
	s.depth--
	deleteVals(argv)
	if f.hasOwn {
		// Lowering moved owned guest resources into the guest, even if the
		// call then failed.
		for i, a := range args {
			spendOwned(f.typ.Params[i].Type, a)
		}
	}
	wp := s.takeWritePanic()
	if cerr != nil {
		if *f.postFailed != 0 {
			deleteVals(resv)
		}
		cause := s.takeCause()
		if cause == nil && wp != nil {
			cause = wp // the guest trapped over the write that failed
		}
		return nil, takeError(cerr, cause)
	}
	if wp != nil {
		deleteVals(resv)
		return nil, fmt.Errorf("wasmtime: call %s: %w", f.name, wp)
	}
	if f.nresults == 0 {
		return nil, nil
	}
	v, err := s.fromC(s.ctx, &resv[0], false)
	deleteVals(resv)
	if err != nil {
		return nil, fmt.Errorf("wasmtime: call %s: result: %w", f.name, err)
	}
	return v, nil
}

// deleteVals frees what the values own and resets them to bool false.
func deleteVals(vs []cval) {
	for i := range vs {
		v := &vs[i]
		if v.kind >= C.WASMTIME_COMPONENT_STRING {
			C.wasmtime_component_val_delete(v)
		}
		zeroVal(v)
	}
}
