//go:build wasip1

package toolhost

import (
	"unsafe"
)

// The core-wasm side of the world for GOOS=wasip1 GOARCH=wasm, as
// wit-component expects it of a module it turns into a component:
//
//   - each WIT import function is a core import from the module named by
//     its interface (toolhost:agent/tooling@0.1.0, ...), with the function
//     named as in WIT ([method]tooling.kind, [resource-drop]tooling, get);
//   - parameters are flattened: a string is (ptr, len); an option<u32> is
//     (discriminant, value); a resource handle an i32;
//   - a result that flattens to more than one value is written by the host
//     to a return area whose address is the last parameter; a bool or a
//     u32 comes back as the i32 result;
//   - strings and lists the host returns are allocated in guest memory with
//     the exported cabi_realloc, and the guest owns them;
//   - the export run(ptr, len) -> ptr returns the address of its own return
//     area (result<string, string>), which the host reads before calling
//     cabi_post_run.
//
// Go pointers are 8 bytes on GOARCH=wasm, the canonical ABI's are 4: every
// address crosses as a uint32 and every layout is read and written by
// offset (layout.go), never through a Go struct.

//go:wasmimport toolhost:agent/tooling@0.1.0 get
func rawGet(name, nameLen, ret uint32)

//go:wasmimport toolhost:agent/tooling@0.1.0 [resource-drop]tooling
func rawDrop(self uint32)

//go:wasmimport toolhost:agent/tooling@0.1.0 [method]tooling.kind
func rawKind(self, ret uint32)

//go:wasmimport toolhost:agent/tooling@0.1.0 [method]tooling.name
func rawName(self, ret uint32)

//go:wasmimport toolhost:agent/tooling@0.1.0 [method]tooling.list-tools
func rawListTools(self, ret uint32)

//go:wasmimport toolhost:agent/tooling@0.1.0 [method]tooling.call-tool
func rawCallTool(self, name, nameLen, args, argsLen, ret uint32)

//go:wasmimport toolhost:agent/tooling@0.1.0 [method]tooling.is-open
func rawIsOpen(self, id, idLen uint32) uint32

//go:wasmimport toolhost:agent/tooling@0.1.0 [method]tooling.cancel
func rawCancel(self, id, idLen uint32) uint32

//go:wasmimport toolhost:agent/tooling@0.1.0 [method]tooling.call-tool-blocking
func rawCallToolBlocking(self, name, nameLen, args, argsLen, ret uint32)

//go:wasmimport toolhost:agent/tooling@0.1.0 [method]tooling.list-resources
func rawListResources(self, ret uint32)

//go:wasmimport toolhost:agent/tooling@0.1.0 [method]tooling.read-resource
func rawReadResource(self, uri, uriLen, ret uint32)

//go:wasmimport toolhost:agent/tooling@0.1.0 [method]tooling.subscribe-resource-list
func rawSubscribeResourceList(self, ret uint32)

//go:wasmimport toolhost:agent/tooling@0.1.0 [method]tooling.unsubscribe-resource-list
func rawUnsubscribeResourceList(self, id, idLen uint32) uint32

//go:wasmimport toolhost:agent/tooling@0.1.0 [method]tooling.subscribe-resource
func rawSubscribeResource(self, uri, uriLen, ret uint32)

//go:wasmimport toolhost:agent/tooling@0.1.0 [method]tooling.unsubscribe-resource
func rawUnsubscribeResource(self, id, idLen uint32) uint32

//go:wasmimport toolhost:agent/inbox@0.1.0 recv
func rawRecv(isSome, timeoutMS, ret uint32)

//go:wasmimport toolhost:agent/inbox@0.1.0 try-recv
func rawTryRecv(ret uint32)

//go:wasmimport toolhost:agent/inbox@0.1.0 pending
func rawPending() uint32

//go:wasmimport toolhost:agent/log@0.1.0 write
func rawLogWrite(level, msg, msgLen uint32)

// linear is the module's linear memory.
type linear struct{}

var linearMemory memory = linear{}

func (linear) load(addr, n uint32) []byte {
	if n == 0 {
		return nil
	}
	// An address is an offset from 0 in linear memory; the block it names
	// is kept alive by whoever handed it out (the caller, retArea,
	// callAllocs, the arena).
	return unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(nil), uintptr(addr))), n)
}

func addrOf(p unsafe.Pointer) uint32 { return uint32(uintptr(p)) }

// stringArg lowers a string parameter: its bytes are passed in place. The
// host reads parameters before it can call back into the guest, so the
// bytes need to stay put only for the call itself (the caller keeps s
// alive across it).
func stringArg(s string) (ptr, n uint32) {
	return addrOf(unsafe.Pointer(unsafe.StringData(s))), uint32(len(s))
}

// The return area of import calls (the largest is option<envelope>),
// guarded by abiMu. It is a global, not a local: a local may live on the
// goroutine stack, which can move when cabi_realloc runs Go code during
// the call.
var retArea [(sizeLargestReturnArea + 7) / 8]uint64

