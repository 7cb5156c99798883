package wasmtime

// #include "capi.h"
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"unicode/utf8"
	"unsafe"
)

// HostFunc implements a component import. args holds the parameters; the
// function must set every element of results (a component function has 0
// or 1 result). Both slices are valid only during the call. Returning an
// error (or panicking) makes the guest trap; the Call in progress then
// returns a *Trap whose Cause is that error (or a *PanicError).
type HostFunc func(c *Caller, args []Val, results []Val) error

// ResourceDtor is called when the guest drops an owned host resource.
type ResourceDtor func(c *Caller, rep uint32) error

// Linker defines a component's imports and instantiates it. Definitions are
// collected in Go and given to wasmtime on the first Instantiate or
// DefineUnknownImportsAsTraps; after that the linker is frozen (further
// definitions fail) and may be used by many goroutines at once.
type Linker struct {
	mu      sync.RWMutex
	ptr     *C.wasmtime_component_linker_t
	engine  *Engine
	root    *LinkerInstance
	wasip2  bool
	frozen  bool
	freezeE error
}

// LinkerInstance is a (possibly nested) instance namespace of a Linker.
type LinkerInstance struct {
	linker *Linker
	path   string
	names  map[string]bool
	defs   []linkerDef
}

type linkerDef struct {
	name  string
	fn    *hostFunc
	res   *resourceDef
	inner *LinkerInstance
}

type hostFunc struct {
	name string
	fn   HostFunc
}

type resourceDef struct {
	name string
	typ  uint32
	dtor ResourceDtor
}

// NewLinker creates an empty linker.
func NewLinker(e *Engine) (*Linker, error) {
	eng, err := e.lock("new linker")
	if err != nil {
		return nil, err
	}
	defer e.unlock()
	l := &Linker{ptr: C.wasmtime_component_linker_new(eng), engine: e}
	l.root = &LinkerInstance{linker: l, names: map[string]bool{}}
	return l, nil
}

// Root returns the root namespace (imports that are not in an instance).
func (l *Linker) Root() *LinkerInstance { return l.root }

func (l *Linker) define(li *LinkerInstance, d linkerDef) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ptr == nil {
		return closedErr("define " + d.name + ": linker")
	}
	if l.frozen {
		return fmt.Errorf("wasmtime: define %s: linker is frozen after its first use", li.qualify(d.name))
	}
	if d.name == "" {
		return errors.New("wasmtime: define: empty name")
	}
	if !utf8.ValidString(d.name) {
		// wasmtime refuses it before taking the callback's handle, which
		// would then never be released.
		return fmt.Errorf("wasmtime: define %q: name is not valid UTF-8", d.name)
	}
	if li.names[d.name] {
		return fmt.Errorf("wasmtime: define %s: defined twice", li.qualify(d.name))
	}
	li.names[d.name] = true
	li.defs = append(li.defs, d)
	return nil
}

func (li *LinkerInstance) qualify(name string) string {
	if li.path == "" {
		return name
	}
	return li.path + "/" + name
}

// Path is the instance's qualified name ("" for the root).
func (li *LinkerInstance) Path() string { return li.path }

// Instance returns the nested instance name, creating it on first use (a
// WIT interface import such as "toolhost:agent/types@0.1.0").
func (li *LinkerInstance) Instance(name string) (*LinkerInstance, error) {
	l := li.linker
	l.mu.Lock()
	for _, d := range li.defs {
		if d.name == name && d.inner != nil {
			l.mu.Unlock()
			return d.inner, nil
		}
	}
	l.mu.Unlock()
	inner := &LinkerInstance{linker: l, path: li.qualify(name), names: map[string]bool{}}
	if err := l.define(li, linkerDef{name: name, inner: inner}); err != nil {
		return nil, err
	}
	return inner, nil
}

// AddFunc defines a host function.
func (li *LinkerInstance) AddFunc(name string, fn HostFunc) error {
	if fn == nil {
		return errors.New("wasmtime: AddFunc: nil function")
	}
	return li.linker.define(li, linkerDef{name: name, fn: &hostFunc{name: li.qualify(name), fn: fn}})
}

