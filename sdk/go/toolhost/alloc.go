package toolhost

// Memory handed out by cabi_realloc (abi_wasip1.go exports it; the
// choices are here, so that they are tested natively).
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
//     large (not after a call that overflowed: its error tells the agent
//     what to Reserve). A permanent block that does not fit the arena is taken from
//     the reserve below its floor, and the reserve is replaced at the next
//     safe point.
//
// During an import call, the first block that does not fit the reserve
// marks the call overflowed: that block and every later one of the call
// go to the sink (abi_wasip1.go: fresh pages at the end of linear memory,
// outside the Go heap, all blocks at its start), whose content is never
// read and is zeroed when the call returns, and the call's result is
// dropped for a *TooLargeError. need counts what the call's blocks would
// have taken, so that Reserve(need) makes the same result fit. A block
// outside an import call that fits neither region, or an overflowing one
// when memory cannot grow, makes cabi_realloc return an address past the
// end of memory, which the host refuses with a trap (rather than writing
// anywhere).

// region is [base, base+size) of which the first used bytes are taken.
type region struct{ base, size, used uint32 }

func (r *region) take(align, size uint32) uint32 { return bump(r.base, r.size, &r.used, align, size) }

func (r *region) contains(ptr, n uint32) bool {
	return r.size > 0 && ptr >= r.base && uint64(ptr)+uint64(n) <= uint64(r.base)+uint64(r.size)
}

var (
	inImport     bool
	arena        region // set by the platform
	reserve      region // set by newReserve
	reserveFloor uint32 // bytes of reserve handed out forever
	overflowed   bool   // the current import call's result did not fit
	need         uint64 // bytes the current import call's blocks take, aligned from 0

	// sinkBlock returns the address of a block of size bytes whose
	// content is discarded, or 0 when there is none (the platform sets it).
	sinkBlock func(size uint32) uint32
)

// badAddress is past the end of any 32-bit linear memory that could hold
// the block asked for: the host traps on it.
const badAddress = 0xFFFF_FFF8

// allocate is cabi_realloc's choice of a block of size bytes aligned to
// align; size is not 0.
func allocate(align, size uint32) uint32 {
	if !inImport {
		if p := arena.take(align, size); p != 0 {
			return p
		}
		if p := reserve.take(align, size); p != 0 {
			reserveFloor = reserve.used
			return p
		}
		return badAddress
	}
	need = (need+uint64(max(align, 1))-1)&^(uint64(max(align, 1))-1) + uint64(size)
	if !overflowed {
		if p := reserve.take(align, size); p != 0 {
			return p
		}
		overflowed = true
	}
	if sinkBlock != nil {
		if p := sinkBlock(size); p != 0 {
			return p
		}
	}
	return badAddress
}

// startImport begins an import call's accounting.
func startImport() {
	inImport, overflowed, need = true, false, 0
}

// stopImport ends it: the error of a result that overflowed, or nil. It
// runs before anything of the result is lifted; the platform zeroes the
// sink before it.
func stopImport() *TooLargeError {
	inImport = false
	if !overflowed {
		return nil
	}
	return &TooLargeError{Size: need, Reserved: uint64(reserve.size - reserveFloor)}
}

// inReserve reports whether the block [ptr, ptr+n) the host wrote lies in
// the reserve (so it is not in the sink: its content is real).
func inReserve(ptr, n uint32) bool { return reserve.contains(ptr, n) }

// safePoint releases an import call's blocks and grows or replaces the
// reserve when needed; it runs where the Go heap may be used.
func safePoint() {
	peak := reserve.used - reserveFloor
	reserve.used = reserveFloor
	switch {
	case peak > reserve.size/2 && !overflowed:
		newReserve(2 * reserve.size)
	case reserveFloor > reserve.size/2:
		newReserve(reserve.size)
	}
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
