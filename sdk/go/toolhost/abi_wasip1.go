//go:build wasip1

package toolhost

import (
	"encoding/binary"
	"unsafe"
)

// The core-wasm side of the world for GOOS=wasip1 GOARCH=wasm, as
// wit-component expects it of a module it turns into a component:
//
//   - each WIT import function is a core import from the module named by
//     its interface (toolhost:agent/tooling@0.3.0, ...), with the function
//     named as in WIT ([method]tooling.kind, [resource-drop]tooling, get);
//   - parameters are flattened: a string is (ptr, len); an option<u32> is
//     (discriminant, value); a resource handle an i32; parameters that
//     flatten to more than 16 values (chat's self and chat-request) are
//     passed as the address of their tuple in memory (lower.go);
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

//go:wasmimport toolhost:agent/tooling@0.3.0 get
func rawGet(name, nameLen, ret uint32)

//go:wasmimport toolhost:agent/tooling@0.3.0 [resource-drop]tooling
func rawDrop(self uint32)

//go:wasmimport toolhost:agent/tooling@0.3.0 [method]tooling.kind
func rawKind(self, ret uint32)

//go:wasmimport toolhost:agent/tooling@0.3.0 [method]tooling.name
func rawName(self, ret uint32)

//go:wasmimport toolhost:agent/tooling@0.3.0 [method]tooling.list-tools
func rawListTools(self, ret uint32)

//go:wasmimport toolhost:agent/tooling@0.3.0 [method]tooling.call-tool
func rawCallTool(self, name, nameLen, args, argsLen, ret uint32)

//go:wasmimport toolhost:agent/tooling@0.3.0 [method]tooling.is-open
func rawIsOpen(self, id, idLen uint32) uint32

//go:wasmimport toolhost:agent/tooling@0.3.0 [method]tooling.cancel
func rawCancel(self, id, idLen uint32) uint32

//go:wasmimport toolhost:agent/tooling@0.3.0 [method]tooling.call-tool-blocking
func rawCallToolBlocking(self, name, nameLen, args, argsLen, ret uint32)

//go:wasmimport toolhost:agent/tooling@0.3.0 [method]tooling.list-resources
func rawListResources(self, ret uint32)

//go:wasmimport toolhost:agent/tooling@0.3.0 [method]tooling.read-resource
func rawReadResource(self, uri, uriLen, ret uint32)

//go:wasmimport toolhost:agent/tooling@0.3.0 [method]tooling.subscribe-resource-list
func rawSubscribeResourceList(self, ret uint32)

//go:wasmimport toolhost:agent/tooling@0.3.0 [method]tooling.unsubscribe-resource-list
func rawUnsubscribeResourceList(self, id, idLen uint32) uint32

//go:wasmimport toolhost:agent/tooling@0.3.0 [method]tooling.subscribe-resource
func rawSubscribeResource(self, uri, uriLen, ret uint32)

//go:wasmimport toolhost:agent/tooling@0.3.0 [method]tooling.unsubscribe-resource
func rawUnsubscribeResource(self, id, idLen uint32) uint32

//go:wasmimport toolhost:agent/provider@0.3.0 get
func rawProviderGet(name, nameLen, ret uint32)

//go:wasmimport toolhost:agent/provider@0.3.0 [resource-drop]provider
func rawProviderDrop(self uint32)

//go:wasmimport toolhost:agent/provider@0.3.0 [method]provider.kind
func rawProviderKind(self, ret uint32)

//go:wasmimport toolhost:agent/provider@0.3.0 [method]provider.name
func rawProviderName(self, ret uint32)

//go:wasmimport toolhost:agent/provider@0.3.0 [method]provider.chat
func rawChat(params, ret uint32)

//go:wasmimport toolhost:agent/provider@0.3.0 [method]provider.chat-stream
func rawChatStream(params, ret uint32)

//go:wasmimport toolhost:agent/provider@0.3.0 [method]provider.is-open
func rawProviderIsOpen(self, id, idLen uint32) uint32

//go:wasmimport toolhost:agent/provider@0.3.0 [method]provider.cancel
func rawProviderCancel(self, id, idLen uint32) uint32

//go:wasmimport toolhost:agent/messages@0.3.0 reply-delta
func rawReplyDelta(id, idLen, text, textLen, ret uint32)

//go:wasmimport toolhost:agent/messages@0.3.0 reply
func rawReply(id, idLen, content, contentLen, ret uint32)

//go:wasmimport toolhost:agent/messages@0.3.0 reply-error
func rawReplyError(id, idLen, msg, msgLen, ret uint32)

//go:wasmimport toolhost:agent/messages@0.3.0 send
func rawSend(to, toLen, content, contentLen, isSome, session, sessionLen, ret uint32)

//go:wasmimport toolhost:agent/messages@0.3.0 is-open
func rawMessageIsOpen(id, idLen uint32) uint32

//go:wasmimport toolhost:agent/messages@0.3.0 cancel
func rawMessageCancel(id, idLen uint32) uint32

