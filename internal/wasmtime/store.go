package wasmtime

// #include <stdlib.h>
// #include "capi.h"
import "C"

import (
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"sync/atomic"
	"unsafe"
)

// WASIConfig is the WASI p2 context of a store. The zero value gives the
// guest no arguments, no environment, empty stdin, discarded stdout and
// stderr and no filesystem.
type WASIConfig struct {
	Args     []string
	Env      map[string]string
	Stdout   io.Writer // nil: discarded
	Stderr   io.Writer // nil: discarded
	Preopens []Preopen
}

// Preopen grants the guest a host directory.
type Preopen struct {
	HostPath  string
	GuestPath string
	ReadOnly  bool
}

// StoreConfig configures a Store.
type StoreConfig struct {
	// WASI is the WASI context; nil is the same as &WASIConfig{}.
	WASI *WASIConfig
	// MemoryLimit caps each linear memory of the store in bytes; growth
	// beyond it fails (memory.grow returns -1). 0: no limit.
	MemoryLimit uint64
	// Fuel is the initial fuel when the engine consumes fuel; 0 means
	// unlimited (math.MaxInt64).
	Fuel uint64
	// Data is returned by Store.Data and Caller.Data.
	Data any
}

// Store holds the instances and values of one agent. It must be used by one
// goroutine at a time (host functions run on that goroutine).
type Store struct {
	ptr    *C.wasmtime_store_t
	ctx    *C.wasmtime_context_t
	engine *Engine
	data   any
	caller Caller

	depth int   // nesting of guest calls in progress
	cause error // error or panic of the last failing host callback
	vals  []Val // stack of host-function argument/result slices
	funcs []*Func
	res   guestResources

	// writePanic is the first panic of a WASI output writer since a call
	// last ended (goWrite): the guest saw a failed write; the call reports
	// the panic (takeWritePanic).
	writePanic atomic.Pointer[PanicError]

	intr interruptFlag // interrupt.go
}

// guestResources are the guest resources a Store's host functions hold:
// every one made (anys, freed by Close) and the borrows the running host
// function received (dropped when it returns).
type guestResources struct {
	anys    map[*ResourceAny]struct{}
	borrows []*ResourceAny
}

