package wasmtime

// #include <stdlib.h>
// #include "capi.h"
import "C"

import (
	"errors"
	"sync"
	"unsafe"
)

// Component is a compiled component; it is safe for concurrent use.
type Component struct {
	mu     sync.RWMutex
	ptr    *C.wasmtime_component_t
	engine *Engine
}

// NewComponent compiles a component from its binary or text (WAT) form.
func NewComponent(e *Engine, wasmOrWAT []byte) (*Component, error) {
	if len(wasmOrWAT) == 0 {
		return nil, errors.New("wasmtime: compile component: empty input")
	}
	eng, err := e.lock("compile component")
	if err != nil {
		return nil, err
	}
	defer e.unlock()
	var out *C.wasmtime_component_t
	cerr := C.wasmtime_component_new(eng, (*C.uint8_t)(unsafe.Pointer(&wasmOrWAT[0])), C.size_t(len(wasmOrWAT)), &out)
	if cerr != nil {
		return nil, plainError("compile component", cerr)
	}
	return &Component{ptr: out, engine: e}, nil
}

// WAT2Wasm translates the text format (of a component or a core module)
// into its binary form; a syntax error comes back with its line and
// column.
func WAT2Wasm(text []byte) ([]byte, error) {
	if len(text) == 0 {
		return nil, errors.New("wasmtime: wat: empty input")
	}
	var out C.wasm_byte_vec_t
	cerr := C.wasmtime_wat2wasm((*C.char)(unsafe.Pointer(&text[0])), C.size_t(len(text)), &out)
	if cerr != nil {
		return nil, plainError("wat", cerr)
	}
	defer C.wasm_byte_vec_delete(&out)
	return C.GoBytes(unsafe.Pointer(out.data), C.int(out.size)), nil
}

// DeserializeComponent loads a component produced by Serialize with an
// engine of the same configuration. The bytes are trusted: wasmtime checks
// its header and version, not the machine code.
func DeserializeComponent(e *Engine, serialized []byte) (*Component, error) {
	if len(serialized) == 0 {
		return nil, errors.New("wasmtime: deserialize component: empty input")
	}
	eng, err := e.lock("deserialize component")
	if err != nil {
		return nil, err
	}
	defer e.unlock()
	var out *C.wasmtime_component_t
	cerr := C.wasmtime_component_deserialize(eng, (*C.uint8_t)(unsafe.Pointer(&serialized[0])), C.size_t(len(serialized)), &out)
	if cerr != nil {
		return nil, plainError("deserialize component", cerr)
	}
	return &Component{ptr: out, engine: e}, nil
}

// DeserializeComponentFile is DeserializeComponent reading (mapping) a file.
func DeserializeComponentFile(e *Engine, path string) (*Component, error) {
	eng, err := e.lock("deserialize component")
	if err != nil {
		return nil, err
	}
	defer e.unlock()
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var out *C.wasmtime_component_t
	if cerr := C.wasmtime_component_deserialize_file(eng, cpath, &out); cerr != nil {
		return nil, plainError("deserialize component "+path, cerr)
	}
	return &Component{ptr: out, engine: e}, nil
}

func (c *Component) lock(what string) (*C.wasmtime_component_t, error) {
	c.mu.RLock()
	if c.ptr == nil {
		c.mu.RUnlock()
		return nil, closedErr(what + ": component")
	}
	return c.ptr, nil
}

func (c *Component) unlock() { c.mu.RUnlock() }

// Serialize returns the compiled form, loadable by DeserializeComponent.
func (c *Component) Serialize() ([]byte, error) {
	p, err := c.lock("serialize")
	if err != nil {
		return nil, err
	}
	defer c.unlock()
	var out C.wasm_byte_vec_t
	if cerr := C.wasmtime_component_serialize(p, &out); cerr != nil {
		return nil, plainError("serialize component", cerr)
	}
	b := C.GoBytes(unsafe.Pointer(out.data), C.int(out.size))
	C.wasm_byte_vec_delete(&out)
	return b, nil
}

// Close releases the component; instances made from it stay valid.
// Idempotent.
func (c *Component) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ptr != nil {
		C.wasmtime_component_delete(c.ptr)
		c.ptr = nil
	}
	return nil
}

// Imports lists the component's imports.
func (c *Component) Imports() ([]Item, error) { return c.items(true) }

// Exports lists the component's exports.
func (c *Component) Exports() ([]Item, error) { return c.items(false) }

func (c *Component) items(imports bool) ([]Item, error) {
	p, err := c.lock("component types")
	if err != nil {
		return nil, err
	}
	defer c.unlock()
	eng, err := c.engine.lock("component types")
	if err != nil {
		return nil, err
	}
	defer c.engine.unlock()
	ty := C.wasmtime_component_type(p)
	defer C.wasmtime_component_type_delete(ty)
	var n C.size_t
	if imports {
		n = C.wasmtime_component_type_import_count(ty, eng)
	} else {
		n = C.wasmtime_component_type_export_count(ty, eng)
	}
	items := make([]Item, 0, int(n))
	for i := C.size_t(0); i < n; i++ {
		var name *C.char
		var nameLen C.size_t
		var ib alignedItem
		item := &ib.v
		var ok C.bool
		if imports {
			ok = C.wasmtime_component_type_import_nth(ty, eng, i, &name, &nameLen, item)
		} else {
			ok = C.wasmtime_component_type_export_nth(ty, eng, i, &name, &nameLen, item)
		}
		if !ok {
			break
		}
		it := convertItem(eng, C.GoStringN(name, C.int(nameLen)), item)
		C.wasmtime_component_item_delete(item)
		items = append(items, it)
	}
	return items, nil
}
