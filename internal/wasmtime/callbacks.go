package wasmtime

// #include <stdlib.h>
// #include "capi.h"
import "C"

import (
	"errors"
	"fmt"
	"runtime/debug"
	"unsafe"
)

// Functions called from shims.c. They receive handle-table indices (see
// handles.go), never Go pointers, and never let a panic unwind into C.

//export goHostFuncCall
func goHostFuncCall(fnH, storeH C.uintptr_t, ctx *C.wasmtime_context_t, args *cval, nargs C.size_t, results *cval, nresults C.size_t) (cerr *C.wasmtime_error_t) {
	// The user function's panics are caught in invoke, with their cause;
	// this catches the binding's own (a stale index, a conversion bug), which
	// must not unwind into wasmtime either.
	defer func() {
		if p := recover(); p != nil {
			cerr = panicError("host function call", p)
		}
	}()
	hf := handles.get(uintptr(fnH)).(*hostFunc)
	s := handles.get(uintptr(storeH)).(*Store)
	return s.runHostFunc(hf, ctx, cvals(args, int(nargs)), cvals(results, int(nresults)))
}

func (s *Store) runHostFunc(hf *hostFunc, ctx *C.wasmtime_context_t, cargs, cres []cval) *C.wasmtime_error_t {
	base := len(s.vals)
	n := len(cargs) + len(cres)
	if cap(s.vals)-base < n {
		grown := make([]Val, base, 2*cap(s.vals)+n)
		copy(grown, s.vals)
		s.vals = grown
	}
	s.vals = s.vals[:base+n]
	args := s.vals[base : base+len(cargs) : base+len(cargs)]
	results := s.vals[base+len(cargs) : base+n : base+n]
	borrowBase := len(s.res.borrows)

	cerr := s.hostCall(hf, ctx, cargs, cres, args, results)

	clear(s.vals[base : base+n])
	s.vals = s.vals[:base]
	if len(s.res.borrows) > borrowBase {
		s.releaseBorrows(borrowBase)
	}
	return cerr
}

func (s *Store) hostCall(hf *hostFunc, ctx *C.wasmtime_context_t, cargs, cres []cval, args, results []Val) *C.wasmtime_error_t {
	for i := range cargs {
		v, err := s.fromC(ctx, &cargs[i], true)
		if err != nil {
			return s.hostError(hf.name, fmt.Errorf("argument %d: %w", i, err))
		}
		args[i] = v
	}
	if err := s.invoke(hf, args, results); err != nil {
		return s.hostError(hf.name, err)
	}
	for i, r := range results {
		if r == nil {
			return s.hostError(hf.name, fmt.Errorf("result %d not set", i))
		}
		if err := s.toC(ctx, r, &cres[i]); err != nil {
			return s.hostError(hf.name, fmt.Errorf("result: %w", err))
		}
	}
	return nil
}

func (s *Store) invoke(hf *hostFunc, args, results []Val) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &PanicError{Func: hf.name, Value: p, Stack: debug.Stack()}
		}
	}()
	return hf.fn(&s.caller, args, results)
}

// releaseBorrows ends the guest borrows received since mark.
func (s *Store) releaseBorrows(mark int) {
	for _, r := range s.res.borrows[mark:] {
		if r.ptr != nil {
			if cerr := C.wasmtime_component_resource_any_drop(s.ctx, r.ptr); cerr != nil {
				C.wasmtime_error_delete(cerr)
			}
			r.free()
		}
	}
	clear(s.res.borrows[mark:])
	s.res.borrows = s.res.borrows[:mark]
}

// panicError is the wasmtime error for a panic of the binding itself in a
// callback (no store may be known): the guest traps with its message.
func panicError(where string, p any) *C.wasmtime_error_t {
	cmsg := C.CString(fmt.Sprintf("toolhostd: panic in %s: %v", where, p))
	defer C.free(unsafe.Pointer(cmsg))
	return C.wasmtime_error_new(cmsg)
}

// hostError records err as the cause of the coming trap and returns the C
// error handed to wasmtime.
func (s *Store) hostError(name string, err error) *C.wasmtime_error_t {
	var pe *PanicError
	if !errors.As(err, &pe) {
		err = fmt.Errorf("host function %s: %w", name, err)
	}
	s.cause = err
	cmsg := C.CString(err.Error())
	defer C.free(unsafe.Pointer(cmsg))
	return C.wasmtime_error_new(cmsg)
}

//export goResourceDtor
func goResourceDtor(resH, storeH C.uintptr_t, ctx *C.wasmtime_context_t, rep C.uint32_t) (cerr *C.wasmtime_error_t) {
	defer func() {
		if p := recover(); p != nil {
			cerr = panicError("resource destructor call", p)
		}
	}()
	rd := handles.get(uintptr(resH)).(*resourceDef)
	s := handles.get(uintptr(storeH)).(*Store)
	if rd.dtor == nil {
		return nil
	}
	err := func() (err error) {
		defer func() {
			if p := recover(); p != nil {
				err = &PanicError{Func: "destructor of " + rd.name, Value: p, Stack: debug.Stack()}
			}
		}()
		return rd.dtor(&s.caller, uint32(rep))
	}()
	if err != nil {
		return s.hostError("resource destructor "+rd.name, err)
	}
	return nil
}

// goWrite hands guest output to a WASI writer. A failed write is the
// guest's error; a panic of the writer is the host's: the guest sees a
// failed write, and the call it happened in returns the *PanicError (see
// Func.call).
//
//export goWrite
func goWrite(h C.uintptr_t, buf unsafe.Pointer, n C.size_t) (written C.ptrdiff_t) {
	var w *writer
	defer func() {
		if p := recover(); p != nil {
			written = -1
			if w != nil { // else the handle was stale: no store to tell, and no unwinding into C
				w.store.writePanic.CompareAndSwap(nil, &PanicError{Func: w.name, Value: p, Stack: debug.Stack()})
			}
		}
	}()
	w = handles.get(uintptr(h)).(*writer)
	if n == 0 {
		return 0
	}
	m, err := w.w.Write(unsafe.Slice((*byte)(buf), int(n)))
	if err != nil && m == 0 {
		return -1
	}
	return C.ptrdiff_t(m)
}

//export goHandleDelete
func goHandleDelete(h C.uintptr_t) {
	handles.remove(uintptr(h))
}

// newHandle registers v for callbacks; wasmtime releases it through
// th_handle_finalizer.
func newHandle(v any) C.uintptr_t {
	return C.uintptr_t(handles.add(v))
}