// NewStore creates a store with a WASI context, limits and data.
func NewStore(e *Engine, cfg StoreConfig) (*Store, error) {
	eng, err := e.lock("new store")
	if err != nil {
		return nil, err
	}
	defer e.unlock()
	s := &Store{engine: e, data: cfg.Data, res: guestResources{anys: map[*ResourceAny]struct{}{}}}
	s.caller.store = s
	h := newHandle(s)
	s.ptr = C.th_store_new(eng, h)
	if s.ptr == nil {
		goHandleDelete(h)
		return nil, errors.New("wasmtime: cannot create store")
	}
	s.ctx = C.wasmtime_store_context(s.ptr)
	if cfg.MemoryLimit > 0 {
		lim := int64(math.MaxInt64)
		if cfg.MemoryLimit < math.MaxInt64 {
			lim = int64(cfg.MemoryLimit)
		}
		C.wasmtime_store_limiter(s.ptr, C.int64_t(lim), -1, -1, -1, -1)
	}
	if e.cfg.ConsumeFuel {
		fuel := cfg.Fuel
		if fuel == 0 {
			fuel = math.MaxInt64
		}
		if err := s.SetFuel(fuel); err != nil {
			s.Close()
			return nil, err
		}
	}
	if e.cfg.EpochInterruption {
		// No deadline until the owner sets one.
		C.wasmtime_context_set_epoch_deadline(s.ctx, 1<<62)
	}
	w := cfg.WASI
	if w == nil {
		w = &WASIConfig{}
	}
	if err := s.setWASI(w); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Store) setWASI(w *WASIConfig) error {
	for _, a := range w.Args {
		if strings.IndexByte(a, 0) >= 0 {
			return errors.New("wasmtime: WASI argument contains a NUL byte")
		}
	}
	for k, v := range w.Env {
		if strings.IndexByte(k, 0) >= 0 || strings.IndexByte(v, 0) >= 0 || strings.IndexByte(k, '=') >= 0 {
			return fmt.Errorf("wasmtime: invalid WASI environment variable %q", k)
		}
	}
	for _, p := range w.Preopens {
		if strings.IndexByte(p.HostPath, 0) >= 0 || strings.IndexByte(p.GuestPath, 0) >= 0 {
			return errors.New("wasmtime: WASI preopen path contains a NUL byte")
		}
	}
	wc := C.wasi_config_new()
	if wc == nil {
		return errors.New("wasmtime: cannot allocate WASI config")
	}
	if len(w.Args) > 0 {
		argv := cStrings(w.Args)
		ok := C.th_set_argv(wc, C.size_t(len(w.Args)), (**C.char)(argv))
		freeCStrings(argv, len(w.Args))
		if !ok {
			C.wasi_config_delete(wc)
			return errors.New("wasmtime: invalid WASI arguments (not UTF-8?)")
		}
	}
	if len(w.Env) > 0 {
		keys := make([]string, 0, len(w.Env))
		for k := range w.Env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		vals := make([]string, len(keys))
		for i, k := range keys {
			vals[i] = w.Env[k]
		}
		names, values := cStrings(keys), cStrings(vals)
		ok := C.wasi_config_set_env(wc, C.size_t(len(keys)), (**C.char)(names), (**C.char)(values))
		freeCStrings(names, len(keys))
		freeCStrings(values, len(vals))
		if !ok {
			C.wasi_config_delete(wc)
			return errors.New("wasmtime: invalid WASI environment (not UTF-8?)")
		}
	}
	for _, pair := range []struct {
		w      io.Writer
		stdout bool
		name   string
	}{{w.Stdout, true, "WASI stdout writer"}, {w.Stderr, false, "WASI stderr writer"}} {
		if pair.w == nil {
			continue
		}
		C.th_set_output(wc, C.bool(pair.stdout), newHandle(&writer{w: pair.w, name: pair.name, store: s}))
	}
	for _, p := range w.Preopens {
		host, guest := C.CString(p.HostPath), C.CString(p.GuestPath)
		dirPerms, filePerms := C.wasi_dir_perms(C.WASMTIME_WASI_DIR_PERMS_READ), C.wasi_file_perms(C.WASMTIME_WASI_FILE_PERMS_READ)
		if !p.ReadOnly {
			dirPerms |= C.WASMTIME_WASI_DIR_PERMS_WRITE
			filePerms |= C.WASMTIME_WASI_FILE_PERMS_WRITE
		}
		ok := C.wasi_config_preopen_dir(wc, host, guest, dirPerms, filePerms)
		C.free(unsafe.Pointer(host))
		C.free(unsafe.Pointer(guest))
		if !ok {
			C.wasi_config_delete(wc)
			return fmt.Errorf("wasmtime: cannot preopen %q", p.HostPath)
		}
	}
	if cerr := C.wasmtime_context_set_wasi(s.ctx, wc); cerr != nil { // takes wc
		return plainError("set WASI", cerr)
	}
	return nil
}

// cStrings copies ss into a malloc'd array of malloc'd C strings.
func cStrings(ss []string) unsafe.Pointer {
	arr := C.malloc(C.size_t(len(ss)) * C.size_t(unsafe.Sizeof(uintptr(0))))
	ptrs := unsafe.Slice((**C.char)(arr), len(ss))
	for i, s := range ss {
		ptrs[i] = C.CString(s)
	}
	return arr
}

func freeCStrings(arr unsafe.Pointer, n int) {
	for _, p := range unsafe.Slice((**C.char)(arr), n) {
		C.free(unsafe.Pointer(p))
	}
	C.free(arr)
}

// writer is a WASI output stream's io.Writer, reached from goWrite.
type writer struct {
	w     io.Writer
	name  string // for a PanicError: "WASI stdout writer"
	store *Store // where a panic of w is recorded
}

func (s *Store) check(what string) error {
	if s.ptr == nil {
		return closedErr(what + ": store")
	}
	return nil
}

