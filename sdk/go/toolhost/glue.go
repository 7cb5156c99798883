package toolhost

import "sync"

// The calling convention shared by every import, on top of abi_wasip1.go.
//
// A guest is one wasm thread, but goroutines interleave at function calls:
// abiMu makes each import call and the lifting of its result one critical
// section, so that the one return area and the list of memory the host
// allocated during the call belong to a single call at a time. The host
// calls cabi_realloc only while an import call runs (abiMu held by that
// goroutine), so cabi_realloc itself takes no lock.

var abiMu sync.Mutex

func lock()   { abiMu.Lock() }
func unlock() { abiMu.Unlock() }

// hostCall runs one import call that returns through the return area: do
// gets the area's address and calls the import; lift reads the result out
// of memory (copying every string); then what the host allocated for the
// result is released.
func hostCall(do func(ret uint32), lift func(m memory, ret uint32)) {
	lock()
	defer unlock()
	ret := beginImport()
	defer endImport()
	do(ret)
	lift(linearMemory, ret)
}

// bump takes size bytes aligned to align from the region [base,
// base+limit) of which *used bytes are taken; 0 when it does not fit. It
// allocates nothing.
func bump(base, limit uint32, used *uint32, align, size uint32) uint32 {
	if align == 0 {
		align = 1
	}
	off := (*used + align - 1) &^ (align - 1)
	if off > limit || size > limit-off {
		return 0
	}
	*used = off + size
	return base + off
}

// ReserveSize is the initial size of the region an import call's result is
// lowered into; the region doubles after a call that used more than half
// of it, and Reserve enlarges it ahead of a large result. A single result
// larger than the region traps.
const ReserveSize = 8 << 20