// AddResource defines a host resource type named name whose values carry
// ResourceHost.Type == typ. dtor (may be nil) runs when the guest drops an
// owned handle of it.
func (li *LinkerInstance) AddResource(name string, typ uint32, dtor ResourceDtor) error {
	return li.linker.define(li, linkerDef{name: name, res: &resourceDef{name: li.qualify(name), typ: typ, dtor: dtor}})
}

// AddWASIP2 defines the WASI p2 interfaces (wasi:cli, wasi:io, wasi:clocks,
// wasi:random, wasi:filesystem, wasi:sockets) backed by each store's
// WASIConfig.
func (l *Linker) AddWASIP2() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ptr == nil {
		return closedErr("add WASI: linker")
	}
	if l.frozen {
		return errors.New("wasmtime: add WASI: linker is frozen after its first use")
	}
	l.wasip2 = true
	return nil
}

// DefineUnknownImportsAsTraps defines every import of c not yet defined as a
// function that traps when called. It freezes the linker.
func (l *Linker) DefineUnknownImportsAsTraps(c *Component) error {
	if err := l.freeze(); err != nil {
		return err
	}
	cp, err := c.lock("define unknown imports")
	if err != nil {
		return err
	}
	defer c.unlock()
	l.mu.Lock() // exclusive: mutates the C linker
	defer l.mu.Unlock()
	if l.ptr == nil {
		return closedErr("define unknown imports: linker")
	}
	return plainError("define unknown imports as traps", C.wasmtime_component_linker_define_unknown_imports_as_traps(l.ptr, cp))
}

// freeze hands the collected definitions to wasmtime, once.
func (l *Linker) freeze() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ptr == nil {
		return closedErr("linker")
	}
	if l.frozen {
		return l.freezeE
	}
	l.frozen = true
	if l.wasip2 {
		if err := plainError("add WASI p2", C.wasmtime_component_linker_add_wasip2(l.ptr)); err != nil {
			l.freezeE = err
			return err
		}
	}
	root := C.wasmtime_component_linker_root(l.ptr)
	l.freezeE = l.root.apply(root)
	C.wasmtime_component_linker_instance_delete(root)
	return l.freezeE
}

func (li *LinkerInstance) apply(ci *C.wasmtime_component_linker_instance_t) error {
	for _, d := range li.defs {
		name := d.name
		cname := (*C.char)(unsafe.Pointer(unsafe.StringData(name)))
		clen := C.size_t(len(name))
		var cerr *C.wasmtime_error_t
		switch {
		case d.inner != nil:
			var sub *C.wasmtime_component_linker_instance_t
			cerr = C.wasmtime_component_linker_instance_add_instance(ci, cname, clen, &sub)
			if cerr == nil {
				err := d.inner.apply(sub)
				C.wasmtime_component_linker_instance_delete(sub)
				if err != nil {
					return err
				}
			}
		case d.fn != nil:
			cerr = C.th_add_func(ci, cname, clen, newHandle(d.fn))
		case d.res != nil:
			cerr = C.th_add_resource(ci, cname, clen, C.uint32_t(d.res.typ), newHandle(d.res))
		}
		if cerr != nil {
			return plainError("define "+li.qualify(name), cerr)
		}
	}
	return nil
}

// Instantiate instantiates c in s. An import the linker does not define
// fails here, with a message naming it.
func (l *Linker) Instantiate(s *Store, c *Component) (*Instance, error) {
	if err := l.freeze(); err != nil {
		return nil, err
	}
	if err := s.check("instantiate"); err != nil {
		return nil, err
	}
	cp, err := c.lock("instantiate")
	if err != nil {
		return nil, err
	}
	defer c.unlock()
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.ptr == nil {
		return nil, closedErr("instantiate: linker")
	}
	inst := &Instance{store: s}
	s.depth++
	cerr := C.wasmtime_component_linker_instantiate(l.ptr, s.ctx, cp, &inst.inst)
	s.depth--
	if cerr != nil {
		return nil, takeError(cerr, s.takeCause())
	}
	return inst, nil
}

// Close frees the linker; instances made with it stay valid. Idempotent.
func (l *Linker) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ptr != nil {
		C.wasmtime_component_linker_delete(l.ptr)
		l.ptr = nil
	}
	return nil
}