func (s *Store) mustOpen(what string) {
	if s.ptr == nil {
		closedPanic("Store (" + what + ")")
	}
}

// Engine returns the store's engine.
func (s *Store) Engine() *Engine { return s.engine }

// Data returns StoreConfig.Data.
func (s *Store) Data() any { return s.data }

// SetFuel sets the fuel left; the engine must consume fuel.
func (s *Store) SetFuel(fuel uint64) error {
	if err := s.check("set fuel"); err != nil {
		return err
	}
	return plainError("set fuel", C.wasmtime_context_set_fuel(s.ctx, C.uint64_t(fuel)))
}

// Fuel returns the fuel left; the engine must consume fuel.
func (s *Store) Fuel() (uint64, error) {
	if err := s.check("get fuel"); err != nil {
		return 0, err
	}
	var f C.uint64_t
	if err := plainError("get fuel", C.wasmtime_context_get_fuel(s.ctx, &f)); err != nil {
		return 0, err
	}
	return uint64(f), nil
}

// SetEpochDeadline makes guest code trap (TrapInterrupt) once the engine's
// epoch has advanced ticks beyond its current value. The engine must have
// EpochInterruption. SetEpochDeadline(0) interrupts at the next check.
func (s *Store) SetEpochDeadline(ticks uint64) {
	s.mustOpen("SetEpochDeadline")
	C.wasmtime_context_set_epoch_deadline(s.ctx, C.uint64_t(ticks))
}

// Close frees the store and every instance, function and resource handle
// it holds. It fails if called from inside a host function of this store.
// Idempotent.
func (s *Store) Close() error {
	if s.ptr == nil {
		return nil
	}
	if s.depth > 0 {
		return errors.New("wasmtime: close store: a call is in progress")
	}
	for r := range s.res.anys {
		r.free()
	}
	s.closeInterrupt()
	C.wasmtime_store_delete(s.ptr) // runs the data finalizer: deletes the handle
	s.ptr, s.ctx = nil, nil
	for _, f := range s.funcs {
		f.free()
	}
	s.funcs = nil
	s.data = nil
	return nil
}

// Caller is what a host function gets about the store it runs in. It is
// valid only during the callback.
type Caller struct{ store *Store }

// Store returns the store the host function runs in.
func (c *Caller) Store() *Store { return c.store }

// Data returns the store's data (StoreConfig.Data).
func (c *Caller) Data() any { return c.store.data }

// ResourceAny is a resource defined by a guest (or one wasmtime could not
// map to a host resource type). It belongs to its store. An owned
// ResourceAny must be dropped with Drop (runs the guest destructor) or
// passed back to the guest (which takes ownership and closes this handle).
type ResourceAny struct {
	store *Store
	ptr   *C.wasmtime_component_resource_any_t
	owned bool
}

// Kind implements Val.
func (*ResourceAny) Kind() Kind { return KindResource }

// Owned reports whether this is an own<T> (else a borrow<T>).
func (r *ResourceAny) Owned() bool { return r.owned }

// Drop ends the resource (running the guest's destructor for an owned
// resource) and frees the handle. Idempotent.
func (r *ResourceAny) Drop() error {
	if r.ptr == nil {
		return nil
	}
	if err := r.store.check("drop resource"); err != nil {
		return err
	}
	r.store.depth++
	cerr := C.wasmtime_component_resource_any_drop(r.store.ctx, r.ptr)
	r.store.depth--
	r.free()
	return takeError(cerr, r.store.takeCause())
}

// Close frees the handle without dropping the resource (the store reclaims
// it when closed). Idempotent.
func (r *ResourceAny) Close() error {
	r.free()
	return nil
}

func (r *ResourceAny) free() {
	if r.ptr != nil {
		C.wasmtime_component_resource_any_delete(r.ptr)
		r.ptr = nil
		delete(r.store.res.anys, r)
	}
}

func (s *Store) takeCause() error {
	c := s.cause
	s.cause = nil
	return c
}

// takeWritePanic returns and clears the panic goWrite recorded, if any.
func (s *Store) takeWritePanic() *PanicError { return s.writePanic.Swap(nil) }