// Memory handed out by cabi_realloc.
//
// cabi_realloc runs while the host lowers a value into guest memory: an
// import call's result, or run's input. The component model forbids
// leaving the instance then ("cannot leave component instance"), and the
// Go allocator may call WASI (clock_time_get) when it needs a new span, so
// cabi_realloc never allocates on the Go heap. It bump-allocates from two
// regions instead:
//
//   - arena, a static array, for the blocks that live forever: the WASI
//     preview1 adapter's state (allocated from inside _initialize, before
//     the Go runtime and heap exist: two 64 KiB blocks when this was
//     written) and run's input;
//   - reserve, a Go allocation made at init and at safe points (after an
//     import call's result is lifted, before run's handler), for the
//     strings and lists of an import call's result: they are copied out
//     by lifting, so the whole region is reused by the next call. After a
//     call that used more than half of it, it is replaced by one twice as
//     large. A permanent block that does not fit the arena is taken from
//     the reserve below its floor, and the reserve is replaced at the next
//     safe point.
//
// A block that fits neither makes cabi_realloc return an address past the
// end of memory, which the host refuses with a trap (rather than writing
// anywhere). The untouched pages of the reserve cost the host no memory.
var (
	inImport  bool
	arena     [256 << 10 / 8]uint64
	arenaUsed uint32

	reserve      []uint64
	reserveUsed  uint32 // bytes handed out, including the floor
	reserveFloor uint32 // bytes handed out forever
	keptReserves [][]uint64
	zeroBlock    uint64
)

// badAddress is past the end of any 32-bit linear memory that could hold
// the block asked for: the host traps on it.
const badAddress = 0xFFFF_FFF8

func init() { newReserve(ReserveSize) }

// Reserve makes the region an import call's result is lowered into hold
// at least n bytes, for a call whose result (all its strings and lists
// together, e.g. a tool's arguments and its value) may be larger than
// ReserveSize: a result that does not fit traps ("realloc return: beyond
// end of memory"). The region also doubles by itself after a result that
// filled more than half of it.
func Reserve(n int) {
	lock()
	defer unlock()
	if n > 0 && uint64(n) > uint64(len(reserve))*8 {
		newReserve(uint32(min(uint64(n)+7, 1<<32-8)) &^ 7)
	}
}

func newReserve(size uint32) {
	if reserveFloor > 0 {
		keptReserves = append(keptReserves, reserve)
	}
	reserve = make([]uint64, size/8)
	reserveUsed, reserveFloor = 0, 0
}

func beginImport() uint32 {
	inImport = true
	return addrOf(unsafe.Pointer(&retArea))
}

func endImport() {
	inImport = false
	safePoint()
}

// safePoint releases an import call's blocks and grows or replaces the
// reserve when needed; it runs where the Go heap may be used.
func safePoint() {
	size := uint32(len(reserve)) * 8
	peak := reserveUsed - reserveFloor
	reserveUsed = reserveFloor
	switch {
	case peak > size/2:
		newReserve(2 * size)
	case reserveFloor > size/2:
		newReserve(size)
	}
}

// cabiRealloc is the canonical ABI's realloc: a block of newSize bytes
// aligned to align (at most 8 in this world), holding the first
// min(oldSize, newSize) bytes of the block at oldPtr if oldPtr is not 0.
//
//go:wasmexport cabi_realloc
func cabiRealloc(oldPtr, oldSize, align, newSize uint32) uint32 {
	if newSize == 0 {
		return addrOf(unsafe.Pointer(&zeroBlock))
	}
	var p uint32
	if !inImport {
		p = bump(addrOf(unsafe.Pointer(&arena)), uint32(len(arena))*8, &arenaUsed, align, newSize)
	}
	if p == 0 && reserve != nil {
		p = bump(addrOf(unsafe.Pointer(&reserve[0])), uint32(len(reserve))*8, &reserveUsed, align, newSize)
		if p != 0 && !inImport {
			reserveFloor = reserveUsed
		}
	}
	if p == 0 {
		return badAddress
	}
	if oldPtr != 0 && oldSize > 0 {
		n := min(oldSize, newSize)
		copy(linear{}.load(p, n), linear{}.load(oldPtr, n))
	}
	return p
}

// The run export's return area and the output it points at, kept until
// cabi_post_run.
var (
	runRet [(sizeRunResult + 7) / 8]uint64
	runOut string
)

//go:wasmexport run
func exportRun(ptr, n uint32) uint32 {
	input := string(linear{}.load(ptr, n))
	safePoint()
	out, failed := runHandler(input)
	runOut = out
	area := linear{}.load(addrOf(unsafe.Pointer(&runRet)), sizeRunResult)
	area[offRunResultDisc] = 0
	if failed {
		area[offRunResultDisc] = 1
	}
	p, l := stringArg(runOut)
	putU32(area[offRunResultVal+offPtr:], p)
	putU32(area[offRunResultVal+offLen:], l)
	return addrOf(unsafe.Pointer(&runRet))
}

//go:wasmexport cabi_post_run
func exportPostRun(uint32) { runOut = "" }
