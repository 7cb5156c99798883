package toolhost

import "sync"

// The calling convention shared by every import, on top of abi_wasip1.go.
//
// A guest is one wasm thread, but goroutines interleave at function calls:
// abiMu makes each import call and the lifting of its result one critical
// section, so that the one return area and the memory the host allocated
// during the call belong to a single call at a time. The host calls
// cabi_realloc only while an import call runs (abiMu held by that
// goroutine), so cabi_realloc itself takes no lock. abiMu also guards the
// closed flag of every handle.

var abiMu sync.Mutex

func lock()   { abiMu.Lock() }
func unlock() { abiMu.Unlock() }

// hostCall runs one import call that returns through the return area: do
// gets the area's address and calls the import; lift reads the result out
// of memory (copying every string); then what the host allocated for the
// result is released. A result that did not fit the reserved region is
// not lifted: its *TooLargeError is returned.
func hostCall(do func(ret uint32), lift func(m memory, ret uint32)) error {
	var tooLarge error
	hostCallOver(do, lift, func(_ memory, _ uint32, err *TooLargeError) { tooLarge = err })
	return tooLarge
}

// hostCallOver is hostCall with over called instead of lift for a result
// that did not fit (the return area is real; what it points at is real
// only where inReserve says so).
func hostCallOver(do func(ret uint32), lift func(m memory, ret uint32), over func(m memory, ret uint32, err *TooLargeError)) {
	lock()
	defer unlock()
	ret := beginImport()
	do(ret)
	err := endImport()
	if err != nil {
		over(linearMemory, ret, err)
	} else {
		lift(linearMemory, ret)
	}
	safePoint()
}

// ReserveSize is the initial size of the region an import call's result is
// lowered into.
const ReserveSize = 8 << 20

// Reserve makes the region an import call's result is lowered into hold
// at least n bytes. What counts is all the strings and lists of one
// result together, each aligned: ListTools' names, descriptions and
// schemas; a tool-result's arguments and its MCP result (for an echo
// tool the arguments a second time); an envelope's id and its event's
// strings; a chat response's text, tool calls and model. The region starts
// at ReserveSize (8 MiB) and doubles after a call that used more than half
// of it and fitted. A result that does not fit is dropped and the call returns a
// *TooLargeError (errors.Is(err, ErrTooLarge)) whose Size is the n to
// reserve before calling again; Recv and TryRecv return such an envelope
// as an ErrorEvent under its id. Only a result beyond what linear memory
// can grow to traps (it takes memory the size of its largest string or
// list while the host writes it).
func Reserve(n int) {
	lock()
	defer unlock()
	if n > 0 && uint64(n) > uint64(reserve.size-reserveFloor) {
		newReserve(uint32(min(uint64(n)+7, 1<<32-8)) &^ 7)
	}
}