//go:wasmimport toolhost:agent/inbox@0.3.0 recv
func rawRecv(isSome, timeoutMS, ret uint32)

//go:wasmimport toolhost:agent/inbox@0.3.0 try-recv
func rawTryRecv(ret uint32)

//go:wasmimport toolhost:agent/inbox@0.3.0 pending
func rawPending() uint32

//go:wasmimport toolhost:agent/log@0.3.0 write
func rawLogWrite(level, msg, msgLen uint32)

// linear is the module's linear memory.
type linear struct{}

var linearMemory memory = linear{}

func (linear) load(addr, n uint32) []byte {
	if n == 0 {
		return nil
	}
	// An address is an offset from 0 in linear memory; the block it names
	// is kept alive by whoever handed it out (the caller, retArea, the
	// reserve, the arena, the sink).
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

// placeParams copies a lowered parameter block into a Go allocation
// (heap memory does not move) and returns its address; the caller keeps
// the returned slice alive across the call.
func placeParams(l *lowerer) (uint32, []uint64) {
	mem := make([]uint64, (len(l.buf)+7)/8)
	b := unsafe.Slice((*byte)(unsafe.Pointer(&mem[0])), len(mem)*8)
	base := addrOf(unsafe.Pointer(&mem[0]))
	l.place(b, base)
	return base, mem
}

// The return area of import calls (the largest is option<envelope>),
// guarded by abiMu. It is a global, not a local: a local may live on the
// goroutine stack, which can move when cabi_realloc runs Go code during
// the call.
var retArea [(sizeLargestReturnArea + 7) / 8]uint64

// The regions of alloc.go: the arena is a static array, the reserve a Go
// allocation, the sink pages grown at the end of linear memory.
var (
	arenaMem     [256 << 10 / 8]uint64
	reserveMem   []uint64
	keptReserves [][]uint64
	zeroBlock    uint64

	sinkBase, sinkEnd uint32 // the sink's pages
	sinkDirty         uint32 // bytes of it written during this call
)

func init() {
	newReserve(ReserveSize)
	sinkBlock = sink
}

// newReserve replaces the reserve by one of size bytes. A reserve holding
// permanent blocks (below its floor) is kept alive.
func newReserve(size uint32) {
	if reserveFloor > 0 {
		keptReserves = append(keptReserves, reserveMem)
	}
	reserveMem = make([]uint64, size/8)
	reserve = region{base: addrOf(unsafe.Pointer(&reserveMem[0])), size: size}
	reserveFloor = 0
}

const pageSize = 64 << 10

// growMemory is memory.grow (abi_wasip1.s): the old size in pages, or -1.
func growMemory(pages int32) int32

// currentMemory is memory.size in pages (abi_wasip1.s).
func currentMemory() int32

// sink returns the sink's address for a block of size bytes, growing
// linear memory when the sink is too small; 0 when memory cannot grow.
//
// The sink's pages are beyond the end of memory as the Go runtime last
// grew it. Its allocator (runtime/mem_wasm.go sbrk) takes memory from its
// own end upwards and grows it by what it lacks, so after the runtime
// grows memory again, the sink's pages may become heap, which the runtime
// expects to be zero: the sink is zeroed at the end of every call that
// wrote it (before any Go code runs), and reused only while memory has
// not grown since.
func sink(size uint32) uint32 {
	end := uint32(currentMemory()) * pageSize
	if sinkEnd != end || sinkEnd-sinkBase < size {
		if sinkEnd != end {
			sinkBase = end
		}
		pages := (uint64(sinkBase) + uint64(size) - uint64(end) + pageSize - 1) / pageSize
		if pages > 1<<16 || growMemory(int32(pages)) < 0 {
			return 0
		}
		sinkEnd = end + uint32(pages)*pageSize
	}
	sinkDirty = max(sinkDirty, size)
	return sinkBase
}

func beginImport() uint32 {
	startImport()
	return addrOf(unsafe.Pointer(&retArea))
}

// endImport ends the call before its result is lifted: the sink is zeroed,
// and the error of a result that overflowed returned.
func endImport() *TooLargeError {
	if sinkDirty > 0 {
		clear(linear{}.load(sinkBase, sinkDirty))
		sinkDirty = 0
	}
	return stopImport()
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
	if arena.base == 0 {
		// The first call comes from inside _initialize, before this
		// package's init.
		arena = region{base: addrOf(unsafe.Pointer(&arenaMem)), size: uint32(len(arenaMem)) * 8}
	}
	p := allocate(align, newSize)
	if p != badAddress && oldPtr != 0 && oldSize > 0 {
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
	binary.LittleEndian.PutUint32(area[offRunResultVal+offPtr:], p)
	binary.LittleEndian.PutUint32(area[offRunResultVal+offLen:], l)
	return addrOf(unsafe.Pointer(&runRet))
}

//go:wasmexport cabi_post_run
func exportPostRun(uint32) { runOut = "" }
