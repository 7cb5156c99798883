package wasmtime

import (
	"sync"
	"sync/atomic"
)

// Callbacks from C find their Go objects (store, host function, resource
// type, WASI writer) by an index into this table, never by a Go pointer. It
// plays the role of runtime/cgo.Handle, with lock-free lookups: a host call
// does two of them.

const handleChunk = 256

type handleTable struct {
	mu     sync.Mutex
	chunks atomic.Pointer[[]*[handleChunk]atomic.Value]
	free   []uintptr
	next   uintptr // index 0 is never used
	live   atomic.Int64
}

var handles = newHandleTable()

func newHandleTable() *handleTable {
	t := &handleTable{next: 1}
	t.chunks.Store(&[]*[handleChunk]atomic.Value{})
	return t
}

type handleBox struct{ v any }

// add stores v and returns its index (never 0).
func (t *handleTable) add(v any) uintptr {
	t.mu.Lock()
	defer t.mu.Unlock()
	var i uintptr
	if n := len(t.free); n > 0 {
		i = t.free[n-1]
		t.free = t.free[:n-1]
	} else {
		i = t.next
		t.next++
		chunks := *t.chunks.Load()
		if int(i/handleChunk) >= len(chunks) {
			grown := append(append([]*[handleChunk]atomic.Value(nil), chunks...), new([handleChunk]atomic.Value))
			t.chunks.Store(&grown)
		}
	}
	(*t.chunks.Load())[i/handleChunk][i%handleChunk].Store(handleBox{v})
	t.live.Add(1)
	return i
}

// get returns the value at i; it panics for an index not in use.
func (t *handleTable) get(i uintptr) any {
	v := (*t.chunks.Load())[i/handleChunk][i%handleChunk].Load().(handleBox).v
	if v == nil {
		panic("wasmtime: callback with a released handle")
	}
	return v
}

// remove releases i.
func (t *handleTable) remove(i uintptr) {
	t.mu.Lock()
	defer t.mu.Unlock()
	(*t.chunks.Load())[i/handleChunk][i%handleChunk].Store(handleBox{})
	t.free = append(t.free, i)
	t.live.Add(-1)
}
